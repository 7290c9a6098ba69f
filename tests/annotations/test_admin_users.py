"""Admin-role users (staff, not superusers) manage accounts through roles: they never see or set
superuser status or single permissions, never grant a permission they do not hold, and never
touch a superuser's account."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client

from tests.factories import PASSWORD, UserFactory

User = get_user_model()


def _form_data(response) -> dict:
    """What the admin's change form would send back as it stands."""
    form = response.context["adminform"].form
    data = {}
    for name, field in form.fields.items():
        if field.disabled:
            continue
        value = form[name].value()
        widget = field.widget
        if hasattr(widget, "widgets"):  # split date/time
            for i, part in enumerate(widget.decompress(value)):
                data[f"{name}_{i}"] = "" if part is None else str(part)
        elif isinstance(value, bool):
            if value:
                data[name] = "on"
        elif isinstance(value, list):
            data[name] = [str(v) for v in value]
        else:
            data[name] = "" if value is None else str(value)
    return data


@pytest.fixture
def superuser(db):
    return User.objects.create_superuser("root", password=PASSWORD)


def test_an_admin_role_user_sees_no_superuser_or_permission_fields(admin_client, annotator):
    response = admin_client.get(f"/admin/auth/user/{annotator.pk}/change/")
    assert response.status_code == 200
    content = response.content.decode()
    for field in ("is_superuser", "user_permissions", 'name="groups"', 'name="is_staff"'):
        assert field not in content
    assert 'name="is_active"' in content
    assert "is_superuser" not in admin_client.get("/admin/auth/user/").content.decode()


def test_an_admin_role_user_cannot_set_superuser_or_permissions(admin_client, annotator):
    page = admin_client.get(f"/admin/auth/user/{annotator.pk}/change/")
    data = _form_data(page)
    perm = Permission.objects.get(codename="delete_session", content_type__app_label="sessions")
    data.update(is_superuser="on", is_staff="on", user_permissions=[str(perm.pk)], groups=[])
    response = admin_client.post(f"/admin/auth/user/{annotator.pk}/change/", data)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    annotator.refresh_from_db()
    assert not annotator.is_superuser and not annotator.is_staff
    assert not annotator.user_permissions.exists()
    assert list(annotator.groups.values_list("name", flat=True)) == ["annotator"]


def test_an_admin_role_user_cannot_touch_a_superusers_account(admin_client, superuser):
    assert admin_client.get(f"/admin/auth/user/{superuser.pk}/change/").status_code in (200, 403)
    page = admin_client.get(f"/admin/auth/user/{superuser.pk}/change/")
    assert 'name="username"' not in page.content.decode()  # read-only view at most
    response = admin_client.post(
        f"/admin/auth/user/{superuser.pk}/password/", {"password1": "taken-over-1", "password2": "taken-over-1"}
    )
    assert response.status_code == 403
    assert admin_client.post(f"/admin/auth/user/{superuser.pk}/delete/", {"post": "yes"}).status_code == 403
    admin_client.post("/admin/auth/user/", {"action": "make_annotator", "_selected_action": [str(superuser.pk)]})
    superuser.refresh_from_db()
    assert superuser.is_superuser and superuser.check_password(PASSWORD)
    assert not superuser.groups.exists()


def test_an_admin_role_user_grants_a_group_only_permissions_they_hold(admin_client, admin_user):
    group = Group.objects.create(name="reviewers")
    foreign = Permission.objects.get(
        codename="delete_session", content_type__app_label="sessions"
    )  # not in the admin role
    held = Permission.objects.get(codename="view_project")
    other = Group.objects.create(name="ops")
    other.permissions.add(foreign)
    response = admin_client.post(
        f"/admin/auth/group/{group.pk}/change/", {"name": "reviewers", "permissions": [str(foreign.pk), str(held.pk)]}
    )
    assert response.status_code == 200  # the form refuses the permission it does not offer
    assert not group.permissions.exists()
    response = admin_client.post(
        f"/admin/auth/group/{other.pk}/change/", {"name": "ops", "permissions": [str(held.pk)]}
    )
    assert response.status_code == 302
    # The permission the editor does not hold stays as the superuser set it.
    assert set(other.permissions.values_list("codename", flat=True)) == {"delete_session", "view_project"}


def test_a_superuser_still_sees_and_sets_everything(superuser, annotator):
    client = Client()
    client.force_login(superuser)
    content = client.get(f"/admin/auth/user/{annotator.pk}/change/").content.decode()
    assert 'name="is_superuser"' in content and 'name="user_permissions"' in content


def test_admin_role_users_still_manage_roles(admin_client, annotator):
    other = UserFactory(username="carl", role="annotator")
    admin_client.post("/admin/auth/user/", {"action": "make_researcher", "_selected_action": [str(other.pk)]})
    assert list(other.groups.values_list("name", flat=True)) == ["researcher"]
