"""Users and their roles: create or update an account, change its role, resolve annotators by name."""

from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from annotations.roles import ROLES, is_annotator, set_role
from annotations.services.errors import ServiceError

User = get_user_model()


@transaction.atomic
def user_add(*, username: str, role: str, password: str | None = None, email: str | None = None) -> tuple[Any, bool]:
    """Create the user or update an existing one; returns (user, created).

    The role replaces any earlier one; admins become staff (Django admin site access),
    everyone else loses staff status. A new account needs a password.
    """
    username = (username or "").strip()
    if not username:
        raise ServiceError("username: must not be empty")
    if role not in ROLES:
        raise ServiceError(f"role: unknown role {role!r}; choose one of {', '.join(ROLES)}")
    user = User.objects.filter(username=username).first()
    created = user is None
    if created:
        if not password:
            raise ServiceError(f"password: a new user ({username}) needs a password")
        user = User(username=username)
    if password:
        try:
            validate_password(password, user=user)
        except ValidationError as exc:
            raise ServiceError("password: " + " ".join(exc.messages)) from None
        user.set_password(password)
    if email is not None:
        user.email = email
    user.is_active = True
    user.save()
    set_role(user, role)
    return user, created


@transaction.atomic
def user_set_role(*, user, role: str) -> None:
    if role not in ROLES:
        raise ServiceError(f"role: unknown role {role!r}; choose one of {', '.join(ROLES)}")
    set_role(user, role)


def annotators_by_name(*, usernames: Iterable[str]) -> list:
    """Active annotator accounts in the order given; unknown or non-annotator names are an error."""
    names = [name.strip() for name in usernames if name and name.strip()]
    if not names:
        raise ServiceError("annotators: name at least one annotator")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ServiceError(f"annotators: listed twice: {', '.join(duplicates)}")
    users = {user.username: user for user in User.objects.filter(username__in=names).prefetch_related("groups")}
    missing = [name for name in names if name not in users]
    if missing:
        raise ServiceError(f"annotators: no such user: {', '.join(missing)}")
    not_annotators = [name for name in names if not is_annotator(users[name])]
    if not_annotators:
        raise ServiceError(f"annotators: not in the annotator role: {', '.join(not_annotators)}")
    inactive = [name for name in names if not users[name].is_active]
    if inactive:
        raise ServiceError(f"annotators: inactive accounts cannot be assigned work: {', '.join(inactive)}")
    return [users[name] for name in names]
