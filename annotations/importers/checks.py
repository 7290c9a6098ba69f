"""The plan checked and completed on its own, before the one writer reads the database.

Ids, task types and annotator names are storable and unique in the file; a position needs a
document and is unique in it; outputs are text under valid names and highlight spans lie inside
the output they are over, without overlapping; line endings become LF; every text the editor
edits fits the editor's limit. Each refusal is an ImportDataError naming file, line and field.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy
from django.conf import settings
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError

from annotations.design import DesignError, parse_spans
from annotations.importers.base import (
    ImportDataError,
    ImportPlan,
    ItemRow,
    Origin,
    PostEditRow,
    fail,
    max_length,
    normalize_line_endings,
    removed_before,
)
from annotations.importers.study import id_problem, output_name
from annotations.models import Item
from editlab import limits

MAX_EXTERNAL_ID = max_length(Item, "external_id")
MAX_TASK_TYPE = max_length(Item, "task_type")


def check_plan(plan: ImportPlan, facts: PostEditFacts) -> None:
    seen: dict[str, Origin] = {}
    places: dict[tuple[str, int], ItemRow] = {}
    for row in plan.items:
        if row.document_position is not None and not row.document:
            raise fail("a position needs a document: it is the segment's place in its document", row.origin, "position")
        if row.document and row.document_position is not None:
            first_at = places.setdefault((row.document, row.document_position), row)
            if first_at is not row:
                raise fail(
                    f"document {row.document!r} has a segment at position {row.document_position} twice "
                    f"(item {first_at.external_id!r} at {first_at.origin.file}, line {first_at.origin.line}); "
                    "positions are unique per document",
                    row.origin,
                    "position",
                )
        problem = id_problem(row.external_id, what="item id", max_chars=MAX_EXTERNAL_ID)
        if problem:
            raise fail(problem, row.origin, "external_id")
        if len(row.task_type) > MAX_TASK_TYPE:
            raise fail(f"task type is longer than {MAX_TASK_TYPE} characters", row.origin, "task_type")
        first = seen.setdefault(row.external_id, row.origin)
        if first is not row.origin:
            raise fail(
                f"duplicate id {row.external_id!r} (first at {first.file}, line {first.line})",
                row.origin,
                "external_id",
            )
    if facts.refused is not None:
        raise facts.refused


def check_design(plan: ImportPlan) -> None:
    """Outputs are text under valid names; highlight spans lie inside the output they are over."""
    for row in plan.items:
        for name, text in row.outputs.items():
            output_name(name, origin=row.origin, field="outputs")
            if not isinstance(text, str):
                raise fail("an output must be text", row.origin, f"outputs.{name}")
        for name, spans in list(row.highlights.items()):
            shown_text = row.outputs.get(name)
            if shown_text is None:
                has = ", ".join(map(repr, row.outputs)) or "none"
                raise fail(
                    f"highlights over the output {name!r}, which this item does not have (its outputs: {has})",
                    row.origin,
                    f"highlights.{name}",
                )
            try:
                parsed = parse_spans(spans, shown_text, where=f"highlights.{name}")
            except DesignError as exc:
                place, _, problem = str(exc).partition(": ")
                raise fail(problem, row.origin, place) from None
            row.highlights[name] = [list(span) for span in parsed]


class _Endings:
    """Counts the line endings normalized in one import."""

    def __init__(self) -> None:
        self.crlf = 0
        self.cr = 0
        self.texts = 0

    def text(self, value: str) -> str:
        normalized, crlf, cr = normalize_line_endings(value)
        if crlf or cr:
            self.crlf, self.cr, self.texts = self.crlf + crlf, self.cr + cr, self.texts + 1
        return normalized

    def texts_in(self, values: list) -> list:
        return [self.text(value) if isinstance(value, str) else value for value in values]


def normalize_plan_line_endings(plan: ImportPlan, facts: PostEditFacts) -> str | None:
    """Every CRLF and lone CR of the texts becomes LF, as a browser's textarea gives them (a CR left
    in would be an edit nobody typed); highlight spans move with the text they lie over, and an
    imported post-edit keeps in origin_detail how many line endings it had of each kind (the post-edits'
    texts are normalized by post_edit_facts). Returns the report's note of what changed (None: nothing did)."""
    endings = _Endings()
    for row in plan.items:
        for name in ("model_output", "source", "instruction"):
            setattr(row, name, endings.text(getattr(row, name)))
        for name, text in list(row.outputs.items()):
            removed = removed_before(text)
            row.outputs[name] = endings.text(text)
            if removed and name in row.highlights:
                row.highlights[name] = [
                    [start - bisect_left(removed, start), end - bisect_left(removed, end), *rest]
                    for start, end, *rest in row.highlights[name]
                ]
        if row.references:
            row.references = endings.texts_in(row.references)
        if row.gold_edits:
            row.gold_edits = endings.texts_in(row.gold_edits)
        if row.start_texts:
            row.start_texts = {key: (endings.text(text), at) for key, (text, at) in row.start_texts.items()}
    endings.crlf, endings.cr, endings.texts = (
        endings.crlf + facts.crlf,
        endings.cr + facts.cr,
        endings.texts + facts.texts_normalized,
    )
    if not endings.texts:
        return None
    return f"line endings normalized to LF in {endings.texts:,} text(s): {endings.crlf:,} CRLF, {endings.cr:,} CR"


