"""The metrics page's counts kept by the database as they change: the SQL of the triggers that keep them.

Two tables (metrics.models.CoveragePostEdits, CoverageValues) hold, per project and kind of item (has
references, has gold edits), how many submitted first-pass post-edits there are, and how many stored values
they have per (metric, variant, metric version): what metrics.selectors_coverage would otherwise count by
reading every post-edit and every value. Both are sums over the join value -> post-edit -> assignment ->
item, so a write to any one of those tables changes them by the contribution of the rows it adds minus
that of the rows it removes (an update: both), each joined with the other tables as they are: the triggers
here add that difference, on every write path (the ORM, the compute store's upsert, raw SQL, COPY, the
deletion collector in any order). A count that falls to zero keeps its row (n = 0), read as nothing.

SQLite has row triggers only: one per table and operation, the row's difference upserted. PostgreSQL has
statement triggers with transition tables: one grouped upsert per statement, its keys in order (two
transactions never take the count rows' locks in opposite orders).

The item's kind follows metrics.selectors_coverage's rule (_EMPTY, _NO_GOLD), written in each vendor's SQL
as Django compiles that filter: on SQLite a comparison of the stored JSON text, on PostgreSQL of jsonb.

Migration metrics 0005 creates the triggers from this module and fills the tables (`fill_sql`); a change
here needs a new migration that drops and recreates them. SQLite drops a table's triggers when Django's
schema editor rebuilds the table (most column changes do): after every `migrate`, `heal` recreates any
missing trigger and recounts (metrics.apps).
"""

from dataclasses import dataclass
from typing import Any

POST_EDITS = "metrics_coveragepostedits"
VALUES = "metrics_coveragevalues"
_KIND = ("project_id", "has_references", "has_gold")
_VALUE_KEY = ("metric", "variant", "metric_version")

_EMPTY_JSON = ("null", '""', "[]", "{}")
_NO_GOLD_JSON = (*_EMPTY_JSON, "0", "false")


def _holds(column: str, values: tuple[str, ...], vendor: str) -> str:
    if vendor == "postgresql":
        listed = ", ".join(f"'{value}'::jsonb" for value in values)
        return f"(NOT ({column} IS NULL OR {column} IN ({listed})))"
    # A chain of comparisons, as Django writes the filter: SQLite builds a table for an IN list on every
    # run of a trigger's statement, which costs a stored value several times the chain.
    compared = " OR ".join(f"{column} = '{value}'" for value in values)
    return f"(NOT ({column} IS NULL OR {compared}))"


def _kind(item: str, vendor: str) -> str:
    """project, has references, has gold edits of the item aliased `item`."""
    references = _holds(item + '."references"', _EMPTY_JSON, vendor)
    return f"{item}.project_id, {references}, {_holds(item + '.gold_edits', _NO_GOLD_JSON, vendor)}"


_COUNTED = "{a}.status = 'submitted' AND {a}.reviews_id IS NULL"


@dataclass(frozen=True)
class _Table:
    """A table the counts depend on: its columns read, and the joins from its rows `r` to the post-edits
    (and their values) they count; `item` and `assignment` name the aliases of those rows."""

    name: str
    columns: tuple[str, ...]
    post_edits: str | None  # FROM ... of its rows' post-edits (None: it changes no post-edit count)
    values: str  # FROM ... of its rows' values, `v`
    item: str
    assignment: str
    # SQLite: what a row (`{row}`: NEW or OLD) must meet to count at all, and to count values; a cheap test
    # in the trigger's WHEN, so that an import's rows (no post-edit yet, no value yet) skip the grouped upserts.
    guard: str | None = None
    values_guard: str | None = None


_A, _I, _P, _V = "annotations_assignment", "annotations_item", "annotations_postedit", "metrics_metricvalue"

