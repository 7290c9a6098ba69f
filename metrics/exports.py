"""Exports: one row per submitted post-edit, streamed as CSV, JSON Lines or Parquet.

Rows are read in keyset pages (id > last id, N at a time; two queries per page: the
post-edits, then their metric values; a third for the provenance when the project has generation runs), so memory stays flat however large the project,
no database cursor stays open between pages, and a streamed HTTP response holds nothing
but the page in flight. Parquet is written one row group per page.

Columns, in order: external_id, annotator, original, edited, source, task_type,
instruction, origin, the study design (document, document_position, condition, practice),
the effort fields under DESIGN.md's names, then what says whether the
effort can be trusted (uncorroborated_keys; flags, space-separated, e.g. "wall_clipped
keys_uncorroborated key_rate"; definition_version, "1", "2" or "3" for live edits), then how an LLM
made the row's text when one did (gen_run ... gen_latency_ms: generation.selectors), then one column per
metric and variant (`compression`, `compression__with_references`, ...) for every metric
with a stored value in the project, then, in a project with reviews, the latest submitted review of the
row's post-edit (review_round ... review_ter: metrics.reviews). Missing values are empty (CSV) or null.

Practice items' post-edits are left out unless include_practice: they warm participants up and
are no part of the study (DESIGN.md, "Participant"). An LLM's synthetic edits (origin `simulated`,
their scenario as their condition, no time and no keys) are left out unless include_simulated.

CSV formula injection: a text cell starting with = + - @ tab or CR gets a leading
apostrophe so spreadsheets show it as text. Numeric columns (effort figures, metric
values) are never altered: a negative number stays a number.
"""

import csv
import io
import json
import unicodedata
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from django.db.models import F, QuerySet

from annotations.models import EFFORT_FIELDS, PostEdit, Project, start_text_of_post_edit
from editlab.refusals import Refusal
from generation.selectors import (
    EMPTY_PROVENANCE,
    PROVENANCE_COLUMNS,
    PROVENANCE_FLOAT_COLUMNS,
    PROVENANCE_INT_COLUMNS,
    PROVENANCE_TEXT_COLUMNS,
    ProvenanceSource,
    export_provenance,
    export_provenance_source,
)
from metrics.models import MetricValue
from metrics.reviews import (
    EMPTY_REVIEW,
    REVIEW_COLUMNS,
    REVIEW_FLOAT_COLUMNS,
    REVIEW_INT_COLUMNS,
    REVIEW_TEXT_COLUMNS,
    project_has_reviews,
    review_columns,
)
from metrics.selectors import VARIANTS, metric_column, post_edit_queryset, stored_metric_names

PAGE_SIZE = 2000
TEXT_COLUMNS = ("external_id", "annotator", "original", "edited", "source", "task_type", "instruction", "origin")
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# What spreadsheet programs also take for the start of a formula or a DDE call: the pipe, the line
# feed, the minus sign, and the full-width and small forms that an input method or NFKC turns into
# = + - @ | (＝ ＋ － ＠ ｜ ﹦ ﹢ ﹣ ...). Leading spaces (any width) do not make a formula harmless.
_MORE_FORMULA_STARTS = frozenset("|\n\u2212")
_FORMULA_SIGNS = frozenset("=+-@|")
# Where the item sits in a designed study (README: "The study design in imports").
DESIGN_COLUMNS = ("document", "document_position", "condition", "practice")
DESIGN_TEXT_COLUMNS = ("document", "condition")
# After the effort figures: whether they can be trusted (README: "Replay and flags").
QUALITY_COLUMNS = ("uncorroborated_keys", "flags", "definition_version")


@dataclass(frozen=True)
class ExportFormat:
    name: str
    content_type: str
    extension: str


FORMATS = {
    "csv": ExportFormat("csv", "text/csv; charset=utf-8", "csv"),
    "jsonl": ExportFormat("jsonl", "application/x-ndjson; charset=utf-8", "jsonl"),
    "parquet": ExportFormat("parquet", "application/vnd.apache.parquet", "parquet"),
}


class ExportError(Refusal, ValueError):
    """An export option that is not one; the message names it and the choices."""


def get_format(name: str) -> ExportFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise ExportError(f"unknown export format {name!r}: choose one of {', '.join(FORMATS)}") from None


def parse_flag(value: str, *, name: str) -> bool:
    """A yes/no query parameter, parsed as the analysis options parse theirs; anything else is
    refused (an ExportError), naming the parameter."""
    from metrics.analysis_options import flag_parse  # here: the analysis stack costs seconds to import

    return flag_parse(value, name=name, refusal=ExportError)


