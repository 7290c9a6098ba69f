"""The event log's storage: the raw SQL of the editor's hot paths (ingestion, autosave). Reading a
log back is annotations/editing/logs.py.

These run on every event batch and autosave, so their statements are written by hand (what the ORM
cost, measured: editlab/benchmarks/results/plain_sql.md). Everything here runs inside the caller's transaction, after the caller has
locked the post-edit row (annotations/editing/locks.py); table and column names come from the
models' metadata and are quoted by the backend, values always go as parameters.
"""

import functools
import json
import uuid
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import DEFAULT_DB_ALIAS, connection

from annotations.editing.errors import UnknownVisit
from annotations.log_event import LogEvent
from annotations.models import Assignment, EditEvent, PostEdit, Visit
from editlab import limits


def post_edit_tables() -> tuple[str, str]:
    """The post-edit and assignment tables' names, quoted for the backend."""
    quote = connection.ops.quote_name
    return quote(PostEdit._meta.db_table), quote(Assignment._meta.db_table)


def owned_post_edit(*, post_edit_id: int, annotator_id: int) -> PostEdit | None:
    """The post-edit `post_edit_id` if it is `annotator_id`'s (only its id and assignment id loaded), else None.

    Every editor request starts with this ownership check, before the body is read; the services
    re-read and lock what they need. One plain SQL statement (no ORM query compilation on this
    per-request path).
    """
    # Ids beyond what a BigAutoField holds name no row (and would make PostgreSQL refuse the query).
    if not (0 < post_edit_id <= limits.MAX_ID and 0 < annotator_id <= limits.MAX_ID):
        return None
    post_edits, assignments = post_edit_tables()
    quote = connection.ops.quote_name
    sql = (
        f"SELECT {post_edits}.{quote('id')}, {post_edits}.{quote('assignment_id')} FROM {post_edits} "
        f"INNER JOIN {assignments} ON {assignments}.{quote('id')} = {post_edits}.{quote('assignment_id')} "
        f"WHERE {post_edits}.{quote('id')} = %s AND {assignments}.{quote('annotator_id')} = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [post_edit_id, annotator_id])
        row = cursor.fetchone()
    return None if row is None else PostEdit.from_db(DEFAULT_DB_ALIAS, ["id", "assignment_id"], row)


def store_draft(post_edit_id: int, *, text: str, version: int, now: datetime) -> None:
    """Write the draft and its version (the caller holds the row's lock and checked the old version)."""
    post_edits = post_edit_tables()[0]
    quote = connection.ops.quote_name
    updated = PostEdit._meta.get_field("updated").get_db_prep_save(now, connection)
    sql = (
        f"UPDATE {post_edits} SET {quote('draft_text')} = %s, {quote('version')} = %s, {quote('updated')} = %s "
        f"WHERE {quote('id')} = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [text, version, updated, post_edit_id])


def _page_param(post_edit: PostEdit, page_id: uuid.UUID | str):
    try:
        return Visit._meta.get_field("page_id").get_db_prep_value(page_id, connection)
    except (ValueError, ValidationError):
        raise UnknownVisit(f"page_id {page_id} is not a page load of post-edit {post_edit.pk}") from None


def advance_visit(post_edit: PostEdit, page_id: uuid.UUID | str, now: datetime, events: list[LogEvent]) -> int | None:
    """The hot path's one statement for the page load: mark it seen now and, when the batch (seq
    order) lies wholly after the page load's stored events in seq and in client time, make its last
    event the page load's last; returns the visit id. None when the batch does not lie after them
    (a re-sent or late batch, or a time that runs backwards: the caller looks closer) or the page
    is unknown. One round trip: the read and the update are one statement."""
    sql, params = advance_visit_sql(post_edit, page_id, now, events)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else row[0]


def advance_visit_sql(
    post_edit: PostEdit, page_id: uuid.UUID | str, now: datetime, events: list[LogEvent], *, also: str = ""
) -> tuple[str, list]:
    """advance_visit's UPDATE and its parameters; `also` is one more condition (SQL without parameters)."""
    meta = Visit._meta
    quote = connection.ops.quote_name
    table, seen, post_edit_id, page, last_seq, last_t, pk = (
        quote(name)
        for name in (meta.db_table, "last_seen_at", "post_edit_id", "page_id", "last_seq", "last_t_ms", "id")
    )
    params = [meta.get_field("last_seen_at").get_db_prep_save(now, connection)]
    where = [post_edit.pk, _page_param(post_edit, page_id)]
    advance = condition = ""
    if events:
        first, last = events[0], events[-1]
        advance = f", {last_seq} = %s, {last_t} = %s"
        params += [last.seq, last.t_ms]
        condition = f" AND ({last_seq} IS NULL OR ({last_seq} < %s AND {last_t} <= %s))"
        where += [first.seq, first.t_ms]
    sql = (
        f"UPDATE {table} SET {seen} = %s{advance} WHERE {post_edit_id} = %s AND {page} = %s{condition}{also} "
        f"RETURNING {pk}"
    )
    return sql, params + where


def visit_position(post_edit: PostEdit, page_id: uuid.UUID | str) -> tuple[int, int | None, float | None]:
    """(visit id, last seq, last t) of a page load of this post-edit, else UnknownVisit."""
    found = (
        Visit.objects.filter(post_edit=post_edit, page_id=_page_param(post_edit, page_id))
        .values_list("id", "last_seq", "last_t_ms")
        .first()
    )
    if found is None:
        raise UnknownVisit(f"page_id {page_id} is not a page load of post-edit {post_edit.pk}")
    return found


def stored_times_around(post_edit_id: int, visit_id: int, low: int, high: int) -> list[tuple[int, float]]:
    """(seq, t) of the page load's stored events from the last one before seq `low` to the first one
    after seq `high`, in seq order (the slow path of the time check: batches that arrive late)."""
    stored = EditEvent.objects.filter(post_edit_id=post_edit_id, visit_id=visit_id)
    below = stored.filter(seq__lt=low).order_by("-seq").values_list("seq", "t_ms").first()
    inside = list(stored.filter(seq__range=(low, high)).order_by("seq").values_list("seq", "t_ms"))
    above = stored.filter(seq__gt=high).order_by("seq").values_list("seq", "t_ms").first()
    return [*([below] if below else []), *inside, *([above] if above else [])]


# The columns stored as the LogEvent carries them (same names on both sides), written by
# event_row and read back by annotations/editing/logs.py in this order.
EVENT_VALUE_COLUMNS = (
    "key",
    "code",
    "modifiers",
    "repeat",
    "input_type",
    "sel_start",
    "sel_end",
    "data",
)

# Every column of EditEvent but the id, in the order of event_row. A new EditEvent field must be
# added here too (the ingestion tests fail until it is).
EVENT_INSERT_COLUMNS = (
    "post_edit_id",
    "visit_id",
    "seq",
    "t_ms",
    "received_at",
    "kind",
    *EVENT_VALUE_COLUMNS,
    "length_after",
    "extra",
)


def event_extra(event: LogEvent) -> dict:
    """The rarely set fields, kept in EditEvent.extra under the wire's names (the stored format)."""
    extra: dict = {}
    if event.state:
        extra["state"] = event.state
    if event.source:
        extra["src"] = event.source
    if event.full_text:
        extra["f"] = True
    return extra


def event_row(post_edit_id: int, visit_id: int, event: LogEvent, received_at, extra_field) -> tuple:
    """One row for EVENT_INSERT_COLUMNS from a validated event (its values already have the column types)."""
    return (
        post_edit_id,
        visit_id,
        event.seq,
        event.t_ms,
        received_at,
        event.kind,
        event.key,
        event.code,
        event.modifiers,
        event.repeat,
        event.input_type,
        event.sel_start,
        event.sel_end,
        event.data,
        event.length_after,
        extra_field.get_db_prep_save(event_extra(event), connection),
    )


# The columns a batch fills per event, as the PostgreSQL insert reads them from its JSON parameter
# (the rest, post_edit_id, visit_id and received_at, are the same for the whole batch).
_JSON_COLUMNS = (
    ("seq", "integer"),
    ("t_ms", "double precision"),
    ("kind", "text"),
    ("key", "text"),
    ("code", "text"),
    ("modifiers", "smallint"),
    ("repeat", "boolean"),
    ("input_type", "text"),
    ("sel_start", "integer"),
    ("sel_end", "integer"),
    ("data", "text"),
    ("length_after", "integer"),
    ("extra", "jsonb"),
)


@functools.cache
def _json_insert_sql(*, skip_taken: bool = False) -> str:
    quote = connection.ops.quote_name
    columns = ", ".join(quote(name) for name in EVENT_INSERT_COLUMNS)
    values = ", ".join(
        "%s" if name in ("post_edit_id", "visit_id", "received_at") else f"r.{quote(name)}"
        for name in EVENT_INSERT_COLUMNS
    )
    record = ", ".join(f"{quote(name)} {kind}" for name, kind in _JSON_COLUMNS)
    return (
        f"INSERT INTO {quote(EditEvent._meta.db_table)} ({columns}) SELECT {values} "
        f"FROM json_to_recordset(%s) AS r({record})" + (_skip_taken() if skip_taken else "")
    )


def _skip_taken() -> str:
    """The INSERT's tail that leaves out the events whose seq is taken (the unique (post_edit, seq)
    constraint) and returns the seqs inserted."""
    quote = connection.ops.quote_name
    return f" ON CONFLICT ({quote('post_edit_id')}, {quote('seq')}) DO NOTHING RETURNING {quote('seq')}"


def _insert_from_json(post_edit: PostEdit, visit_id: int, events: list[LogEvent], received_at) -> None:
    """PostgreSQL: the whole batch as one JSON parameter of one INSERT ... SELECT.

    The statement is always the same four parameters, and json.dumps (C) writes
    the values; PostgreSQL reads them back exactly (floats as repr, text as UTF-8).
    """
    with connection.cursor() as cursor:
        cursor.execute(_json_insert_sql(), [post_edit.pk, visit_id, received_at, _json_rows(events)])


def _json_rows(events: list[LogEvent]) -> str:
    rows = [
        {
            "seq": event.seq,
            "t_ms": event.t_ms,
            "kind": event.kind,
            "key": event.key,
            "code": event.code,
            "modifiers": event.modifiers,
            "repeat": event.repeat,
            "input_type": event.input_type,
            "sel_start": event.sel_start,
            "sel_end": event.sel_end,
            "data": event.data,
            "length_after": event.length_after,
            "extra": event_extra(event),
        }
        for event in events
    ]
    return json.dumps(rows, ensure_ascii=False, allow_nan=False)


def insert_events(post_edit: PostEdit, visit_id: int, events: list[LogEvent], now: datetime) -> None:
    """INSERT the events with one statement per batch (SQLite: one per parameter limit's worth).

    No model instances and no INSERT per row; only the two
    values that need a backend adapter (the time, once; the JSON `extra`) go through their fields.
    """
    if not events:
        return
    meta = EditEvent._meta
    received_at = meta.get_field("received_at").get_db_prep_save(now, connection)
    if connection.vendor == "postgresql":
        _insert_from_json(post_edit, visit_id, events, received_at)
        return
    _insert_rows(post_edit, visit_id, events, received_at)


def _insert_rows(
    post_edit: PostEdit, visit_id: int, events: list[LogEvent], received_at, *, skip_taken: bool = False
) -> set[int]:
    """One multi-row INSERT ... VALUES per parameter limit's worth of events (SQLite's path);
    with skip_taken, leave out the events whose seq is taken and return the seqs inserted."""
    meta = EditEvent._meta
    quote = connection.ops.quote_name
    extra_field = meta.get_field("extra")
    rows = [event_row(post_edit.pk, visit_id, event, received_at, extra_field) for event in events]
    head = "INSERT INTO {} ({}) VALUES ".format(
        quote(meta.db_table), ", ".join(quote(name) for name in EVENT_INSERT_COLUMNS)
    )
    tail = _skip_taken() if skip_taken else ""
    placeholders = "({})".format(", ".join(["%s"] * len(EVENT_INSERT_COLUMNS)))
    fields = [meta.get_field(name.removesuffix("_id")) for name in EVENT_INSERT_COLUMNS]
    size = max(1, connection.ops.bulk_batch_size(fields, rows))  # SQLite caps the parameters
    inserted: set[int] = set()
    with connection.cursor() as cursor:
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            cursor.execute(
                head + ", ".join([placeholders] * len(chunk)) + tail, [value for row in chunk for value in row]
            )
            if skip_taken:
                inserted.update(value for (value,) in cursor.fetchall())
    return inserted


def insert_following_events(
    post_edit: PostEdit, visit_id: int, events: list[LogEvent], now: datetime
) -> tuple[int, set[int]]:
    """The common batch's insert: one that follows its page load's stored events, so that a seq
    already stored can only be another page load's. INSERTs the events whose seq is free and
    returns the post-edit's top seq before them (-1: none) and the seqs inserted; the caller refuses
    the batch (and so rolls the insert back) when some were taken.

    PostgreSQL: one statement (the top seq is read in a CTE, which sees the table as it was before
    the INSERT), instead of reading the batch's seqs first and inserting after: one round trip
    less per batch. SQLite: the top seq, then the INSERT.
    """
    quote = connection.ops.quote_name
    table, seq, post_edit_column = (quote(name) for name in (EditEvent._meta.db_table, "seq", "post_edit_id"))
    top = f"SELECT {seq} FROM {table} WHERE {post_edit_column} = %s ORDER BY {seq} DESC LIMIT 1"
    received_at = EditEvent._meta.get_field("received_at").get_db_prep_save(now, connection)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and events:
            cursor.execute(
                f"WITH top_row AS ({top}), inserted AS ({_json_insert_sql(skip_taken=True)}) "
                f"SELECT 0, {seq} FROM top_row UNION ALL SELECT 1, {seq} FROM inserted",
                [post_edit.pk, post_edit.pk, visit_id, received_at, _json_rows(events)],
            )
            rows = cursor.fetchall()
            tops = [value for part, value in rows if part == 0]
            return (tops[0] if tops else -1), {value for part, value in rows if part == 1}
        cursor.execute(top, [post_edit.pk])
        found = cursor.fetchone()
    previous_max = -1 if found is None else found[0]
    if not events:
        return previous_max, set()
    return previous_max, _insert_rows(post_edit, visit_id, events, received_at, skip_taken=True)


def stored_seqs_and_top(post_edit_id: int, seqs: list[int]) -> dict[int, int | None]:
    """{seq: visit id} of the stored events in the batch's seq range, plus the top stored seq's row.

    One plain SQL statement. Both parts ORDER BY seq
    so that PostgreSQL walks the (post_edit, seq) index: when the statistics do not know a new
    post-edit yet (rows=1), it would otherwise take the post_edit index and filter all the
    post-edit's events, every batch. The top row is
    always in the result, so the max of its keys is the top seq; callers keep the seqs they sent.
    """
    quote = connection.ops.quote_name
    table, seq, post_edit, visit = (
        quote(name) for name in (EditEvent._meta.db_table, "seq", "post_edit_id", "visit_id")
    )
    top = (
        f"SELECT {seq}, {visit} FROM (SELECT {seq}, {visit} FROM {table} WHERE {post_edit} = %s "
        f"ORDER BY {seq} DESC LIMIT 1) AS top_row"
    )
    sql, params = top, [post_edit_id]
    if seqs:
        in_range = (
            f"SELECT {seq}, {visit} FROM (SELECT {seq}, {visit} FROM {table} WHERE {post_edit} = %s "
            f"AND {seq} BETWEEN %s AND %s ORDER BY {seq}) AS batch_rows"
        )
        sql, params = f"{in_range} UNION ALL {top}", [post_edit_id, min(seqs), max(seqs), post_edit_id]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return dict(cursor.fetchall())
