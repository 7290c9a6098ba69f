"""The WMT MQM TSV (google/wmt-mqm-human-evaluation): one row per error, or one "No-error" row per
rating without errors, -> items (one per seg_id, an output per system) and finished evaluations.

Columns: system doc doc_id seg_id rater source target category severity [comment]; tab-separated, no
quoting (the published files quote nothing: a `"` is text). The error's span is marked `<v>…</v>` in the
target (or in the source, for an omission). Parsed without the database; `mqm_store.evaluations_store`
writes the evaluations after the one writer stored the items. docs/quality.md has the details.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from annotations.importers.base import ImportPlan, InputFile, ItemRow, Origin, fail, max_length, shown
from annotations.models import ErrorSpan, Evaluation, Item
from annotations.typology import NO_ERROR, Marked, TypologyError, parse_marks, parse_severity

COLUMNS = ("system", "doc", "doc_id", "seg_id", "rater", "source", "target", "category", "severity", "comment")
REQUIRED = COLUMNS[:-1]  # the comment column is optional (the TED zh-en file has none)
NUMBER = re.compile(r"[0-9]{1,18}")


@dataclass(slots=True)
class ErrorRow:
    origin: Origin
    side: str
    start: int | None
    end: int | None
    open_end: bool
    category: str
    severity: str
    comment: str


@dataclass(slots=True)
class EvaluationRow:
    system: str
    seg_id: str
    rater: str
    text: str
    origin: Origin
    errors: list[ErrorRow] = field(default_factory=list)
    no_error: bool = False


@dataclass
class MqmPlan(ImportPlan):
    """A plan whose items come with their evaluations (keyed by system, seg_id, rater)."""

    evaluations: list[EvaluationRow] = field(default_factory=list)


@dataclass(slots=True)
class _Segment:
    doc: str
    doc_id: str
    source: str
    origin: Origin
    outputs: dict[str, tuple[str, Origin]] = field(default_factory=dict)


LIMITS = {
    "system": max_length(Evaluation, "system"),
    "category": max_length(ErrorSpan, "category"),
    "seg_id": max_length(Item, "external_id"),
    "doc": max_length(Item, "document"),
}


def parse(file: InputFile, *, annotator_prefix: str = "") -> MqmPlan:
    lines = file.text().split("\n")
    header = lines[0].rstrip("\r").split("\t", len(COLUMNS))
    if tuple(header) not in (COLUMNS, REQUIRED):
        got = f"{len(header):,} columns" if len(header) > len(COLUMNS) else "\t".join(header)
        raise fail(
            f"the header must be the columns {' '.join(COLUMNS)} (comment optional); got {shown(got)}",
            Origin(file.name, 1),
        )
    width = len(header)
    plan = MqmPlan(fmt="mqm")
    segments: dict[str, _Segment] = {}
    ratings: dict[tuple[str, str, str], EvaluationRow] = {}
    for line_no, line in enumerate(lines[1:], start=2):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        origin = Origin(file.name, line_no)
        cells = line.split("\t", width)
        if len(cells) != width:
            many = f"{width + 1:,} or more" if len(cells) > width else f"{len(cells):,}"
            raise fail(f"has {many} columns; the header has {width}", origin)
        row = dict(zip(header, cells, strict=True))
        row.setdefault("comment", "")
        _row(row, origin, annotator_prefix, segments, ratings)
    if not ratings:
        raise fail("holds no ratings", Origin(file.name, 1))
    plan.items = _items(segments)
    plan.evaluations = list(ratings.values())
    open_ends = [e.origin.line for r in plan.evaluations for e in r.errors if e.open_end]
    if open_ends:
        plan.notes.append(
            f"{len(open_ends)} span(s) had <v> without </v>, taken to run to the end of the text "
            f"(line {', '.join(map(str, open_ends[:10]))}{', ...' if len(open_ends) > 10 else ''})"
        )
    return plan


def _row(
    row: dict[str, str],
    origin: Origin,
    prefix: str,
    segments: dict[str, _Segment],
    ratings: dict[tuple[str, str, str], EvaluationRow],
) -> None:
    for name in ("system", "doc", "seg_id", "rater"):
        if not row[name].strip():
            raise fail("must not be empty", origin, name)
        if name in LIMITS and len(row[name]) > LIMITS[name]:
            raise fail(f"is longer than {LIMITS[name]} characters", origin, name)
    source, target = _marks(row["source"], origin, "source"), _marks(row["target"], origin, "target")
    if source.start is not None and target.start is not None:
        raise fail("both source and target mark a span; a row marks one", origin, "target")
    seg_id, system = row["seg_id"], row["system"]
    segment = segments.setdefault(seg_id, _Segment(row["doc"], row["doc_id"], source.text, origin))
    for name, value in (("doc", row["doc"]), ("doc_id", row["doc_id"]), ("source", source.text)):
        if getattr(segment, name) != value:
            raise fail(f"differs from line {segment.origin.line}'s for segment {shown(seg_id)}", origin, name)
    output = segment.outputs.setdefault(system, (target.text, origin))
    if output[0] != target.text:
        raise fail(
            f"differs from line {output[1].line}'s for system {shown(system)}, segment {shown(seg_id)}",
            origin,
            "target",
        )
    rater = prefix + row["rater"]
    key = (system, seg_id, rater)
    rating = ratings.setdefault(key, EvaluationRow(system, seg_id, rater, target.text, origin))
    category, severity = row["category"], row["severity"]
    if NO_ERROR in (category, severity):
        if category != severity:
            raise fail(
                f"a {NO_ERROR} row needs {NO_ERROR} as both category and severity",
                origin,
                "severity" if category == NO_ERROR else "category",
            )
        if rating.errors or rating.no_error:
            raise fail(
                f"line {rating.origin.line} already rates this system's segment by {shown(rater)}; "
                f"{NO_ERROR} must be its only row",
                origin,
                "category",
            )
        rating.no_error = True
        return
    if rating.no_error:
        raise fail(f"line {rating.origin.line} rated this segment {NO_ERROR}", origin, "category")
    if not category.strip() or len(category) > LIMITS["category"]:
        raise fail(f"must be a category name of 1 to {LIMITS['category']} characters", origin, "category")
    try:
        stored_severity = parse_severity(severity)
    except TypologyError as exc:
        raise fail(exc.message, origin, "severity") from None
    marked, side = (source, ErrorSpan.SOURCE) if source.start is not None else (target, ErrorSpan.TARGET)
    rating.errors.append(
        ErrorRow(origin, side, marked.start, marked.end, marked.open_end, category, stored_severity, row["comment"])
    )


def _marks(text: str, origin: Origin, name: str) -> Marked:
    try:
        return parse_marks(text, name)
    except TypologyError as exc:
        raise fail(exc.message, origin, name) from None


def _items(segments: dict[str, _Segment]) -> list[ItemRow]:
    """One item per segment, documents in order of appearance and segments by number within them."""
    docs: dict[str, int] = {}
    for segment in segments.values():
        docs.setdefault(segment.doc, len(docs))
    order = sorted(
        segments.items(),
        key=lambda pair: (docs[pair[1].doc], int(pair[0]) if NUMBER.fullmatch(pair[0]) else -1, pair[1].origin.line),
    )
    return [
        ItemRow(
            external_id=seg_id,
            model_output=next(iter(segment.outputs.values()))[0],
            origin=segment.origin,
            source=segment.source,
            meta={"doc_id": segment.doc_id},
            document=segment.doc,
            outputs={system: text for system, (text, _) in segment.outputs.items()},
        )
        for seg_id, segment in order
    ]