@dataclass(frozen=True)
class ExportSpec:
    """What to export: the selection and its metric columns, fixed before the first row."""

    project: Project
    metric_columns: tuple[tuple[str, str, str], ...]  # (column, metric, variant)
    annotators: tuple[str, ...] = ()
    task_type: str | None = None
    origin: str | None = None
    include_practice: bool = False
    include_simulated: bool = False
    provenance: ProvenanceSource | None = None  # None: the project has no generation run
    reviews: bool = False  # the project has reviews: the review columns come last

    @property
    def columns(self) -> list[str]:
        return [
            *TEXT_COLUMNS,
            *DESIGN_COLUMNS,
            *EFFORT_FIELDS,
            *QUALITY_COLUMNS,
            *PROVENANCE_COLUMNS,
            *(c for c, _, _ in self.metric_columns),
            *(REVIEW_COLUMNS if self.reviews else ()),
        ]

    def queryset(self) -> QuerySet[PostEdit]:
        return post_edit_queryset(
            project=self.project,
            annotators=self.annotators or None,
            task_type=self.task_type,
            origin=self.origin,
            include_practice=self.include_practice,
            include_simulated=self.include_simulated,
        )


def export_spec(
    *,
    project: Project,
    annotators: Sequence[str] | None = None,
    task_type: str | None = None,
    origin: str | None = None,
    metrics: Sequence[str] | None = None,
    include_practice: bool = False,
    include_simulated: bool = False,
) -> ExportSpec:
    base = post_edit_queryset(
        project=project,
        annotators=annotators,
        task_type=task_type,
        origin=origin,
        include_practice=include_practice,
        include_simulated=include_simulated,
    )
    names = list(metrics) if metrics is not None else stored_metric_names(base)
    return ExportSpec(
        project=project,
        metric_columns=tuple((metric_column(m, v), m, v) for m in names for v in VARIANTS),
        annotators=tuple(annotators or ()),
        task_type=task_type,
        origin=origin,
        include_practice=include_practice,
        include_simulated=include_simulated,
        provenance=export_provenance_source(project),
        reviews=project_has_reviews(project),
    )


def export_pages(spec: ExportSpec, *, page_size: int = PAGE_SIZE) -> Iterator[list[dict]]:
    """Row dicts (keys = spec.columns), a page at a time, in post-edit id order."""
    project_instruction = spec.project.instructions[0] if len(spec.project.instructions) == 1 else ""
    metric_names = sorted({m for _, m, _ in spec.metric_columns})
    columns_by_key = {(m, v): c for c, m, v in spec.metric_columns}
    fields = {
        "external_id": F("assignment__item__external_id"),
        "annotator": F("assignment__annotator__username"),
        "original": start_text_of_post_edit(),
        "edited": F("text"),
        "source": F("assignment__item__source"),
        "task_type": F("assignment__item__task_type"),
        "item_instruction": F("assignment__item__instruction"),
        "drawn_instruction": F("assignment__item__drawn_instruction"),
        "document": F("assignment__item__document"),
        "document_position": F("assignment__item__document_position"),
        "practice": F("assignment__item__practice"),
        "item": F("assignment__item_id"),
    }
    # The selection's ids first (8 bytes each), then each page by its ids alone (primary-key lookups):
    # a page found by "id after the last one" made SQLite walk the project's items and sort for every
    # page, and the selection's filters beside an id list still do; the rows are the selection as it
    # stood when the export began.
    ids = array("q", spec.queryset().order_by("id").values_list("id", flat=True).iterator(chunk_size=20_000))
    for low in range(0, len(ids), page_size):
        page = list(
            PostEdit.objects.filter(pk__in=ids[low : low + page_size].tolist())
            .order_by("id")
            .values("id", "origin", "condition", *EFFORT_FIELDS, *QUALITY_COLUMNS, **fields)
        )
        if not page:
            continue
        values: dict[int, dict[str, float | None]] = {}
        if metric_names:
            for pe, metric, variant, value in MetricValue.objects.filter(
                post_edit_id__in=[row["id"] for row in page], metric__in=metric_names
            ).values_list("post_edit_id", "metric", "variant", "value"):
                column = columns_by_key.get((metric, variant))
                if column is not None:
                    values.setdefault(pe, {})[column] = value
        made = export_provenance(spec.provenance, page)
        reviewed = review_columns([row["id"] for row in page]) if spec.reviews else {}
        rows = []
        for row in page:
            instruction = row["item_instruction"] or row["drawn_instruction"] or project_instruction
            out = {
                "external_id": row["external_id"],
                "annotator": row["annotator"],
                "original": row["original"],
                "edited": row["edited"],
                "source": row["source"],
                "task_type": row["task_type"],
                "instruction": instruction,
                "origin": row["origin"],
                **{c: row[c] for c in DESIGN_COLUMNS},
                **{f: row[f] for f in EFFORT_FIELDS},
                "uncorroborated_keys": row["uncorroborated_keys"],
                "flags": " ".join(row["flags"] or ()),
                "definition_version": row["definition_version"],
                **made.get(row["id"], EMPTY_PROVENANCE),
            }
            stored = values.get(row["id"], {})
            for column, _, _ in spec.metric_columns:
                out[column] = stored.get(column)
            if spec.reviews:
                out.update(reviewed.get(row["id"], EMPTY_REVIEW))
            rows.append(out)
        yield rows


