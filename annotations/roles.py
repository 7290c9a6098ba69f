"""The three roles of editlab, as Django groups (created by a migration), and the reviewer group.

admin: staff who manage projects and people; annotator: edits only their own
assignments; researcher: reads everything, changes nothing. Reviewer is held beside a role
(an annotator or researcher who also reviews): it lets its holder take a second pass over
other people's submitted post-edits; an admin can always review.
"""

from collections.abc import Callable
from functools import wraps

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, Group
from django.core.exceptions import PermissionDenied
from django.db import connections, router
from django.http import Http404, HttpRequest
from django.utils.functional import SimpleLazyObject

ADMIN = "admin"
ANNOTATOR = "annotator"
RESEARCHER = "researcher"
ROLES = (ADMIN, ANNOTATOR, RESEARCHER)
# Not a role (a user holds one role): a group held beside it.
REVIEWER = "reviewer"


def _groups(user) -> set[str]:
    if not user.is_authenticated:
        return set()
    cached = getattr(user, "_editlab_groups", None)
    if cached is None:
        if "groups" in getattr(user, "_prefetched_objects_cache", {}):
            # from prefetch_related("groups"): a list of users was loaded with it.
            cached = {group.name for group in user.groups.all()}
        else:
            cached = _group_names(user.pk)
        user._editlab_groups = cached
    return cached


def remember_groups(user, names: set[str]) -> None:
    """Give the roles of `user` their group names, read with the user (editlab/logins/backends.py
    loads the request's user and its groups in one statement)."""
    user._editlab_groups = names


def _group_names(user_id: int) -> set[str]:
    """The user's group names by one plain statement: every request checks a role, so this
    join is not compiled by the ORM on each request."""
    through = get_user_model().groups.through
    connection = connections[router.db_for_read(Group)]
    quote = connection.ops.quote_name
    group, link = quote(Group._meta.db_table), quote(through._meta.db_table)
    sql = (
        f"SELECT {group}.{quote('name')} FROM {group} INNER JOIN {link} "
        f"ON {group}.{quote('id')} = {link}.{quote('group_id')} WHERE {link}.{quote('user_id')} = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [user_id])
        return {name for (name,) in cursor.fetchall()}


def is_admin(user) -> bool:
    return user.is_authenticated and (user.is_superuser or (user.is_staff and ADMIN in _groups(user)))


def is_researcher(user) -> bool:
    return user.is_authenticated and RESEARCHER in _groups(user)


def is_annotator(user) -> bool:
    return user.is_authenticated and ANNOTATOR in _groups(user)


def is_participant(user) -> bool:
    """A crowd participant: an annotator account made by a join link (models.Participant). Read
    once per user object (the reverse one-to-one is cached on it)."""
    return is_annotator(user) and hasattr(user, "participant")


def is_reviewer(user) -> bool:
    """Whether the user may review submitted post-edits: holders of the reviewer group, and admins."""
    return user.is_authenticated and user.is_active and (is_admin(user) or REVIEWER in _groups(user))


def can_read_all(user) -> bool:
    """Admins and researchers see every project, item and post-edit."""
    return is_admin(user) or is_researcher(user)


def has_any_role(user, roles: tuple[str, ...]) -> bool:
    """Whether the user holds one of `roles` (an admin holds "admin" only as a staff member)."""
    checks = {ADMIN: is_admin, RESEARCHER: is_researcher, ANNOTATOR: is_annotator}
    return any(checks[role](user) for role in roles)


def _who(roles: tuple[str, ...]) -> str:
    names = [f"{role}s" for role in roles]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def role_required(*roles: str, message: str = "", hidden: bool = False) -> Callable:
    """The one gate of editlab's pages: the user must hold one of `roles`, else 403 with `message`
    (or 404 when `hidden`: a page whose existence is nobody else's business).

    Put it under @login_required (anonymous visitors go to the login page) and under the method
    decorators (a wrong method answers 405 whoever asks), e.g.
    `@login_required @require_POST @role_required(ADMIN)`.
    """
    unknown = set(roles) - set(ROLES)
    if not roles or unknown:
        raise ValueError(f"role_required: name roles among {', '.join(ROLES)} (got {', '.join(roles) or 'none'})")
    refusal = message or f"Only {_who(roles)} may see this page."

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def gated(request: HttpRequest, *args, **kwargs):
            if not has_any_role(request.user, roles):
                if hidden:
                    raise Http404("No such page.")
                raise PermissionDenied(refusal)
            return view(request, *args, **kwargs)

        return gated

    return decorator


def set_role(user, role: str) -> None:
    """Give the user exactly one role (the reviewer group, held beside a role, stays); admins are
    staff, the others are not."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}: choose one of {', '.join(ROLES)}")
    kept = list(user.groups.filter(name=REVIEWER)) if user.pk else []
    user.groups.set([Group.objects.get(name=role), *kept])
    user.is_staff = role == ADMIN
    user.save(update_fields=["is_staff"])
    user._editlab_groups = {role, *(group.name for group in kept)}


def set_reviewer(user, reviewer: bool) -> None:
    """Give the user the reviewer group, or take it away; their role is left as it is."""
    group = Group.objects.get(name=REVIEWER)
    if reviewer:
        user.groups.add(group)
    else:
        user.groups.remove(group)
    user._editlab_groups = None


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
        "user_is_reviewer": is_reviewer(user),
        # Read only by a page that asks (base.html, for annotators): participants see only the study.
        "user_is_participant": SimpleLazyObject(lambda: is_participant(user)),
    }
