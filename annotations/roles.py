"""The three roles of editlab, as Django groups (created by a migration).

admin: staff who manage projects and people; annotator: edits only their own
assignments; researcher: reads everything, changes nothing.
"""

from django.contrib.auth.models import AnonymousUser, Group
from django.http import HttpRequest

ADMIN = "admin"
ANNOTATOR = "annotator"
RESEARCHER = "researcher"
ROLES = (ADMIN, ANNOTATOR, RESEARCHER)


def _groups(user) -> set[str]:
    if not user.is_authenticated:
        return set()
    cached = getattr(user, "_editlab_groups", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))
        user._editlab_groups = cached
    return cached


def is_admin(user) -> bool:
    return user.is_authenticated and (user.is_superuser or (user.is_staff and ADMIN in _groups(user)))


def is_researcher(user) -> bool:
    return user.is_authenticated and RESEARCHER in _groups(user)


def is_annotator(user) -> bool:
    return user.is_authenticated and ANNOTATOR in _groups(user)


def can_read_all(user) -> bool:
    """Admins and researchers see every project, item and post-edit."""
    return is_admin(user) or is_researcher(user)


def set_role(user, role: str) -> None:
    """Give the user exactly one role; admins are staff, the others are not."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}: choose one of {', '.join(ROLES)}")
    user.groups.set([Group.objects.get(name=role)])
    user.is_staff = role == ADMIN
    user.save(update_fields=["is_staff"])
    user._editlab_groups = {role}


def role_of(user) -> str | None:
    if isinstance(user, AnonymousUser) or not user.is_authenticated:
        return None
    for role in ROLES:
        if role == ADMIN and is_admin(user):
            return ADMIN
        if role != ADMIN and role in _groups(user):
            return role
    return None


def roles_context(request: HttpRequest) -> dict:
    user = request.user
    return {
        "user_role": role_of(user),
        "user_is_admin": is_admin(user),
        "user_is_researcher": is_researcher(user),
        "user_is_annotator": is_annotator(user),
    }
