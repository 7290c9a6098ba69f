"""The Users page (manage/users/): who may use it, every action, every refusal."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.models import Participant
from annotations.roles import role_of
from annotations.selectors_users import USERS_PER_PAGE
from tests.factories import PASSWORD, ProjectFactory, UserFactory

User = get_user_model()
PAGE = reverse("manage-users")
ADD = reverse("manage-users-add")


def role_url(user) -> str:
    return reverse("manage-user-role", args=[user.pk])


def active_url(user) -> str:
    return reverse("manage-user-active", args=[user.pk])


def password_url(user) -> str:
    return reverse("manage-user-password", args=[user.pk])


def fresh(user):
    return User.objects.get(pk=user.pk)


def shown_password(response) -> str:
    match = re.search(r'<code class="password" id="shown-password">([^<]+)</code>', response.content.decode())
    assert match, "no password shown"
    return match.group(1)


@pytest.fixture
def superuser(db):
    return User.objects.create_superuser("root", password=PASSWORD)


# --------------------------------------------------------------------------- who may


@pytest.mark.django_db
def test_anonymous_visitors_go_to_the_login_page(client):
    response = client.get(PAGE)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("who", ["annotator_client", "researcher_client"])
@pytest.mark.django_db
def test_researchers_and_annotators_get_403_and_change_nothing(request, who, other_annotator):
    client = request.getfixturevalue(who)
    page = client.get(PAGE)
    assert page.status_code == 403
    assert "Only admins may see and change accounts." in page.content.decode()
    assert client.post(ADD, {"username": "eve", "role": "admin"}).status_code == 403
    assert client.post(role_url(other_annotator), {"role": "admin"}).status_code == 403
    assert client.post(active_url(other_annotator), {"active": "0"}).status_code == 403
    assert client.post(password_url(other_annotator), {"password": "taken-over-1"}).status_code == 403
    bob = fresh(other_annotator)
    assert (role_of(bob), bob.is_active, bob.check_password(PASSWORD)) == ("annotator", True, True)
    assert not User.objects.filter(username="eve").exists()


@pytest.mark.django_db
def test_admins_see_every_account_with_role_status_and_last_login(admin_client, annotator, researcher, superuser):
    UserFactory(username="zoe", role="annotator")
    User.objects.filter(username="zoe").update(is_active=False)
    participant_user = UserFactory(username="p1-crowd", role="annotator")
    Participant.objects.create(user=participant_user, project=ProjectFactory(), platform_id="PID1", slot=0)

    response = admin_client.get(PAGE)

    assert response.status_code == 200
    rows = {row.user.username: row for row in response.context["rows"]}
    assert list(rows) == ["adam", "anna", "p1-crowd", "rita", "root", "zoe"]
    assert {name: row.role for name, row in rows.items()} == {
        "adam": "admin",
        "anna": "annotator",
        "p1-crowd": "annotator",
        "rita": "researcher",
        "root": "admin",
        "zoe": "annotator",
    }
    assert [name for name, row in rows.items() if row.changeable] == ["anna", "p1-crowd", "rita", "zoe"]
    assert rows["p1-crowd"].crowd and not rows["anna"].crowd
    html = response.content.decode()
    assert "deactivated" in html and "(crowd participant)" in html and "a superuser's account" in html
    assert rows["adam"].user.last_login is not None  # the admin client logged in
    assert f'href="{PAGE}"' in admin_client.get(reverse("home")).content.decode()


@pytest.mark.django_db
def test_the_nav_links_the_page_for_admins_only(admin_client, researcher_client):
    assert f'href="{PAGE}"' in admin_client.get(reverse("manage-projects")).content.decode()
    assert f'href="{PAGE}"' not in researcher_client.get(reverse("manage-projects")).content.decode()


@pytest.mark.django_db
def test_filters_narrow_the_list_and_htmx_gets_only_the_table(admin_client, annotator, researcher):
    UserFactory(username="annabel", role="researcher")
    User.objects.filter(username="annabel").update(is_active=False)

    by_name = admin_client.get(PAGE, {"q": "anna"})
    assert [row.user.username for row in by_name.context["rows"]] == ["anna", "annabel"]
    by_role = admin_client.get(PAGE, {"role": "researcher", "active": "no"})
    assert [row.user.username for row in by_role.context["rows"]] == ["annabel"]
    admins = admin_client.get(PAGE, {"role": "admin"})
    assert [row.user.username for row in admins.context["rows"]] == ["adam"]

    fragment = admin_client.get(PAGE, {"q": "anna"}, headers={"HX-Request": "true"})
    assert [t.name for t in fragment.templates] == ["annotations/manage_users_table.html"]
    assert "<h1>" not in fragment.content.decode()
    restored = admin_client.get(
        PAGE, {"q": "anna"}, headers={"HX-Request": "true", "HX-History-Restore-Request": "true"}
    )
    assert "<h1>Users</h1>" in restored.content.decode()  # Back: the whole page


@pytest.mark.django_db
def test_the_list_is_paged(admin_client):
    for n in range(USERS_PER_PAGE + 3):
        User.objects.create_user(f"crowd{n:03d}")
    first = admin_client.get(PAGE)
    assert len(first.context["rows"]) == USERS_PER_PAGE
    assert first.context["page"].paginator.count == USERS_PER_PAGE + 4
    second = admin_client.get(PAGE, {"page": "2"})
    assert len(second.context["rows"]) == 4
    assert admin_client.get(PAGE, {"page": "x²"}).context["page"].number == 1


# --------------------------------------------------------------------------- adding


@pytest.mark.django_db
def test_adding_a_user_with_a_password(admin_client):
    response = admin_client.post(ADD, {"username": "carla", "role": "researcher", "password": "long-enough-pw"})

    assert response.status_code == 200
    carla = User.objects.get(username="carla")
    assert (role_of(carla), carla.is_active, carla.is_staff) == ("researcher", True, False)
    assert carla.check_password("long-enough-pw")
    html = response.content.decode()
    assert "Created carla (researcher)." in html
    assert 'id="shown-password"' not in html  # the admin typed it: nothing to show


@pytest.mark.django_db
def test_adding_a_user_without_a_password_shows_a_generated_one_once(admin_client):
    response = admin_client.post(ADD, {"username": "dora", "role": "admin"})

    password = shown_password(response)
    assert len(password) == 16
    assert response["Cache-Control"] == "no-store"
    dora = User.objects.get(username="dora")
    assert (role_of(dora), dora.is_staff) == ("admin", True)
    assert Client().login(username="dora", password=password)
    assert 'id="shown-password"' not in admin_client.get(PAGE).content.decode()


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"username": "anna", "role": "annotator"}, "username", "&#x27;anna&#x27; is taken"),
        ({"username": "ANNA", "role": "annotator"}, "username", "differs only in case from &#x27;anna&#x27;"),
        ({"username": "two words", "role": "annotator"}, "username", "may contain only letters, digits"),
        ({"username": "eve", "role": "annotator", "password": "short"}, "password", "at least 8 characters"),
        ({"username": "eve", "role": "superuser"}, "role", "Select a valid choice"),
        ({"username": "", "role": "annotator"}, "username", "This field is required."),
        ({"username": "e\x00ve", "role": "annotator"}, "username", "Null characters are not allowed."),
    ],
)
@pytest.mark.django_db
def test_a_refused_new_user_is_a_form_error_and_nothing_is_stored(admin_client, annotator, fields, field, message):
    before = User.objects.count()

    response = admin_client.post(ADD, fields)

    assert response.status_code == 400
    assert message in str(response.context["add_form"].errors[field]).replace("'", "&#x27;") or message in (
        response.content.decode()
    )
    assert User.objects.count() == before
    assert fresh(annotator).check_password(PASSWORD)


# --------------------------------------------------------------------------- changing


@pytest.mark.django_db
def test_changing_a_role(admin_client, annotator):
    response = admin_client.post(role_url(annotator), {"role": "admin"})
    assert response.status_code == 302 and response["Location"] == PAGE
    anna = fresh(annotator)
    assert (role_of(anna), anna.is_staff) == ("admin", True)
    assert "anna is now admin." in admin_client.get(PAGE).content.decode()
    admin_client.post(role_url(annotator), {"role": "researcher"})
    anna = fresh(annotator)
    assert (role_of(anna), anna.is_staff) == ("researcher", False)


@pytest.mark.django_db
def test_deactivating_ends_the_login_and_reactivating_restores_it(admin_client, annotator, annotator_client):
    assert annotator_client.get(reverse("annotator_home")).status_code == 200

    response = admin_client.post(active_url(annotator), {"active": "0"})

    assert response.status_code == 302
    assert fresh(annotator).is_active is False
    assert annotator_client.get(reverse("annotator_home")).status_code == 302  # the session no longer counts
    assert not Client().login(username="anna", password=PASSWORD)
    assert "Deactivated anna" in admin_client.get(PAGE).content.decode()
    admin_client.post(active_url(annotator), {"active": "1"})
    assert fresh(annotator).is_active is True
    assert Client().login(username="anna", password=PASSWORD)


@pytest.mark.django_db
def test_resetting_a_password_generates_one_or_sets_the_one_given(admin_client, annotator, annotator_client):
    response = admin_client.post(password_url(annotator), {"password": ""})

    password = shown_password(response)
    assert fresh(annotator).check_password(password)
    assert annotator_client.get(reverse("annotator_home")).status_code == 302  # the old session ended
    set_one = admin_client.post(password_url(annotator), {"password": "chosen-by-admin"})
    assert set_one.status_code == 302
    assert fresh(annotator).check_password("chosen-by-admin")
    short = admin_client.post(password_url(annotator), {"password": "short"})
    assert short.status_code == 400
    assert "anna&#x27;s password: This password is too short." in short.content.decode()
    assert fresh(annotator).check_password("chosen-by-admin")


@pytest.mark.parametrize(
    ("url", "data", "message"),
    [
        (role_url, {"role": "root"}, "role of anna: choose admin, annotator or researcher"),
        (active_url, {"active": "maybe"}, "active of anna: say deactivate (0) or reactivate (1)"),
    ],
)
@pytest.mark.django_db
def test_bad_action_values_are_messages_and_change_nothing(admin_client, annotator, url, data, message):
    response = admin_client.post(url(annotator), data)
    assert response.status_code == 400
    assert message in response.content.decode()
    anna = fresh(annotator)
    assert (role_of(anna), anna.is_active) == ("annotator", True)


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("url", "data"),
    [(role_url, {"role": "annotator"}), (active_url, {"active": "0"}), (password_url, {"password": "taken-over-1"})],
)
@pytest.mark.django_db
def test_an_admin_never_touches_a_superusers_account(admin_client, superuser, url, data):
    response = admin_client.post(url(superuser), data)

    assert response.status_code == 403
    assert "root is a superuser; only a superuser changes that account" in response.content.decode()
    root = fresh(superuser)
    assert root.is_superuser and root.is_active and root.check_password(PASSWORD)
    assert not root.groups.exists()


@pytest.mark.parametrize(
    ("url", "data"),
    [(role_url, {"role": "annotator"}), (active_url, {"active": "0"}), (password_url, {"password": "mine-now-123"})],
)
@pytest.mark.django_db
def test_an_admin_cannot_lock_themselves_out(admin_client, admin_user, url, data):
    response = admin_client.post(url(admin_user), data)

    assert response.status_code == 403
    assert "you cannot change your own account here (another admin can)" in response.content.decode()
    adam = fresh(admin_user)
    assert (role_of(adam), adam.is_active, adam.check_password(PASSWORD)) == ("admin", True, True)


@pytest.mark.django_db
def test_a_superuser_may_change_another_superuser(superuser):
    other = User.objects.create_superuser("root2", password=PASSWORD)
    client = Client()
    client.force_login(superuser)
    assert client.post(active_url(other), {"active": "0"}).status_code == 302
    assert fresh(other).is_active is False


@pytest.mark.parametrize("user_id", ["99999999", "99999999999999999999"])
@pytest.mark.django_db
def test_an_unknown_account_is_404(admin_client, user_id):
    assert admin_client.post(f"/manage/users/{user_id}/role/", {"role": "admin"}).status_code == 404


@pytest.mark.django_db
def test_an_admin_grants_no_superuser_status(admin_client):
    admin_client.post(ADD, {"username": "mallory", "role": "admin", "is_superuser": "on", "password": "long-enough-pw"})
    mallory = User.objects.get(username="mallory")
    assert not mallory.is_superuser and not mallory.user_permissions.exists()


# --------------------------------------------------------------------------- hostile input


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    username=st.text(max_size=160),
    role=st.sampled_from(["admin", "annotator", "researcher", "", "root", "admin\x00"]),
    password=st.text(max_size=30),
)
@pytest.mark.django_db
def test_any_add_form_is_a_page_never_a_500(admin_client, username, role, password):
    before = set(User.objects.values_list("username", flat=True))

    response = admin_client.post(ADD, {"username": username, "role": role, "password": password})

    assert response.status_code in (200, 400)
    after = set(User.objects.values_list("username", flat=True))
    if response.status_code == 400:
        assert after == before
    else:
        (new,) = after - before
        assert role_of(User.objects.get(username=new)) == role
        User.objects.filter(username=new).delete()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=st.text(max_size=200), role=st.text(max_size=12), active=st.text(max_size=5), page=st.text(max_size=25))
@pytest.mark.django_db
def test_any_filter_query_is_a_page(admin_client, q, role, active, page):
    response = admin_client.get(PAGE, {"q": q, "role": role, "active": active, "page": page})
    assert response.status_code == 200
