"""The event export: one row per stored edit event of a project's post-edits, streamed (docs/events.md).

The post-edits are those the post-edit export takes (metrics.selectors.post_edit_queryset: submitted,
no simulated edit, practice items only when asked). They are read in keyset pages of post-edit ids;
each page's events come from one query read through a cursor in chunks (`QuerySet.iterator`), in
(post-edit, seq) order, the order of the unique (post_edit, seq) index. Memory holds one page of
post-edits and one chunk of rows; with `with_text` also the log of the post-edit being written, which
the replay (annotations.replay) needs whole.

`with_text` adds `text_after`, the text after each text-changing event (load and input events; empty
on the others). Each such row carries the whole text, so the output grows with events x text length,
and the replay decodes the text at every step (cost in docs/events.md).

CSV cells that hold text get the post-edit export's formula guard (metrics.exports.neutralise_formula);
JSON Lines and Parquet carry every value as stored.
"""

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby

import pyarrow as pa
import pyarrow.parquet as pq
from django.db.models import F, QuerySet, TextField
from django.db.models.functions import Cast

from annotations.effort import LogEvent
from annotations.models import EditEvent, PostEdit, Project, Visit, start_text_of_post_edit
from annotations.replay import iter_replay
from metrics.exports import ExportError, ExportFormat, _Drain, neutralise_formula
from metrics.selectors import post_edit_queryset

SCHEMA_VERSION = "1"
POST_EDIT_PAGE = 500
CHUNK_SIZE = 5000

# One row per event, in this order (docs/events.md, "Columns").
POST_EDIT_COLUMNS = ("post_edit", "external_id", "annotator", "condition", "origin", "practice")
EVENT_COLUMNS = (
    "visit",
    "seq",
    "t_ms",
    "received_at",
    "kind",
    "key",
    "code",
    "modifiers",
    "repeat",
    "input_type",
    "sel_start",
    "sel_end",
    "data",
    "length_after",
    "extra",
)
TEXT_AFTER = "text_after"
_CSV_TEXT = frozenset({"external_id", "annotator", "condition", "key", "code", "input_type", "data", TEXT_AFTER})
# What the event query reads, in order: the stored columns, `extra` as its JSON text.
_STORED = ("post_edit_id", "visit_id", *EVENT_COLUMNS[1:-1], "extra_text")

EVENT_FORMATS = {
    "csv": ExportFormat("csv", "text/csv; charset=utf-8", "csv"),
    "jsonl": ExportFormat("jsonl", "application/x-ndjson; charset=utf-8", "jsonl"),
    "parquet": ExportFormat("parquet", "application/vnd.apache.parquet", "parquet"),
    "idfx": ExportFormat("idfx", "application/zip", "idfx.zip"),
    "critt-kd": ExportFormat("critt-kd", "application/zip", "kd.zip"),
}


def get_event_format(name: str) -> ExportFormat:
    try:
        return EVENT_FORMATS[name]
    except KeyError:
        raise ExportError(f"unknown event export format {name!r}: choose one of {', '.join(EVENT_FORMATS)}") from None


@dataclass(frozen=True)
class EventExportSpec:
    project: Project
    include_practice: bool = False
    with_text: bool = False

    @property
    def columns(self) -> list[str]:
        return [*POST_EDIT_COLUMNS, *EVENT_COLUMNS, *((TEXT_AFTER,) if self.with_text else ())]

    def queryset(self) -> QuerySet[PostEdit]:
        return post_edit_queryset(project=self.project, include_practice=self.include_practice)


@dataclass(frozen=True)
class PostEditHead:
    """What every row of one post-edit repeats, and what the replay and the IDFX writer need."""

    id: int
    external_id: str
    annotator: str
    condition: str
    origin: str
    practice: bool
    original: str
    text: str
    visits: dict[int, tuple[str, datetime]]  # visit id -> (page id, started at)

    def prefix(self) -> tuple:
        return (self.id, self.external_id, self.annotator, self.condition, self.origin, self.practice)


def post_edit_heads(spec: EventExportSpec, *, page_size: int = POST_EDIT_PAGE) -> Iterator[list[PostEditHead]]:
    """The selection's post-edits, a keyset page at a time, in id order."""
    last_id = 0
    while True:
        page = list(
            spec.queryset()
            .filter(pk__gt=last_id)
            .values(
                "id",
                "condition",
                "origin",
                "text",
                external_id=F("assignment__item__external_id"),
                annotator=F("assignment__annotator__username"),
                practice=F("assignment__item__practice"),
                original=start_text_of_post_edit(),
            )[:page_size]
        )
        if not page:
            return
        last_id = page[-1]["id"]
        visits: dict[int, dict[int, tuple[str, datetime]]] = {}
        for visit_id, post_edit_id, page_id, started in Visit.objects.filter(
            post_edit_id__in=[row["id"] for row in page]
        ).values_list("id", "post_edit_id", "page_id", "started_at"):
            visits.setdefault(post_edit_id, {})[visit_id] = (str(page_id), started)
        yield [PostEditHead(**row, visits=visits.get(row["id"], {})) for row in page]


def _stored_events(post_edit_ids: list[int], *, chunk_size: int) -> Iterator[tuple]:
    return (
        EditEvent.objects.filter(post_edit_id__in=post_edit_ids)
        .order_by("post_edit_id", "seq")
        .annotate(extra_text=Cast("extra", TextField()))
        .values_list(*_STORED)
        .iterator(chunk_size=chunk_size)
    )