TABLES = (
    _Table(
        _V,
        ("post_edit_id", "metric", "variant", "metric_version"),
        None,
        f"{{rows}} v JOIN {_P} p ON p.id = v.post_edit_id JOIN {_A} a ON a.id = p.assignment_id "
        f"JOIN {_I} i ON i.id = a.item_id",
        "i",
        "a",
    ),
    _Table(
        _P,
        ("id", "assignment_id"),
        f"{{rows}} r JOIN {_A} a ON a.id = r.assignment_id JOIN {_I} i ON i.id = a.item_id",
        f"{{rows}} r JOIN {_V} v ON v.post_edit_id = r.id JOIN {_A} a ON a.id = r.assignment_id "
        f"JOIN {_I} i ON i.id = a.item_id",
        "i",
        "a",
        values_guard=f"EXISTS (SELECT 1 FROM {_V} WHERE post_edit_id = {{row}}.id)",
    ),
    _Table(
        _A,
        ("id", "item_id", "status", "reviews_id"),
        f"{{rows}} r JOIN {_P} p ON p.assignment_id = r.id JOIN {_I} i ON i.id = r.item_id",
        f"{{rows}} r JOIN {_P} p ON p.assignment_id = r.id JOIN {_V} v ON v.post_edit_id = p.id "
        f"JOIN {_I} i ON i.id = r.item_id",
        "i",
        "r",
        guard=f"{_COUNTED.format(a='{row}')} AND EXISTS (SELECT 1 FROM {_P} WHERE assignment_id = {{row}}.id)",
        values_guard=(
            f"{_COUNTED.format(a='{row}')} AND EXISTS (SELECT 1 FROM {_P} p JOIN {_V} v ON v.post_edit_id = p.id "
            f"WHERE p.assignment_id = {{row}}.id)"
        ),
    ),
    _Table(
        _I,
        ("id", "project_id", '"references"', "gold_edits"),
        f"{{rows}} r JOIN {_A} a ON a.item_id = r.id JOIN {_P} p ON p.assignment_id = a.id",
        f"{{rows}} r JOIN {_A} a ON a.item_id = r.id JOIN {_P} p ON p.assignment_id = a.id "
        f"JOIN {_V} v ON v.post_edit_id = p.id",
        "r",
        "a",
        guard=f"EXISTS (SELECT 1 FROM {_A} WHERE item_id = {{row}}.id)",
    ),
)


def _upsert(target: str, key: tuple[str, ...], select: str, vendor: str) -> str:
    columns = ", ".join((*key, "n"))
    conflict = ", ".join(key)
    order = "" if vendor == "sqlite" else f" ORDER BY {', '.join(str(n + 1) for n in range(len(key)))}"
    return (
        f"INSERT INTO {target} ({columns}) {select}{order} "
        f"ON CONFLICT ({conflict}) DO UPDATE SET n = {target}.n + EXCLUDED.n"
    )


def _deltas(table: _Table, rows: str, sign: int | None, vendor: str) -> list[str]:
    """The upserts adding the contribution of `rows` (a row source with the table's columns) to the counts:
    each row's times `sign`, or, when sign is None, times the row's own `s` (+1 or -1)."""
    amount = "SUM(s)" if sign is None else f"{sign} * COUNT(*)"
    having = " HAVING SUM(s) <> 0" if sign is None else ""
    counted = _COUNTED.format(a=table.assignment)
    kind = _kind(table.item, vendor)
    statements = []
    if table.post_edits is not None:
        select = (
            f"SELECT {kind}, {amount} FROM {table.post_edits.format(rows=rows)} WHERE {counted} "
            f"GROUP BY 1, 2, 3{having}"
        )
        statements.append(_upsert(POST_EDITS, _KIND, select, vendor))
    select = (
        f"SELECT {kind}, v.metric, v.variant, v.metric_version, {amount} FROM {table.values.format(rows=rows)} "
        f"WHERE {counted} GROUP BY 1, 2, 3, 4, 5, 6{having}"
    )
    statements.append(_upsert(VALUES, (*_KIND, *_VALUE_KEY), select, vendor))
    return statements


def _trigger_name(table: _Table, operation: str) -> str:
    return f"{table.name}_coverage_{operation.lower()}"


def _row(table: _Table, which: str, sign: int | None) -> str:
    columns = ", ".join(f"{which}.{column} AS {column}" for column in table.columns)
    return f"SELECT {columns}" + ("" if sign is None else f", {sign} AS s")


def _value_row_sql(which: str, sign: int) -> str:
    """A stored value's own count (SQLite, one row): its post-edit found by id, no grouping (the compute
    store's every value runs it)."""
    select = (
        f"SELECT {_kind('i', 'sqlite')}, {which}.metric, {which}.variant, {which}.metric_version, {sign} "
        f"FROM {_P} p JOIN {_A} a ON a.id = p.assignment_id JOIN {_I} i ON i.id = a.item_id "
        f"WHERE p.id = {which}.post_edit_id AND {_COUNTED.format(a='a')}"
    )
    return _upsert(VALUES, (*_KIND, *_VALUE_KEY), select, "sqlite")


