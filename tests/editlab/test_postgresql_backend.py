"""editlab.postgresql: Django's PostgreSQL backend whose per-request health check needs no round trip
on a quiet connection, and still replaces a connection the server has ended."""

import select
import time

import pytest
from django.db import connections

# serialized_rollback: like every transactional test here, leave the tables as the next one expects.
pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def connection():
    return connections["default"]


def _reused_at_a_new_request(connection) -> None:
    """What Django does to a kept connection when a request starts (CONN_HEALTH_CHECKS on)."""
    connection.health_check_enabled = True
    connection.health_check_done = False


def _backend_pid(connection) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_it_is_the_backend_in_use(connection):
    assert type(connection).__module__ == "editlab.postgresql.base"
    assert connection.vendor == "postgresql"


def test_a_quiet_connection_is_kept_without_a_query(connection, monkeypatch):
    pid = _backend_pid(connection)
    raw = connection.connection
    monkeypatch.setattr(connection, "is_usable", lambda: pytest.fail("the quiet connection was queried"))
    _reused_at_a_new_request(connection)
    connection.close_if_health_check_failed()
    assert connection.connection is raw and connection.health_check_done
    monkeypatch.undo()
    assert _backend_pid(connection) == pid


def test_a_connection_the_server_ended_is_replaced(connection):
    pid = _backend_pid(connection)
    other = connection.copy()
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
            assert cursor.fetchone() == (True,)
    finally:
        other.close()
    socket = connection.connection.pgconn.socket
    deadline = time.monotonic() + 10
    while not select.select([socket], [], [], 0.05)[0]:  # the server's goodbye reaches the socket
        assert time.monotonic() < deadline, "the terminated connection never became readable"
    _reused_at_a_new_request(connection)
    connection.close_if_health_check_failed()
    assert connection.connection is None  # closed: the next statement opens a new one
    assert _backend_pid(connection) != pid


def test_a_connection_inside_a_transaction_gets_djangos_check(connection, monkeypatch):
    checked = []
    monkeypatch.setattr(connection, "is_usable", lambda: checked.append(True) or True)
    connection.set_autocommit(False)
    try:
        _backend_pid(connection)  # the transaction has begun
        _reused_at_a_new_request(connection)
        connection.close_if_health_check_failed()
    finally:
        connection.rollback()
        connection.set_autocommit(True)
    assert checked == [True]
