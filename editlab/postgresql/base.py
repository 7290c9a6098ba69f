"""Django's PostgreSQL backend with a health check that needs no round trip when nothing is wrong.

With CONN_HEALTH_CHECKS, Django checks a reused connection at the start of every request by
running `SELECT 1`: a round trip that costs the app ~0.09 ms and PostgreSQL ~0.05 ms of CPU, on
every editor event batch (editlab/benchmarks/event_batch.py). A server that ends a connection
(restart, pg_terminate_backend, idle_session_timeout) sends its goodbye and closes the socket, so
an idle connection whose socket has nothing to read is as healthy as the check can tell; anything
readable, or any other state, falls back to Django's check.
"""

import select

from django.db.backends.postgresql.base import DatabaseWrapper as PostgresDatabaseWrapper
from psycopg import pq


class DatabaseWrapper(PostgresDatabaseWrapper):
    # Set by Django's BaseDatabaseWrapper (missing from or untyped in django-stubs).
    health_check_enabled: bool
    health_check_done: bool

    def close_if_health_check_failed(self) -> None:
        if self.connection is not None and self.health_check_enabled and not self.health_check_done:
            if self._idle_and_quiet():
                self.health_check_done = True
                return
        super().close_if_health_check_failed()

    def _idle_and_quiet(self) -> bool:
        """Whether the connection is open, outside a transaction, and the server sent nothing since."""
        connection = self.connection
        if connection is None or connection.closed or connection.broken:
            return False
        pgconn = connection.pgconn
        if pgconn.status != pq.ConnStatus.OK or pgconn.transaction_status != pq.TransactionStatus.IDLE:
            return False
        try:
            readable, _, _ = select.select([pgconn.socket], [], [], 0)
        except (OSError, ValueError):  # the socket is gone
            return False
        return not readable
