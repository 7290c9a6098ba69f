"""Users and their roles: create or update an account, change its role, resolve annotators by name."""

from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction

from annotations.roles import ROLES, is_annotator, set_role
from annotations.services.errors import ServiceError

User = get_user_model()


def username_clean(username: str | None) -> str:
    """The one rule for new usernames, whatever creates them (add_user, the API): Django's
    NFKC form (the one its login authenticates), at most 150 characters of letters, digits and
    @ . + - _ (no spaces, no markup)."""
    name = User.normalize_username((username or "").strip())
    if not name:
        raise ServiceError("username: must not be empty")
    if len(name) > 150:
        raise ServiceError(f"username: at most 150 characters ({len(name)} given)")
    try:
        UnicodeUsernameValidator()(name)
    except ValidationError:
        raise ServiceError(
            f"username: {name!r} may contain only letters, digits and @ . + - _ (no spaces or other signs)"
        ) from None
    return name


@transaction.atomic
def user_add(*, username: str, role: str, password: str | None = None, email: str | None = None) -> tuple[Any, bool]:
    """Create the user or update an existing one; returns (user, created).

    The role replaces any earlier one; admins become staff (Django admin site access),
    everyone else loses staff status. A new account needs a password and a name that no existing
    account has in another case (`ADMIN` cannot shadow `admin`).
    """
    if role not in ROLES:
        raise ServiceError(f"role: unknown role {role!r}; choose one of {', '.join(ROLES)}")
    name = User.normalize_username((username or "").strip())
    # A NUL cannot be in any stored name (nor be sent to PostgreSQL): username_clean refuses it below.
    user = User.objects.filter(username=name).first() if "\x00" not in name else None
    created = user is None
    if user is None:
        username = username_clean(username)
        twin = User.objects.filter(username__iexact=username).first()
        if twin is not None:
            raise ServiceError(f"username: {username!r} differs only in case from the existing user {twin.username!r}")
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
