"""Django's database sessions, read with their user by one plain statement.

Every request of a logged-in user loads its session and then its user and the user's roles: two
round trips, each about a tenth of an editor event batch's CPU (editlab/benchmarks/event_batch.py).
The session row (editlab.logins.models.Session) keeps a copy of the logged-in user's id, so the
statement that reads the row of this key, if it has not expired, also joins that user and their
groups. Django's `auth.get_user` then asks the backend for the user the session's data names, and
LimitedModelBackend.get_user takes the joined one when it is that user (`user_read_with_session`),
within the request's `get_user` only (AuthenticationMiddleware below); every check Django makes of
the user (active, the session's password hash) is still made. Saving, expiry, flushing and
`clearsessions` are Django's own (django.contrib.sessions.backends.db).
"""

import contextvars
from typing import Any

from django.contrib import auth
from django.contrib.auth import get_user_model
from django.contrib.auth import middleware as auth_middleware
from django.contrib.sessions.backends import db
from django.db import connections, router
from django.utils import timezone
from django.utils.functional import SimpleLazyObject

from editlab import limits

# The session store of the request whose user is being read (AuthenticationMiddleware.get_user).
_READING: contextvars.ContextVar[Any] = contextvars.ContextVar("editlab_session_reading", default=None)


class SessionStore(db.SessionStore):
    def __init__(self, session_key: str | None = None) -> None:
        super().__init__(session_key)
        self.user_read = None  # the user joined to the row when it was read (or None)

    @classmethod
    def get_model_class(cls):
        from editlab.logins.models import Session  # noqa: PLC0415  # models load after settings

        return Session

    def create_model_instance(self, data: dict):
        instance = super().create_model_instance(data)
        instance.user_id = session_user_id(data.get(auth.SESSION_KEY))  # type: ignore[attr-defined]  # our model's column
        return instance

    def _get_session_from_db(self):
        from editlab.logins.backends import user_from_rows, user_select  # noqa: PLC0415  # models load late

        self.user_read = None
        key = self.session_key
        if key is None:  # no cookie: no row can match (Django's query would find none)
            self._session_key = None
            return None
        model = self.model
        connection = connections[router.db_for_read(model)]
        quote = connection.ops.quote_name
        meta = model._meta
        table = quote(meta.db_table)
        selected, user_id_column, groups = user_select(connection)
        users = quote(get_user_model()._meta.db_table)
        sql = (
            f"SELECT {table}.{quote('session_data')}, {selected} FROM {table} "
            f"LEFT JOIN {users} ON {user_id_column} = {table}.{quote('user_id')} {groups} "
            f"WHERE {table}.{quote('session_key')} = %s AND {table}.{quote('expire_date')} > %s"
        )
        now = meta.get_field("expire_date").get_db_prep_value(timezone.now(), connection)
        with connection.cursor() as cursor:
            cursor.execute(sql, [key, now])
            rows = cursor.fetchall()
        if not rows:
            self._session_key = None
            return None
        self.user_read = user_from_rows(connection, [row[1:] for row in rows])
        return model(session_key=key, session_data=rows[0][0])


def session_user_id(value: object) -> int | None:
    """The session data's user id as the column keeps it (None when it is not a plain id)."""
    try:
        number = int(str(value))
    except ValueError:
        return None
    return number if 0 < number <= limits.MAX_ID else None  # the backend's rule for an id (logins.backends)


def user_read_with_session(pk: int):
    """The user the request's session row joined, when the request's user is being read and the
    session's data names that same user; None otherwise (the backend then reads the user itself)."""
    store = _READING.get()
    user = getattr(store, "user_read", None)
    return user if user is not None and user.pk == pk else None


def get_user(request):
    """Django's auth.get_user for the request (cached on it, as Django's middleware does), with the
    request's session store known to the backend while it runs."""
    if not hasattr(request, "_cached_user"):
        token = _READING.set(request.session)
        try:
            request._cached_user = auth.get_user(request)
        finally:
            _READING.reset(token)
    return request._cached_user


class AuthenticationMiddleware(auth_middleware.AuthenticationMiddleware):
    """Django's, with the user read by `get_user` above (async views keep Django's `auser`)."""

    def process_request(self, request) -> None:
        super().process_request(request)
        request.user = SimpleLazyObject(lambda: get_user(request))