def log_event(stored: tuple, page: str) -> LogEvent:
    """A stored row (_STORED order) as the pure replay and effort functions take it."""
    extra = json.loads(stored[15]) if stored[15] and stored[15] != "{}" else {}
    return LogEvent(
        seq=stored[2],
        t_ms=stored[3],
        kind=stored[5],
        visit=page,
        key=stored[6],
        code=stored[7],
        modifiers=stored[8],
        repeat=stored[9],
        input_type=stored[10],
        sel_start=stored[11],
        sel_end=stored[12],
        data=stored[13],
        length_after=stored[14],
        state=extra.get("state", ""),
        source=extra.get("src", ""),
        full_text=bool(extra.get("f", False)),
    )


def post_edit_logs(
    spec: EventExportSpec, *, chunk_size: int = CHUNK_SIZE, page_size: int = POST_EDIT_PAGE
) -> Iterator[tuple[PostEditHead, list[tuple]]]:
    """Each post-edit of the selection with its stored event rows (_STORED order), one post-edit at a
    time; a post-edit without events comes with an empty list."""
    for heads in post_edit_heads(spec, page_size=page_size):
        by_id = {head.id: head for head in heads}
        seen: set[int] = set()
        for post_edit_id, rows in groupby(_stored_events(list(by_id), chunk_size=chunk_size), key=lambda r: r[0]):
            seen.add(post_edit_id)
            yield by_id[post_edit_id], list(rows)
        for head in heads:
            if head.id not in seen:
                yield head, []


def _row(head: PostEditHead, stored: tuple) -> tuple:
    visit = head.visits.get(stored[1])
    extra = stored[15] if stored[15] is not None else "{}"
    return (*head.prefix(), visit[0] if visit else None, *stored[2:15], extra)


def _texts_after(head: PostEditHead, rows: list[tuple]) -> dict[int, str]:
    pages = {visit_id: page for visit_id, (page, _) in head.visits.items()}
    events = [log_event(stored, pages.get(stored[1], "")) for stored in rows]
    return {step.seq: step.text or "" for step in iter_replay(head.original, events, with_text=True)}


def event_rows(spec: EventExportSpec, *, chunk_size: int = CHUNK_SIZE) -> Iterator[list[tuple]]:
    """The export's rows (tuples in spec.columns order), about chunk_size at a time."""
    batch: list[tuple] = []
    if not spec.with_text:
        for heads in post_edit_heads(spec):
            by_id = {head.id: head for head in heads}
            for stored in _stored_events(list(by_id), chunk_size=chunk_size):
                batch.append(_row(by_id[stored[0]], stored))
                if len(batch) >= chunk_size:
                    yield batch
                    batch = []
    else:
        for head, rows in post_edit_logs(spec, chunk_size=chunk_size):
            texts = _texts_after(head, rows)
            for stored in rows:
                batch.append((*_row(head, stored), texts.get(stored[2])))
            if len(batch) >= chunk_size:
                yield batch
                batch = []
    if batch:
        yield batch


def _csv_cell(value: object, *, text: bool) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    return neutralise_formula(value) if text and isinstance(value, str) else value


def stream_events_csv(spec: EventExportSpec, *, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    columns = spec.columns
    writer.writerow(columns)
    text = [c in _CSV_TEXT for c in columns]
    for rows in event_rows(spec, chunk_size=chunk_size):
        writer.writerows([_csv_cell(v, text=t) for v, t in zip(row, text, strict=True)] for row in rows)
        yield buffer.getvalue().encode("utf-8")
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue().encode("utf-8")


def _json_value(value: object) -> object:
    return value.isoformat() if isinstance(value, datetime) else value


def stream_events_jsonl(spec: EventExportSpec, *, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    columns = spec.columns
    for rows in event_rows(spec, chunk_size=chunk_size):
        yield "".join(
            json.dumps(dict(zip(columns, map(_json_value, row), strict=True)), ensure_ascii=False) + "\n"
            for row in rows
        ).encode("utf-8")


def events_parquet_schema(spec: EventExportSpec) -> pa.Schema:
    types = {
        "post_edit": pa.int64(),
        "practice": pa.bool_(),
        "seq": pa.int64(),
        "t_ms": pa.float64(),
        "received_at": pa.timestamp("us", tz="UTC"),
        "modifiers": pa.int16(),
        "repeat": pa.bool_(),
        "sel_start": pa.int64(),
        "sel_end": pa.int64(),
        "length_after": pa.int64(),
    }
    return pa.schema(
        [pa.field(c, types.get(c, pa.string())) for c in spec.columns],
        metadata={"editlab.events.schema": SCHEMA_VERSION},
    )


def stream_events_parquet(spec: EventExportSpec, *, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    schema = events_parquet_schema(spec)
    sink = _Drain()
    writer = pq.ParquetWriter(sink, schema, compression="zstd")
    try:
        for rows in event_rows(spec, chunk_size=chunk_size):
            arrays = [
                pa.array(column, type=field.type) for column, field in zip(zip(*rows, strict=True), schema, strict=True)
            ]
            writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=schema), row_group_size=len(rows))
            chunk = sink.take()
            if chunk:
                yield chunk
    finally:
        writer.close()
    yield sink.take()


def event_export_stream(spec: EventExportSpec, fmt: str, *, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    get_event_format(fmt)
    if fmt == "idfx":
        from metrics.exports_idfx import stream_idfx_zip

        return stream_idfx_zip(spec)
    if fmt == "critt-kd":
        from metrics.exports_critt import stream_kd_zip

        return stream_kd_zip(spec)
    streams = {"csv": stream_events_csv, "jsonl": stream_events_jsonl, "parquet": stream_events_parquet}
    return streams[fmt](spec, chunk_size=chunk_size)


def event_export_filename(project: Project, fmt: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in project.name).strip("_") or "project"
    return f"{safe}-events.{get_event_format(fmt).extension}"
