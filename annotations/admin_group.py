"""The admin role's Django admin permissions, kept in sync after every migrate.

Admin-role users are staff, not superusers: the Django admin site shows them what the
admin group may do. After each `migrate` (and test database creation) the group gets
every model permission of the apps admins manage, including models added later.
"""

from django.db.models.signals import post_migrate

from annotations.roles import ADMIN

ADMIN_APPS = ("annotations", "metrics", "auth", "authtoken", "django_tasks_database", "logins")


def grant_admin_group_permissions(*, using: str = "default", **kwargs) -> None:
    from django.contrib.auth.models import Group, Permission

    group = Group.objects.using(using).filter(name=ADMIN).first()
    if group is None:  # the roles migration has not run yet
        return
    permissions = Permission.objects.using(using).filter(content_type__app_label__in=ADMIN_APPS)
    group.permissions.add(*permissions)


def connect() -> None:
    post_migrate.connect(_on_post_migrate, dispatch_uid="editlab_admin_group_permissions")


def _on_post_migrate(sender, using: str = "default", **kwargs) -> None:
    grant_admin_group_permissions(using=using)
