"""Small database helpers shared by the apps."""

from django.db import connection
from django.db.models import Field


def column(field: object) -> str:
    """A concrete field's column, for raw SQL (the stubs allow None: non-concrete fields have none;
    get_field() may also return a relation's reverse side, which has no column)."""
    if not isinstance(field, Field) or field.column is None:
        raise ValueError(f"{field} has no column")
    return field.column


def refresh_planner_statistics(*tables: str) -> None:
    """ANALYZE tables after a bulk write, on PostgreSQL.

    Right after thousands of rows arrive, the planner still believes the tables are nearly
    empty (autovacuum analyzes them only later) and can pick a nested loop that turns a
    one-second query over a freshly imported study into minutes. SQLite needs nothing.
    """
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f'ANALYZE "{table}"')
