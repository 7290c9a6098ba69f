"""Django's database sessions, read by one plain statement.

Every request of a logged-in user loads its session, and the ORM compiled that query anew each time:
~0.4 ms of CPU, a tenth of an editor event batch's (editlab/benchmarks/event_batch.py). Saving,
expiry, flushing and the table are Django's own (django.contrib.sessions.backends.db); only the read
is written by hand, with the same meaning: the row of this key, if it has not expired.
"""

from django.contrib.sessions.backends import db
from django.contrib.sessions.base_session import AbstractBaseSession
from django.db import connections, router
from django.utils import timezone


class SessionStore(db.SessionStore):
    def _get_session_from_db(self) -> AbstractBaseSession | None:
        key = self.session_key
        if key is None:  # no cookie: no row can match (Django's query would find none)
            self._session_key = None
            return None
        model = self.model
        connection = connections[router.db_for_read(model)]
        quote = connection.ops.quote_name
        meta = model._meta
        sql = "SELECT {} FROM {} WHERE {} = %s AND {} > %s".format(
            quote("session_data"), quote(meta.db_table), quote("session_key"), quote("expire_date")
        )
        now = meta.get_field("expire_date").get_db_prep_value(timezone.now(), connection)
        with connection.cursor() as cursor:
            cursor.execute(sql, [key, now])
            row = cursor.fetchone()
        if row is None:
            self._session_key = None
            return None
        return model(session_key=key, session_data=row[0])