def check_text_sizes(plan: ImportPlan, facts: PostEditFacts) -> None:
    """Every text the editor would edit fits the editor's limit (editlab/limits.py)."""
    limit = settings.EDITLAB_TEXT_MAX_BYTES
    for row in plan.items:
        texts = [("model_output", row.model_output), *((f"outputs.{n}", t) for n, t in row.outputs.items())]
        for name, text in texts:
            problem = limits.text_size_problem(text, limit=limit)
            if problem:
                raise fail(problem, row.origin, name)
    if facts.too_long is not None:
        raise facts.too_long


@dataclass
class PostEditFacts:
    """What the checks and the writer need of a plan's post-edits, read in one pass (post_edit_facts):
    never a row kept, so that a spooled million post-edits stays on disk."""

    count: int = 0
    annotators: dict[str, Origin] = field(default_factory=dict)  # name -> its first row
    conditions: dict[str, Origin] = field(default_factory=dict)  # condition -> the first row naming it
    # (item, condition) -> the first row of that item under that condition
    item_conditions: dict[tuple[str, str], Origin] = field(default_factory=dict)
    refused: ImportDataError | None = None  # check_plan's refusal of the first bad row (name, pair twice)
    too_long: ImportDataError | None = None  # the first text over the editor's limit
    crlf: int = 0
    cr: int = 0
    texts_normalized: int = 0


def post_edit_facts(rows: Iterable[PostEditRow]) -> PostEditFacts:
    """One pass over the post-edits (iterable again: a list or a spool): their texts' line endings
    normalized to LF (counted), annotators, conditions, and the first row each check refuses."""
    facts = PostEditFacts()
    limit = settings.EDITLAB_TEXT_MAX_BYTES
    refused_at: int | None = None
    pairs = array("q")  # the hash of each row's (item, annotator): a row is never kept
    for index, row in enumerate(rows):
        facts.count += 1
        normalized, crlf, cr = normalize_line_endings(row.text)
        if crlf or cr:
            row.line_endings = {"crlf": crlf, "cr": cr}
            row.text = normalized
        if row.line_endings:
            facts.crlf += row.line_endings["crlf"]
            facts.cr += row.line_endings["cr"]
            facts.texts_normalized += 1
        if facts.too_long is None:
            problem = limits.text_size_problem(row.text, limit=limit)
            if problem:
                facts.too_long = fail(problem, row.origin, "text")
        if row.annotator not in facts.annotators:
            facts.annotators[row.annotator] = row.origin
            name_problem = _annotator_problem(row.annotator)
            if name_problem and refused_at is None:
                refused_at, facts.refused = index, fail(name_problem, row.origin, "annotator")
        if row.condition:
            facts.conditions.setdefault(row.condition, row.origin)
            facts.item_conditions.setdefault((row.external_id, row.condition), row.origin)
        pairs.append(hash((row.external_id, row.annotator)))
    twice = _first_pair_twice(rows, pairs)
    if twice is not None and (refused_at is None or twice[0] < refused_at):
        facts.refused = twice[1]
    return facts


def _annotator_problem(name: str) -> str | None:
    try:
        UnicodeUsernameValidator()(name)
    except ValidationError:
        return (
            f"annotator name {name!r} is not a valid username "
            "(letters, digits and @ . + - _ only, at most 150 characters)"
        )
    if len(name) > 150:
        return "annotator name is longer than 150 characters"
    return None


def _first_pair_twice(rows: Iterable[PostEditRow], pairs: array) -> tuple[int, ImportDataError] | None:
    """The first row whose annotator edits its item a second time, and its refusal. The hashes find
    the candidates (sorted, without a row in memory); a second pass over those rows alone compares
    the pairs themselves, so that two pairs with the same hash are never taken for one."""
    if len(pairs) < 2:
        return None
    hashes = numpy.frombuffer(pairs, dtype=numpy.int64)
    ordered = numpy.sort(hashes)
    candidates = set(ordered[1:][ordered[1:] == ordered[:-1]].tolist())
    if not candidates:
        return None
    first: dict[tuple[str, str], Origin] = {}
    for index, row in enumerate(rows):
        if pairs[index] not in candidates:
            continue
        at = first.setdefault((row.external_id, row.annotator), row.origin)
        if at is not row.origin:
            return index, fail(
                f"annotator {row.annotator!r} edits item {row.external_id!r} twice "
                f"(first at {at.file}, line {at.line})",
                row.origin,
                "annotator",
            )
    return None