def _post_edit_row_sql(which: str, sign: int) -> str:
    """A post-edit's own count (SQLite, one row): its assignment found by id, no grouping (an import's every
    post-edit runs it)."""
    select = (
        f"SELECT {_kind('i', 'sqlite')}, {sign} FROM {_A} a JOIN {_I} i ON i.id = a.item_id "
        f"WHERE a.id = {which}.assignment_id AND {_COUNTED.format(a='a')}"
    )
    return _upsert(POST_EDITS, _KIND, select, "sqlite")


def _sqlite_triggers(table: _Table) -> list[str]:
    """Per operation, a trigger for the post-edit count and one for the value counts (one only for a value's
    table), each skipped by its WHEN when the row cannot change it."""
    changed = " OR ".join(f"OLD.{column} IS NOT NEW.{column}" for column in table.columns)
    rows = {
        "INSERT": (f"({_row(table, 'NEW', None)})", 1),
        "DELETE": (f"({_row(table, 'OLD', None)})", -1),
        "UPDATE": (f"({_row(table, 'NEW', 1)} UNION ALL {_row(table, 'OLD', -1)})", None),
    }
    statements = []
    for operation, (source, sign) in rows.items():
        parts: list[tuple[str, str | None, list[str]]]  # (name suffix, WHEN guard, statements)
        if table.name == _V:
            parts = [("", None, [_value_row_sql("OLD" if operation == "DELETE" else "NEW", sign or 1)])]
            if operation == "UPDATE":
                parts = [("", None, _deltas(table, source, None, "sqlite"))]
        else:
            post_edits, values = _deltas(table, source, sign, "sqlite")
            if table.name == _P and sign is not None:
                post_edits = _post_edit_row_sql("NEW" if sign > 0 else "OLD", sign)
            parts = [("", table.guard, [post_edits]), ("_values", table.values_guard or table.guard, [values])]
        for suffix, guard, body in parts:
            conditions = []
            if operation == "UPDATE":
                conditions.append(f"({changed})")
            if guard is not None:
                which = {"INSERT": ["NEW"], "DELETE": ["OLD"], "UPDATE": ["OLD", "NEW"]}[operation]
                conditions.append("(" + " OR ".join(f"({guard.format(row=w)})" for w in which) + ")")
            when = f" WHEN {' AND '.join(conditions)}" if conditions else ""
            statements.append(
                f"CREATE TRIGGER {_trigger_name(table, operation)}{suffix} AFTER {operation} ON {table.name} "
                f"FOR EACH ROW{when} BEGIN {'; '.join(body)}; END"
            )
    return statements


def _postgres_triggers(table: _Table) -> list[str]:
    selected = ", ".join(table.columns)
    sources = {
        "INSERT": ("REFERENCING NEW TABLE AS new_rows", f"(SELECT {selected}, 1 AS s FROM new_rows)"),
        "DELETE": ("REFERENCING OLD TABLE AS old_rows", f"(SELECT {selected}, -1 AS s FROM old_rows)"),
        "UPDATE": (
            "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
            f"(SELECT {selected}, 1 AS s FROM new_rows UNION ALL SELECT {selected}, -1 AS s FROM old_rows)",
        ),
    }
    statements = []
    for operation, (referencing, rows) in sources.items():
        name = _trigger_name(table, operation)
        body = "; ".join(_deltas(table, rows, None, "postgresql"))
        statements.append(
            f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body}; RETURN NULL; END $$"
        )
        statements.append(
            f"CREATE TRIGGER {name} AFTER {operation} ON {table.name} {referencing} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {name}()"
        )
    return statements


_NEW_PROJECT = "annotations_project_coverage_insert"