def neutralise_formula(text: str) -> str:
    return "'" + text if _starts_a_formula(text) else text


def _starts_a_formula(text: str) -> bool:
    if text.startswith(_FORMULA_STARTS):
        return True
    first = text.lstrip(" \u00a0\u3000")[:1]
    if not first:
        return False
    return (
        first in _FORMULA_STARTS
        or first in _MORE_FORMULA_STARTS
        or unicodedata.normalize("NFKC", first) in _FORMULA_SIGNS
    )


def stream_csv(spec: ExportSpec, *, page_size: int = PAGE_SIZE) -> Iterator[bytes]:
    buffer = io.StringIO()
    # RFC 4180 line ends: a cell holding a lone CR is then quoted (with "\n" it went out bare and split the row).
    writer = csv.writer(buffer, lineterminator="\r\n")
    columns = spec.columns
    writer.writerow(columns)
    text_columns = {*TEXT_COLUMNS, *DESIGN_TEXT_COLUMNS, "flags", "definition_version", *PROVENANCE_TEXT_COLUMNS}
    text_columns |= set(REVIEW_TEXT_COLUMNS)
    for rows in export_pages(spec, page_size=page_size):
        for row in rows:
            writer.writerow([_csv_cell(row[c], text=c in text_columns) for c in columns])
        yield buffer.getvalue().encode("utf-8")
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue().encode("utf-8")


def _csv_cell(value: object, *, text: bool) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):  # as JSON spells it, not Python's True/False
        return "true" if value else "false"
    return neutralise_formula(value) if text and isinstance(value, str) else value


def stream_jsonl(spec: ExportSpec, *, page_size: int = PAGE_SIZE) -> Iterator[bytes]:
    for rows in export_pages(spec, page_size=page_size):
        yield "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def parquet_schema(spec: ExportSpec) -> pa.Schema:
    return pa.schema(
        [pa.field(c, pa.string()) for c in TEXT_COLUMNS]
        + [pa.field("document", pa.string()), pa.field("document_position", pa.int64())]
        + [pa.field("condition", pa.string()), pa.field("practice", pa.bool_())]
        + [pa.field(f, pa.int64()) for f in EFFORT_FIELDS]
        + [pa.field("uncorroborated_keys", pa.int64()), pa.field("flags", pa.string())]
        + [pa.field("definition_version", pa.string())]
        + [
            pa.field(
                c,
                pa.int64()
                if c in PROVENANCE_INT_COLUMNS
                else pa.float64()
                if c in PROVENANCE_FLOAT_COLUMNS
                else pa.string(),
            )
            for c in PROVENANCE_COLUMNS
        ]
        + [pa.field(c, pa.float64()) for c, _, _ in spec.metric_columns]
        + [
            pa.field(
                c, pa.int64() if c in REVIEW_INT_COLUMNS else pa.float64() if c in REVIEW_FLOAT_COLUMNS else pa.string()
            )
            for c in (REVIEW_COLUMNS if spec.reviews else ())
        ]
    )


class _Drain(io.RawIOBase):
    """A write-only sink whose bytes are handed out (and forgotten) after each row group."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._position = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        chunk = bytes(data)
        self._parts.append(chunk)
        self._position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self._position

    def take(self) -> bytes:
        out = b"".join(self._parts)
        self._parts.clear()
        return out


def stream_parquet(spec: ExportSpec, *, page_size: int = PAGE_SIZE) -> Iterator[bytes]:
    schema = parquet_schema(spec)
    sink = _Drain()
    # zstd at its fastest level: less memory and time than its default level for a slightly larger file
    # (the figures: editlab/benchmarks/results/scale.md).
    writer = pq.ParquetWriter(sink, schema, compression="zstd", compression_level=1)
    try:
        for rows in export_pages(spec, page_size=page_size):
            writer.write_batch(pa.RecordBatch.from_pylist(rows, schema=schema), row_group_size=len(rows))
            chunk = sink.take()
            if chunk:
                yield chunk
    finally:
        writer.close()
    yield sink.take()


_STREAMS = {"csv": stream_csv, "jsonl": stream_jsonl, "parquet": stream_parquet}


def export_stream(spec: ExportSpec, fmt: str, *, page_size: int = PAGE_SIZE) -> Iterator[bytes]:
    get_format(fmt)
    return _STREAMS[fmt](spec, page_size=page_size)


def export_filename(project: Project, fmt: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in project.name).strip("_") or "project"
    return f"{safe}-post-edits.{get_format(fmt).extension}"
