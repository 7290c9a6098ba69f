"""What every logged-in request reads — its session, its user, the user's roles — by plain statements
(editlab/sessions.py, LimitedModelBackend.get_user, annotations.roles): the same answers as Django's ORM."""

import secrets
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.roles import ADMIN, ANNOTATOR, RESEARCHER, can_read_all, is_annotator, is_researcher
from editlab.logins.backends import LimitedModelBackend
from editlab.logins.models import Session
from editlab.sessions import SessionStore
from tests.factories import UserFactory

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


def test_a_request_reads_its_session_and_its_user_with_roles_in_one_statement(
    client, annotator, django_assert_num_queries
):
    client.force_login(annotator)
    assert Session.objects.get(session_key=client.session.session_key).user_id == annotator.pk
    # The session with the user and its groups; the ownership check of a post-edit that does not exist.
    with django_assert_num_queries(2):
        response = client.post("/api/post-edits/999999/events/", {}, content_type="application/json")
    assert response.status_code == 404, response.content


def test_a_session_row_without_the_users_id_still_logs_its_user_in(client, annotator, django_assert_num_queries):
    """A session saved before the column (copied by the migration from Django's table with its id
    decoded, or without one) or naming another user than its data: the data decides, read as before."""
    client.force_login(annotator)
    key = client.session.session_key
    for column in (None, annotator.pk + 1000):
        Session.objects.filter(session_key=key).update(user_id=column)
        with django_assert_num_queries(3):  # the session, then the user with its groups, then ownership
            response = client.post("/api/post-edits/999999/events/", {}, content_type="application/json")
        assert response.status_code == 404, response.content  # logged in as the annotator: not 403


def _request_user(key: str, *, joined: bool):
    """The user Django's authentication middleware gives a request carrying the session `key`: the
    session's joined user (`joined`) or, as Django does, the user read by the backend after the session."""
    from django.test import RequestFactory

    from editlab import sessions

    request = RequestFactory().get("/")
    request.session = SessionStore(key)
    if joined:
        return sessions.get_user(request), request.session
    from django.contrib import auth

    return auth.get_user(request), request.session


FIELDS = [field.attname for field in get_user_model()._meta.concrete_fields]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    groups=st.sets(st.sampled_from([ANNOTATOR, RESEARCHER, ADMIN])),
    active=st.booleans(),
    password_changed=st.booleans(),
    deleted=st.booleans(),
    column=st.sampled_from(["own", "none", "other"]),
)
def test_the_joined_user_is_the_one_django_reads(
    db, client, groups, active, password_changed, deleted, column, django_assert_num_queries
):
    """Whatever became of the user since the login (roles changed, deactivated, password changed,
    deleted) and whatever the row's copy of the id says, the request's user is the one Django's own
    reading finds: same fields, same roles, same session kept or flushed."""
    other = UserFactory(username=f"other-{secrets.token_hex(4)}")
    user = UserFactory(username=f"u-{secrets.token_hex(4)}")
    client.force_login(user)
    key = client.session.session_key
    user.groups.set(Group.objects.filter(name__in=groups))
    user.is_active = active
    if password_changed:
        user.set_password("a new password 1")
    user.save()
    copied = {"own": user.pk, "none": None, "other": other.pk}[column]
    Session.objects.filter(session_key=key).update(user_id=copied)
    if deleted:
        user.delete()
    joined, joined_session = _request_user(key, joined=True)
    # Django's own reading, on the same row again (the joined read may have flushed it: then so would Django).
    Session.objects.filter(session_key=key).update(user_id=None)
    expected, expected_session = _request_user(key, joined=False)
    assert joined.is_authenticated == expected.is_authenticated == (active and not password_changed and not deleted)
    assert joined_session.session_key == expected_session.session_key
    if expected.is_authenticated:
        assert {name: getattr(joined, name) for name in FIELDS} == {name: getattr(expected, name) for name in FIELDS}
        assert (is_annotator(joined), is_researcher(joined), can_read_all(joined)) == (
            is_annotator(expected),
            is_researcher(expected),
            can_read_all(expected),
        )


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


def test_the_upgrade_copies_djangos_sessions_with_their_users(client, annotator):
    """Migration logins 0002: a session of Django's own table keeps its user logged in, the copy
    carrying the user's id (a session of nobody: none)."""
    import importlib
    from types import SimpleNamespace

    from django.apps import apps
    from django.conf import settings as django_settings
    from django.contrib.sessions.backends.db import SessionStore as DjangoStore
    from django.db import connection

    migration = importlib.import_module("editlab.logins.migrations.0002_session_with_user")
    logged_in, anonymous = DjangoStore(), DjangoStore()
    logged_in.update(
        {
            "_auth_user_id": str(annotator.pk),
            "_auth_user_backend": django_settings.AUTHENTICATION_BACKENDS[0],
            "_auth_user_hash": annotator.get_session_auth_hash(),
        }
    )
    anonymous["note"] = "x"
    logged_in.create()
    anonymous.create()
    migration.copy_sessions(apps, SimpleNamespace(connection=connection))
    copied = dict(Session.objects.values_list("session_key", "user_id"))
    assert copied == {logged_in.session_key: annotator.pk, anonymous.session_key: None}
    client.cookies["sessionid"] = logged_in.session_key
    response = client.post("/api/post-edits/999999/events/", {}, content_type="application/json")
    assert response.status_code == 404, response.content  # the annotator, logged in: not 403


@given(st.one_of(st.text(), st.integers(), st.none(), st.floats(allow_nan=True)))
def test_the_rows_copy_of_the_user_id_is_an_id_or_nothing(value):
    """Whatever a session's data holds under the user key, the column gets an id the backend would look
    up, or NULL; never an error that would lose the session's save."""
    from editlab import limits
    from editlab.sessions import session_user_id

    copied = session_user_id(value)
    assert copied is None or (type(copied) is int and 0 < copied <= limits.MAX_ID)
    if isinstance(value, int) and 0 < value <= limits.MAX_ID:
        assert copied == value
