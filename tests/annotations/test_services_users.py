import pytest
from django.contrib.auth import get_user_model

from annotations.roles import is_admin, is_annotator, is_researcher, role_of
from annotations.services.errors import ServiceError
from annotations.services.users import annotators_by_name, user_add
from tests.factories import UserFactory

User = get_user_model()


def test_it_creates_an_admin_who_is_staff(db):
    user, created = user_add(username="carla", role="admin", password="long-enough-pw")
    assert created is True
    user.refresh_from_db()
    assert user.is_staff is True
    assert user.check_password("long-enough-pw")
    assert is_admin(User.objects.get(pk=user.pk))


def test_it_updates_an_existing_user_and_drops_staff_when_no_longer_admin(db):
    user_add(username="carla", role="admin", password="long-enough-pw")
    user, created = user_add(username="carla", role="researcher")
    assert created is False
    user = User.objects.get(pk=user.pk)
    assert user.is_staff is False
    assert is_researcher(user) and not is_admin(user)
    assert list(user.groups.values_list("name", flat=True)) == ["researcher"]
    assert user.check_password("long-enough-pw")  # no password given: unchanged


def test_it_refuses_a_new_user_without_password(db):
    with pytest.raises(ServiceError, match="password: a new user"):
        user_add(username="nopw", role="annotator")
    assert not User.objects.filter(username="nopw").exists()


def test_it_refuses_a_short_password_and_unknown_role(db):
    with pytest.raises(ServiceError, match="password: .*at least 8"):
        user_add(username="shorty", role="annotator", password="abc")
    with pytest.raises(ServiceError, match="role: unknown role 'boss'"):
        user_add(username="boss", role="boss", password="long-enough-pw")
    assert not User.objects.filter(username__in=["shorty", "boss"]).exists()


def test_annotators_by_name_keeps_order_and_names_every_problem(db):
    UserFactory(username="a1", role="annotator")
    UserFactory(username="a2", role="annotator")
    UserFactory(username="r1", role="researcher")
    gone = UserFactory(username="a3", role="annotator")
    gone.is_active = False
    gone.save()
    assert [u.username for u in annotators_by_name(usernames=["a2", "a1"])] == ["a2", "a1"]
    with pytest.raises(ServiceError, match="no such user: ghost"):
        annotators_by_name(usernames=["a1", "ghost"])
    with pytest.raises(ServiceError, match="not in the annotator role: r1"):
        annotators_by_name(usernames=["a1", "r1"])
    with pytest.raises(ServiceError, match="inactive accounts cannot be assigned work: a3"):
        annotators_by_name(usernames=["a3"])
    with pytest.raises(ServiceError, match="listed twice: a1"):
        annotators_by_name(usernames=["a1", "a1"])


def test_role_of_reports_the_role_given(db):
    user, _ = user_add(username="ann", role="annotator", password="long-enough-pw")
    assert role_of(User.objects.get(pk=user.pk)) == "annotator"
    assert is_annotator(User.objects.get(pk=user.pk))
