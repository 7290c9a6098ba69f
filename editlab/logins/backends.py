from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connections, router
from django.http import HttpRequest

from annotations.roles import remember_groups
from editlab import limits
from editlab.client_address import client_address
from editlab.db import column
from editlab.logins.services import LoginAttempt, login_attempt_begin, login_attempt_succeeded
from editlab.sessions import user_read_with_session

# The request attribute a refused attempt waits in for the login page (read with login_refusal()).
_REFUSAL = "login_refusal"


def login_refusal(request: HttpRequest | None) -> LoginAttempt | None:
    """The attempt the login limiter refused during this request, if any."""
    refusal = getattr(request, _REFUSAL, None)
    return refusal if isinstance(refusal, LoginAttempt) else None


class LimitedModelBackend(ModelBackend):
    """Django's username/password check behind the login limiter.

    Every password login made for an HTTP request goes through `authenticate(request, ...)` —
    the app's login page, the admin site's, DRF's token view — so limiting here limits them all.
    A refused attempt leaves its reason on the request (`login_refusal(request)`) for the page
    to show, and raises PermissionDenied so that no other backend is asked.
    """

    def authenticate(self, request: HttpRequest | None, username=None, password=None, **kwargs):
        if request is None:  # not an HTTP request (the test client's login(), scripts)
            return super().authenticate(request, username=username, password=password, **kwargs)
        if username is None:
            username = kwargs.get(self._username_field())
        attempt = login_attempt_begin(username=username, address=client_address(request))
        if attempt.refused:
            setattr(request, _REFUSAL, attempt)
            raise PermissionDenied(attempt.message())
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None:
            login_attempt_succeeded(attempt=attempt)
        return user

    def get_user(self, user_id):
        """As ModelBackend.get_user, with the user and their groups (the roles every request checks)
        read by one plain SQL statement in one round trip."""
        user = _user_by_pk(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None

    def _username_field(self) -> str:
        from django.contrib.auth import get_user_model

        return get_user_model().USERNAME_FIELD


def user_select(connection) -> tuple[str, str, str]:
    """The SELECT list of the user's concrete fields and their group's name, the user table's id column,
    and the joins of the user's groups: one row per group (one with a NULL name for a user without any;
    NULLs throughout when a LEFT JOIN finds no user)."""
    users = get_user_model()
    quote = connection.ops.quote_name
    user_table, link, group = (quote(model._meta.db_table) for model in (users, users.groups.through, Group))
    user_id_column = f"{user_table}.{quote(column(users._meta.pk))}"
    selected = ", ".join(f"{user_table}.{quote(column(field))}" for field in users._meta.concrete_fields)
    joins = (
        f"LEFT JOIN {link} ON {link}.{quote('user_id')} = {user_id_column} "
        f"LEFT JOIN {group} ON {group}.{quote('id')} = {link}.{quote('group_id')}"
    )
    return f"{selected}, {group}.{quote('name')}", user_id_column, joins


def user_from_rows(connection, rows: list[tuple]):
    """The user of rows read with `user_select` (their group names remembered: annotations.roles), or
    None when they hold no user; values converted as the ORM converts them (the backend's converters:
    SQLite's datetimes and booleans)."""
    users = get_user_model()
    fields = users._meta.concrete_fields
    pk_index = fields.index(users._meta.pk)
    if not rows or rows[0][pk_index] is None:
        return None
    values = []
    for field, value in zip(fields, rows[0][:-1], strict=True):
        col = field.get_col(users._meta.db_table)
        for convert in connection.ops.get_db_converters(col) + col.get_db_converters(connection):
            value = convert(value, col, connection)
        values.append(value)
    user = users.from_db(connection.alias, [field.attname for field in fields], values)
    remember_groups(user, {row[-1] for row in rows if row[-1] is not None})
    return user


def _user_by_pk(user_id):
    """The user whose pk is `user_id` (as a session stores it) with their group names, or None: the
    one its request's session row joined when there is one (editlab/sessions.py), else one statement."""
    users = get_user_model()
    try:
        pk = users._meta.pk.to_python(user_id)
    except (TypeError, ValueError, ValidationError):  # not an id: the ORM would not find it either
        return None
    if not isinstance(pk, int) or not 0 < pk <= limits.MAX_ID:
        return None
    read = user_read_with_session(pk)
    if read is not None:
        return read
    connection = connections[router.db_for_read(users)]
    selected, user_id_column, groups = user_select(connection)
    user_table = connection.ops.quote_name(users._meta.db_table)
    sql = f"SELECT {selected} FROM {user_table} {groups} WHERE {user_id_column} = %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [pk])
        rows = cursor.fetchall()
    return user_from_rows(connection, rows)