def _new_project_sql(vendor: str) -> list[str]:
    """A new project has no counts: rows left under its id (by a flush that deleted the projects before the
    rows counted, then reset the ids) are removed."""
    if vendor == "postgresql":
        body = "; ".join(
            f"DELETE FROM {target} WHERE project_id IN (SELECT id FROM new_rows)" for target in (POST_EDITS, VALUES)
        )
        return [
            f"CREATE FUNCTION {_NEW_PROJECT}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body}; RETURN NULL; END $$",
            f"CREATE TRIGGER {_NEW_PROJECT} AFTER INSERT ON annotations_project REFERENCING NEW TABLE AS new_rows "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {_NEW_PROJECT}()",
        ]
    body = "; ".join(f"DELETE FROM {target} WHERE project_id = NEW.id" for target in (POST_EDITS, VALUES))
    return [f"CREATE TRIGGER {_NEW_PROJECT} AFTER INSERT ON annotations_project FOR EACH ROW BEGIN {body}; END"]


def create_sql(vendor: str) -> list[str]:
    """The triggers (and on PostgreSQL their functions) keeping the counts, on `vendor` (Django's name)."""
    make = _postgres_triggers if vendor == "postgresql" else _sqlite_triggers
    return [statement for table in TABLES for statement in make(table)] + _new_project_sql(vendor)


def drop_sql(vendor: str) -> list[str]:
    statements = []
    for table in TABLES:
        for operation in ("INSERT", "DELETE", "UPDATE"):
            name = _trigger_name(table, operation)
            if vendor == "postgresql":
                statements += [f"DROP TRIGGER IF EXISTS {name} ON {table.name}", f"DROP FUNCTION IF EXISTS {name}()"]
            else:
                statements += [f"DROP TRIGGER IF EXISTS {name}", f"DROP TRIGGER IF EXISTS {name}_values"]
    if vendor == "postgresql":
        return [
            *statements,
            f"DROP TRIGGER IF EXISTS {_NEW_PROJECT} ON annotations_project",
            f"DROP FUNCTION IF EXISTS {_NEW_PROJECT}()",
        ]
    return [*statements, f"DROP TRIGGER IF EXISTS {_NEW_PROJECT}"]


def fill_sql(vendor: str) -> list[str]:
    """The counts recounted from every row there is (the tables emptied first)."""
    kind = _kind("i", vendor)
    counted = _COUNTED.format(a="a")
    joins = f"JOIN {_A} a ON a.id = p.assignment_id JOIN {_I} i ON i.id = a.item_id"
    return [
        f"DELETE FROM {POST_EDITS}",
        f"DELETE FROM {VALUES}",
        f"INSERT INTO {POST_EDITS} ({', '.join((*_KIND, 'n'))}) "
        f"SELECT {kind}, COUNT(*) FROM {_P} p {joins} WHERE {counted} GROUP BY 1, 2, 3",
        f"INSERT INTO {VALUES} ({', '.join((*_KIND, *_VALUE_KEY, 'n'))}) "
        f"SELECT {kind}, v.metric, v.variant, v.metric_version, COUNT(*) FROM {_V} v "
        f"JOIN {_P} p ON p.id = v.post_edit_id {joins} WHERE {counted} "
        "GROUP BY 1, 2, 3, 4, 5, 6",
    ]


def trigger_names(vendor: str) -> set[str]:
    names = {_trigger_name(table, operation) for table in TABLES for operation in ("INSERT", "DELETE", "UPDATE")}
    if vendor != "postgresql":  # a second trigger, for the values, on the tables that count post-edits too
        names |= {
            f"{_trigger_name(t, op)}_values" for t in TABLES if t.name != _V for op in ("INSERT", "DELETE", "UPDATE")
        }
    return names | {_NEW_PROJECT}


def present_triggers(connection: Any) -> set[str]:
    """The count triggers the database holds (`connection`: Django's)."""
    if connection.vendor == "postgresql":
        sql = "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal"
    else:
        sql = "SELECT name FROM sqlite_master WHERE type = 'trigger'"
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return {name for (name,) in cursor.fetchall()} & trigger_names(connection.vendor)


def heal(connection: Any) -> bool:
    """Recreate the triggers and recount, in one transaction, if any trigger is missing (the count tables
    present); whether it did."""
    from django.db import transaction  # noqa: PLC0415  # the SQL above needs no Django

    if POST_EDITS not in connection.introspection.table_names() or present_triggers(connection) == trigger_names(
        connection.vendor
    ):
        return False
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        for statement in [*drop_sql(connection.vendor), *create_sql(connection.vendor), *fill_sql(connection.vendor)]:
            cursor.execute(statement)
    return True
