"""What every logged-in request reads — its session, its user, the user's roles — by plain statements
(editlab/sessions.py, LimitedModelBackend.get_user, annotations.roles): the same answers as Django's ORM."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.sessions.models import Session
from django.utils import timezone

from annotations.roles import ADMIN, ANNOTATOR, RESEARCHER, can_read_all, is_annotator, is_researcher
from editlab.logins.backends import LimitedModelBackend
from editlab.sessions import SessionStore

pytestmark = pytest.mark.django_db


def test_a_session_reads_back_what_was_saved_and_nothing_once_expired(django_assert_num_queries):
    saved = SessionStore()
    saved["_auth_user_id"] = "7"
    saved["note"] = "é 😀"
    saved.create()
    with django_assert_num_queries(1):
        loaded = SessionStore(saved.session_key)
        assert dict(loaded.items()) == {"_auth_user_id": "7", "note": "é 😀"}
    Session.objects.filter(session_key=saved.session_key).update(expire_date=timezone.now() - timedelta(seconds=1))
    expired = SessionStore(saved.session_key)
    assert dict(expired.items()) == {}
    assert expired.session_key is None  # a fresh session is made, never the stale key reused
    assert dict(SessionStore("x" * 32).items()) == {}


def test_the_session_engine_is_in_use(client, annotator):
    client.force_login(annotator)
    assert isinstance(client.session, SessionStore)


def test_the_user_read_by_hand_equals_the_orms(annotator, django_assert_num_queries):
    annotator.last_login = timezone.now()
    annotator.first_name = "Ann ☃"
    annotator.save()
    backend = LimitedModelBackend()
    with django_assert_num_queries(1):
        user = backend.get_user(str(annotator.pk))
    expected = get_user_model().objects.get(pk=annotator.pk)
    fields = [field.attname for field in get_user_model()._meta.concrete_fields]
    assert {name: getattr(user, name) for name in fields} == {name: getattr(expected, name) for name in fields}
    assert user.last_login.tzinfo is not None and user.is_active is True
    assert user._state.db == "default" and not user._state.adding


def test_the_users_roles_come_with_the_user_in_the_same_statement(
    annotator, researcher, admin_user, django_assert_num_queries
):
    Group.objects.get(name=ANNOTATOR).user_set.add(researcher)  # two groups: two joined rows, one user
    nobody = get_user_model().objects.create_user("nobody", password="x")  # no group: a NULL name
    named = {"annotator": annotator, "researcher": researcher, "admin": admin_user, "nobody": nobody}
    backend = LimitedModelBackend()
    with django_assert_num_queries(4):  # one statement per user, none for the roles
        users = {name: backend.get_user(user.pk) for name, user in named.items()}
        roles = {name: (is_annotator(user), is_researcher(user), can_read_all(user)) for name, user in users.items()}
    assert roles == {
        "annotator": (True, False, False),
        "researcher": (True, True, True),
        "admin": (False, False, True),
        "nobody": (False, False, False),
    }
    assert {name: user.pk for name, user in users.items()} == {name: user.pk for name, user in named.items()}


def test_a_request_reads_its_session_and_its_user_with_roles_in_two_statements(
    client, annotator, django_assert_num_queries
):
    client.force_login(annotator)
    # The session; the user with its groups; the ownership check of a post-edit that does not exist.
    with django_assert_num_queries(3):
        response = client.post("/api/post-edits/999999/events/", {}, content_type="application/json")
    assert response.status_code == 404, response.content


@pytest.mark.parametrize("user_id", ["999999", "not a number", "", None, str(2**70), "-3"])
def test_no_user_for_an_id_that_names_none(annotator, user_id):
    assert LimitedModelBackend().get_user(user_id) is None


def test_an_inactive_user_is_not_logged_in(annotator):
    annotator.is_active = False
    annotator.save()
    assert LimitedModelBackend().get_user(annotator.pk) is None


def test_roles_read_by_hand_and_from_a_prefetch(annotator, researcher, django_assert_num_queries):
    with django_assert_num_queries(1):
        user = get_user_model().objects.get(pk=researcher.pk)
    with django_assert_num_queries(1):
        assert (is_researcher(user), can_read_all(user), is_annotator(user)) == (True, True, False)
    Group.objects.get(name=ANNOTATOR).user_set.add(researcher)
    listed = get_user_model().objects.filter(pk__in=[annotator.pk, researcher.pk]).prefetch_related("groups")
    with django_assert_num_queries(2):
        roles = {user.username: (is_annotator(user), is_researcher(user)) for user in listed}
    assert roles == {annotator.username: (True, False), researcher.username: (True, True)}
    assert {ADMIN, RESEARCHER} & {group.name for group in annotator.groups.all()} == set()
