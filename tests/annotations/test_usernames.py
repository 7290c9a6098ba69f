"""One username rule for every way of creating a user: the add_user command and the API."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from tests.factories import PASSWORD

User = get_user_model()

BAD = [
    ("<script>alert(1)</script>", "only letters, digits"),
    ("ann a", "only letters, digits"),
    ("anna\t", None),  # surrounding whitespace is trimmed: this one is fine
    ("a" * 151, "150 characters"),
    ("", "must not be empty"),
    ("   ", "must not be empty"),
    ('"><svg onload=alert(1)>', "only letters, digits"),
    ("anna\x00", "only letters, digits"),
]


@pytest.mark.parametrize(("username", "problem"), BAD)
def test_add_user_applies_the_username_rule(db, username, problem):
    if problem is None:
        call_command("add_user", username, "--role", "annotator", "--password", PASSWORD)
        assert User.objects.filter(username=username.strip()).exists()
        return
    with pytest.raises(CommandError, match=problem):
        call_command("add_user", username, "--role", "annotator", "--password", PASSWORD)
    assert not User.objects.exclude(username__in=["adam"]).exists()


# The API's JSON parser refuses a NUL before any serializer sees it, naming it.
API_BAD = [(name, "NUL character" if "\x00" in name else problem) for name, problem in BAD if problem and name.strip()]


@pytest.mark.parametrize(("username", "problem"), API_BAD)
def test_the_api_applies_the_same_rule(admin_client, username, problem):
    before = User.objects.count()
    response = admin_client.post(
        "/api/users/create/",
        {"username": username, "role": "annotator", "password": PASSWORD},
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert problem in response.content.decode()
    assert User.objects.count() == before


def test_another_case_of_an_existing_name_cannot_be_created(admin_client, admin_user):
    response = admin_client.post(
        "/api/users/create/",
        {"username": "ADAM", "role": "admin", "password": PASSWORD},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "differs only in case from the existing user 'adam'" in response.content.decode()
    with pytest.raises(CommandError, match="differs only in case"):
        call_command("add_user", "Adam", "--role", "admin", "--password", PASSWORD)
    assert list(User.objects.filter(username__iexact="adam").values_list("username", flat=True)) == ["adam"]


def test_a_full_width_name_is_stored_in_the_form_login_uses(db):
    call_command("add_user", "ｃａｒｏｌ", "--role", "annotator", "--password", PASSWORD)
    assert User.objects.filter(username="carol").exists()
    call_command("add_user", "carol", "--role", "researcher")  # the same account, updated
    assert User.objects.filter(username__iexact="carol").count() == 1


def test_existing_users_are_updated_by_their_exact_name(db, annotator):
    call_command("add_user", "anna", "--role", "researcher")
    annotator.refresh_from_db()
    assert annotator.groups.get().name == "researcher"
