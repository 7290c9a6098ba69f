"""Reads of the Users page: accounts with their role, filtered and a page at a time."""

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.core.paginator import Page, Paginator
from django.db.models import Exists, OuterRef, Q, QuerySet

from annotations.models import Participant
from annotations.roles import ADMIN, ANNOTATOR, RESEARCHER, ROLES

User = get_user_model()
USERS_PER_PAGE = 50


@dataclass(frozen=True)
class UserRow:
    user: Any
    role: str  # admin, annotator, researcher or "" (no role)
    crowd: bool  # a crowd participant's account (made by a join link)
    changeable: bool  # whether the acting admin may change it (not a superuser's, not their own)


def _role(user) -> str:
    # From the prefetched groups: annotations.roles.role_of would query once per row.
    names = {group.name for group in user.groups.all()}
    if user.is_superuser or (user.is_staff and ADMIN in names):
        return ADMIN
    return next((role for role in (ANNOTATOR, RESEARCHER) if role in names), "")


def users_filtered(*, q: str = "", role: str = "", active: str = "") -> QuerySet:
    users = User.objects.order_by("username").prefetch_related("groups")
    users = users.annotate(crowd=Exists(Participant.objects.filter(user=OuterRef("pk"))))
    if q:
        users = users.filter(username__icontains=q)
    if role == ADMIN:
        users = users.filter(Q(is_staff=True, groups__name=ADMIN) | Q(is_superuser=True))
    elif role in ROLES:
        users = users.filter(groups__name=role)
    elif role == "none":
        users = users.exclude(groups__name__in=ROLES).exclude(is_superuser=True)
    if active in ("yes", "no"):
        users = users.filter(is_active=active == "yes")
    return users.distinct()


def users_page(*, actor, q: str = "", role: str = "", active: str = "", page: Any = 1) -> tuple[Page, list[UserRow]]:
    """One page of the filtered accounts (a page number out of range is the nearest page)."""
    shown = Paginator(users_filtered(q=q, role=role, active=active), USERS_PER_PAGE).get_page(page)
    rows = [
        UserRow(
            user=user,
            role=_role(user),
            crowd=bool(user.crowd),
            changeable=user.pk != actor.pk and (actor.is_superuser or not user.is_superuser),
        )
        for user in shown.object_list
    ]
    return shown, rows
