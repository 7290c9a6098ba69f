"""Bulk inserts of imported rows without model instances or the ORM's per-value compilation.

An import of a million post-edits spends most of its time in QuerySet.bulk_create preparing each
value of each instance for the database. `Inserter` prepares a model's columns once: the columns
a row gives are passed as they are (text, numbers, ids) or adapted by the backend (JSON); every
other column takes the value bulk_create would give it (its default, the time for auto_now and
auto_now_add, or the constant given for the whole insert), prepared once.

On PostgreSQL the rows go through COPY: a multi-row INSERT of 500 rows is a query psycopg converts
anew each time (its placeholders are split and renumbered in Python), which cost a third of an
import's time there. The new primary keys are drawn from the table's sequence first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.db import connections, models, router
from django.db.models.fields import NOT_PROVIDED
from django.utils import timezone

# Rows per statement where the backend sets no bound on a statement's parameters (PostgreSQL).
ROWS_PER_STATEMENT = 500


class Inserter:
    """INSERT rows of `model`: each row a tuple of the values of `given` (attnames), in that order."""

    def __init__(self, model: type[models.Model], given: Sequence[str], constants: dict[str, Any] | None = None):
        self.db = router.db_for_write(model)
        connection = connections[self.db]
        constants = constants or {}
        fields = [f for f in model._meta.concrete_fields if not isinstance(f, models.AutoField | models.BigAutoField)]
        by_attname = {f.attname: f for f in fields}
        unknown = [name for name in [*given, *constants] if name not in by_attname]
        if unknown:
            raise ValueError(f"{model.__name__} has no column {', '.join(unknown)}")
        now = timezone.now()
        self._fixed: list[Any] = []
        fixed_names: list[str] = []
        for f in fields:
            if f.attname in given:
                continue
            if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
                value = now
            elif f.attname in constants:
                value = constants[f.attname]
            elif f.has_default() or f.db_default is NOT_PROVIDED:
                value = f.get_default()
            else:
                continue  # the database's own default
            fixed_names.append(f.attname)
            self._fixed.append(f.get_db_prep_save(value, connection))
        self._prepare: list[Callable[[Any], Any] | None] = [_preparer(by_attname[name], connection) for name in given]
        columns = [str(by_attname[name].column) for name in [*given, *fixed_names]]
        quote = connection.ops.quote_name
        table = quote(model._meta.db_table)
        self._head = f"INSERT INTO {table} ({', '.join(map(quote, columns))}) VALUES "
        self._row = "(" + ", ".join(["%s"] * len(columns)) + ")"
        assert model._meta.pk is not None
        pk = str(model._meta.pk.column)
        self._returning = f" RETURNING {quote(pk)}"
        self._copy = connection.vendor == "postgresql"
        self._copy_sql = f"COPY {table} ({', '.join(map(quote, columns))}) FROM STDIN"
        self._copy_with_pk_sql = f"COPY {table} ({', '.join(map(quote, [pk, *columns]))}) FROM STDIN"
        self._next_pks = (
            f"SELECT nextval(pg_get_serial_sequence('{model._meta.db_table}', '{pk}')) FROM generate_series(1, %s)"
        )
        limit = connection.features.max_query_params
        self._batch = max(1, limit // len(columns)) if limit else ROWS_PER_STATEMENT

    def _params(self, row: Sequence[Any]) -> list[Any]:
        values = [
            value if prepare is None else prepare(value) for prepare, value in zip(self._prepare, row, strict=True)
        ]
        values.extend(self._fixed)
        return values

    def insert(self, rows: Iterable[Sequence[Any]]) -> None:
        """Insert the rows: COPY on PostgreSQL, elsewhere one statement executed for each (the driver's loop)."""
        with connections[self.db].cursor() as cursor:
            if self._copy:
                with cursor.copy(self._copy_sql) as copy:
                    for row in rows:
                        copy.write_row(self._params(row))
            else:
                cursor.executemany(self._head + self._row, [self._params(row) for row in rows])

    def insert_returning(self, rows: Iterable[Sequence[Any]]) -> list[int]:
        """Insert the rows and return their new primary keys, in the rows' order (as bulk_create reads
        them back: SQLite >= 3.35 returns the rows of a multi-row INSERT in order; on PostgreSQL the keys
        are drawn from the sequence, then given to COPY)."""
        if not self._copy:
            return self._run(rows, returning=True)
        rows = list(rows)
        if not rows:
            return []
        with connections[self.db].cursor() as cursor:
            cursor.execute(self._next_pks, [len(rows)])
            pks = [pk for (pk,) in cursor.fetchall()]
            with cursor.copy(self._copy_with_pk_sql) as copy:
                for pk, row in zip(pks, rows, strict=True):
                    copy.write_row([pk, *self._params(row)])
        return pks

    def _run(self, rows: Iterable[Sequence[Any]], *, returning: bool) -> list[int]:
        ids: list[int] = []
        batch: list[Any] = []
        count = 0
        with connections[self.db].cursor() as cursor:
            for row in rows:
                batch.extend(self._params(row))
                count += 1
                if count == self._batch:
                    ids.extend(self._execute(cursor, batch, count, returning))
                    batch, count = [], 0
            if count:
                ids.extend(self._execute(cursor, batch, count, returning))
        return ids

    def _execute(self, cursor, params: list[Any], count: int, returning: bool) -> list[int]:
        sql = self._head + ", ".join([self._row] * count) + (self._returning if returning else "")
        cursor.execute(sql, params)
        return [pk for (pk,) in cursor.fetchall()] if returning else []


def _preparer(field: models.Field, connection) -> Callable[[Any], Any] | None:
    """How a row's value of `field` becomes a parameter: None (as it is: text, numbers, ids, None)
    or the field's own preparation."""
    if isinstance(field, models.JSONField):
        adapt, encoder = connection.ops.adapt_json_value, field.encoder
        return lambda value: None if value is None else adapt(value, encoder)
    if isinstance(field, models.CharField | models.TextField | models.IntegerField | models.BooleanField):
        return None  # IntegerField covers its Positive-, Big- and Small- kinds
    if isinstance(field, models.ForeignKey):
        return None  # a row gives the related primary key
    return lambda value: field.get_db_prep_save(value, connection)
