"""Users and their roles: create or update an account, change its role, resolve annotators by name."""

import secrets
from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction

from annotations.roles import ROLES, is_admin, is_annotator, set_role
from annotations.services.errors import ServiceError
from editlab.refusals import Refusal

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


# --------------------------------------------------------------------------- the Users page's writes
# An admin manages accounts through roles, as on the Django admin site (annotations/admin.py): never a
# superuser's account (whose password they could otherwise set and log in with), never superuser status,
# never their own role or active flag (an admin who demotes or deactivates themselves is locked out).

GENERATED_PASSWORD_BYTES = 12  # secrets.token_urlsafe: 16 characters


class AccountRefused(Refusal):
    """An account the acting admin may not change (a page answers 403 with the message)."""

    status = 403
    code = "permission_denied"


def _may_change(*, actor, user, what: str) -> None:
    if not is_admin(actor):
        raise AccountRefused(f"{what}: only admins manage accounts")
    if user.is_superuser and not actor.is_superuser:
        raise AccountRefused(f"{what}: {user.username} is a superuser; only a superuser changes that account")
    if user.pk == actor.pk:
        raise AccountRefused(f"{what}: you cannot change your own account here (another admin can)")


def _password(user, password: str | None) -> str:
    """The password to set: the one given (checked by the site's validators) or a generated one."""
    if not password:
        return secrets.token_urlsafe(GENERATED_PASSWORD_BYTES)
    try:
        validate_password(password, user=user)
    except ValidationError as exc:
        raise ServiceError("password: " + " ".join(exc.messages)) from None
    return password


@transaction.atomic
def user_create(*, actor, username: str, role: str, password: str | None = None) -> tuple[Any, str]:
    """A new active account with one role; returns (user, password): the password given, or a generated
    one to show once. An existing name (in any case) is refused, never updated."""
    if not is_admin(actor):
        raise AccountRefused("username: only admins manage accounts")
    if role not in ROLES:
        raise ServiceError(f"role: unknown role {role!r}; choose one of {', '.join(ROLES)}")
    name = username_clean(username)
    twin = User.objects.filter(username__iexact=name).first()
    if twin is not None:
        same = twin.username == name
        raise ServiceError(
            f"username: {name!r} is taken"
            if same
            else f"username: {name!r} differs only in case from {twin.username!r}"
        )
    user = User(username=name, is_active=True)
    chosen = _password(user, password)
    user.set_password(chosen)
    user.save()
    set_role(user, role)
    return user, chosen


@transaction.atomic
def user_change_role(*, actor, user, role: str) -> None:
    _may_change(actor=actor, user=user, what="role")
    user_set_role(user=user, role=role)


@transaction.atomic
def user_set_active(*, actor, user, active: bool) -> None:
    """Deactivate (the account can no longer log in; its sessions and API token stop working) or
    reactivate; its work stays."""
    _may_change(actor=actor, user=user, what="active")
    user.is_active = active
    user.save(update_fields=["is_active"])


@transaction.atomic
def user_reset_password(*, actor, user, password: str | None = None) -> str:
    """Set the password given, or a generated one; returns it (to show once). The account's other
    sessions end (Django checks each session against the password)."""
    _may_change(actor=actor, user=user, what="password")
    chosen = _password(user, password)
    user.set_password(chosen)
    user.save(update_fields=["password"])
    return chosen
