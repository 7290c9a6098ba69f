"""`table`: CSV, TSV or JSONL rows with a column mapping (target field -> column).

Targets are the data model's names. Item fields: external_id, source, model_output
(required unless the item has outputs), instruction, references, gold_edits, and the
study design: document, position (the segment's place in its document), outputs (a JSON
object by system) or output:NAME (one column per system), highlights (a JSON object of
span lists by output) or highlights:NAME (a JSON span list over output NAME), practice.
A finished study adds edited, annotator, wall_ms or wall_s, any effort count (letters ...
allkeys), condition (what the row's post-editor worked under) and start_text (the text
they started from: one row per post-edit, the output their condition showed): each row
is then one submitted post-edit, and rows sharing external_id (or, without it, source
and model_output) are one item edited by several annotators.

A column named exactly like a target is mapped to it unless the mapping says
otherwise (TARGET= with no column: not mapped). Unmapped columns are kept in
Item.meta (plain items) or PostEdit.extra (finished study).

Reading the file (its kind, header and records) is table_read.py.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from annotations.importers import study
from annotations.importers.base import (
    EFFORT_MAX,
    ImportDataError,
    ImportPlan,
    InputFile,
    ItemRow,
    Origin,
    PostEditRow,
    WhereField,
    content_id,
    effort_value,
    json_type,
    parse_json,
    scalar,
    shown,
)
from annotations.importers.spool import PostEditSpool
from annotations.importers.table_read import WHOLE, read_table
from annotations.models import EFFORT_COUNT_FIELDS

ITEM_TARGETS = ("external_id", "source", "model_output", "instruction", "references", "gold_edits")
DESIGN_TARGETS = ("document", "position", "outputs", "highlights", "practice")
STUDY_TARGETS = ("edited", "annotator", "wall_ms", "wall_s", *EFFORT_COUNT_FIELDS, "condition", "start_text")
TARGETS = ITEM_TARGETS + DESIGN_TARGETS + STUDY_TARGETS
# One column per output: output:NAME (its text) and highlights:NAME (a JSON list of spans over it).
PER_OUTPUT = ("output", "highlights")
LIST_TARGETS = ("references", "gold_edits")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
DEFINITION_VERSION = "table"


def read_header(file: InputFile) -> list[str]:
    """The columns a mapping can name (JSONL: the keys of the first object)."""
    columns, _ = read_table(file)
    return columns


def mapping_pairs(text: str, *, where: str) -> dict[str, str]:
    """'model_output=mt_text,output:sysA=mt_a,edited=' -> {..., 'edited': ''} ('' = not mapped)."""
    mapping: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        target, sep, column = part.partition("=")
        if not sep or not target.strip():
            raise ImportDataError(f"{shown(part)} is not TARGET=COLUMN (e.g. model_output=mt_text)", file=where)
        mapping[target.strip()] = column.strip()
    return mapping


@functools.cache
def per_output(target: str) -> tuple[str, str] | None:
    """("output", NAME) for output:NAME, ("highlights", NAME) for highlights:NAME, else None."""
    kind, sep, name = target.partition(":")
    return (kind, name) if sep and kind in PER_OUTPUT else None


def _names_a_target(column: str) -> bool:
    split = per_output(column)
    if split is None:
        return column in TARGETS
    name = split[1]
    return bool(name.strip()) and name == name.strip() and study.invisible_character(name) is None


def _known_target(target: str, file: str) -> None:
    split = per_output(target)
    if split is not None:
        study.output_name(split[1], origin=Origin(file, 1), field=target)
        return
    if target not in TARGETS:
        raise ImportDataError(
            f"unknown mapping target; targets are {', '.join(TARGETS)}, output:NAME and highlights:NAME",
            file=file,
            line=1,
            field=target,
        )


def resolve_mapping(columns: list[str], mapping: dict[str, str], file: str) -> dict[str, str]:
    """Explicit entries, plus identically named columns; checked against the header."""
    for target in mapping:
        _known_target(target, file)
    resolved = {c: c for c in columns if _names_a_target(c) and c not in mapping}
    resolved.update({t: c for t, c in mapping.items() if c})
    for target, column in resolved.items():
        if column not in columns:
            raise ImportDataError(
                f"column {column!r} (mapped to {target}) is not in the header; columns: {', '.join(columns)}",
                file=file,
                line=1,
                field=target,
            )
    _check_targets(set(resolved), file)
    return resolved


def _check_targets(targets: set[str], file: str) -> None:
    def fail(message: str, field: str) -> ImportDataError:
        return ImportDataError(message, file=file, line=1, field=field)

    outputs = {t for t in targets if per_output(t) and t.startswith("output:")}
    if "model_output" not in targets and not outputs and not {"outputs", "start_text"} & targets:
        raise fail(
            "map a column to model_output (its row in the upload page's Column mapping; on the command line "
            "--map model_output=mt_text), or the outputs by system (output:NAME=column, outputs, or start_text)",
            "model_output",
        )
    if {"wall_ms", "wall_s"} <= targets:
        raise fail("map wall_ms or wall_s, not both", "wall_s")
    if outputs and "outputs" in targets:
        raise fail("map outputs (a JSON object) or output:NAME columns, not both", "outputs")
    if "highlights" in targets and any(t.startswith("highlights:") for t in targets):
        raise fail("map highlights (a JSON object) or highlights:NAME columns, not both", "highlights")
    if "position" in targets and "document" not in targets:
        raise fail("a position is a segment's place in its document: map document too", "position")
    if "start_text" in targets and "condition" not in targets:
        raise fail("start_text is what a condition showed: map condition too", "condition")
    study = targets & set(STUDY_TARGETS)
    if study and not {"edited", "annotator"} <= targets:
        missing = "edited" if "edited" not in targets else "annotator"
        raise fail(f"a finished study ({', '.join(sorted(study))}) needs both edited and annotator", missing)


def parse(file: InputFile, *, mapping: dict[str, str]) -> ImportPlan:
    columns, rows = read_table(file)
    resolved = resolve_mapping(columns, mapping, file.name)
    finished = "edited" in resolved
    plan = ImportPlan(fmt="table", definition_version=DEFINITION_VERSION if finished else "")
    spool = plan.spooled = PostEditSpool() if finished else None  # post-edits wait on disk, not in memory
    items: dict[str, ItemRow] = {}
    # Items known by their id and plain texts alone: a row whose cells equal its item's first row's is
    # that item again, without parsing its cells anew (most rows of a study, each item edited by many).
    item_targets = [t for t in resolved if t not in STUDY_TARGETS]
    plain = (
        finished
        and "external_id" in resolved
        and "start_text" not in resolved  # each row says what its item showed: checked row by row
        and set(item_targets) <= _PLAIN_ITEM_TARGETS
    )
    for line, record in rows:
        origin = Origin(file.name, line)
        for target, column in resolved.items():
            if column not in record:
                raise ImportDataError(
                    f"this row has no {column!r} (mapped to {target})", file=file.name, line=line, field=column
                )
        values = {target: record[column] for target, column in resolved.items()}
        rest = {c: _kept(v) for c, v in record.items() if c not in resolved.values()}
        again = _same_plain_item(items, values, item_targets) if plain else None
        if again is not None:
            assert spool is not None
            spool.append(_post_edit(values, again.external_id, origin, extra=rest))
            continue
        item = _item(values, origin, meta={} if finished else rest)
        if not finished:
            plan.items.append(item)
            continue
        post_edit = _post_edit(values, item.external_id, origin, extra=rest)
        if "start_text" in values:
            _start_text_of(item, post_edit, values, origin)
        known = items.setdefault(item.external_id, item)
        if known is item:
            plan.items.append(item)
        else:
            _same_item(known, item, resolved)
        assert spool is not None
        spool.append(post_edit)
    if not plan.items:
        raise ImportDataError("no rows under the header", file=file.name)
    return plan


_PLAIN_ITEM_TARGETS = {"external_id", "source", "model_output", "instruction"}


def _same_plain_item(items: dict[str, ItemRow], values: dict[str, Any], targets: list[str]) -> ItemRow | None:
    """The item already read whose plain texts (_PLAIN_ITEM_TARGETS) are this row's cells as they
    are: parsing the row's cells would give that item again. None: parse them."""
    external_id = values["external_id"]
    known = items.get(external_id) if type(external_id) is str else None
    if known is None:
        return None
    for target in targets:
        value = values[target]
        if type(value) is not str or value != getattr(known, target):
            return None
    return known


def _kept(value: Any) -> Any:
    """Unmapped cells: CSV/TSV numbers become numbers; JSON values stay as they are."""
    return scalar(value) if isinstance(value, str) and value.strip() else value


def _text(values: dict[str, Any], target: str, origin: Origin, required: bool = False) -> str:
    value = values.get(target)
    if value is None:
        value = ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)  # a JSON number used as an id or a text
    if not isinstance(value, str):
        raise ImportDataError(f"must be text, got {json_type(value)}", file=origin.file, line=origin.line, field=target)
    if required and not value.strip():
        raise ImportDataError("must not be empty", file=origin.file, line=origin.line, field=target)
    return value


def _text_list(values: dict[str, Any], target: str, origin: Origin) -> list:
    """JSONL: a list of strings or one string; CSV/TSV: a JSON list ("[...]") or one string.

    References may also be documents, {"url", "title", "text"} objects (as EditEval stores them).
    """
    value = values.get(target, "")
    where: WhereField = {"file": origin.file, "line": origin.line, "field": target}
    if isinstance(value, str) and value.lstrip().startswith("["):
        value = parse_json(value, **where, what="starts with '[' but is not a JSON list")
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    documents = target == "references"
    if not isinstance(value, list) or not all(isinstance(v, str) or (documents and _document(v)) for v in value):
        kinds = "strings or documents ({url, title, text} objects)" if documents else "strings"
        raise ImportDataError(f"must be a string or a list of {kinds}, got {json_type(value)}", **where)
    return value


def _document(value: Any) -> bool:
    return (
        isinstance(value, dict) and isinstance(value.get("text", ""), str) and isinstance(value.get("title", ""), str)
    )


def _item(values: dict[str, Any], origin: Origin, meta: dict[str, Any]) -> ItemRow:
    source = _text(values, "source", origin)
    outputs = _outputs(values, origin)
    from_outputs = "model_output" not in values
    if from_outputs:
        model_output = ""  # the item's first output, once the store knows them all (start_text)
    else:
        model_output = _text(values, "model_output", origin, required=True)
    external_id = _text(values, "external_id", origin) if "external_id" in values else ""
    if "external_id" in values and not external_id.strip():
        raise ImportDataError("must not be empty", file=origin.file, line=origin.line, field="external_id")
    if not external_id and from_outputs:
        first = next(iter(outputs.values()), "")
        if not first:
            raise ImportDataError(
                "an item without external_id is known by its source and output, and this row has no output: "
                "map external_id",
                file=origin.file,
                line=origin.line,
                field="external_id",
            )
        external_id = content_id(source, first)
    document = study.document_id(values.get("document"), origin=origin)
    position = study.document_position(values.get("position"), origin=origin)
    if document and position is None and "position" in values:
        raise ImportDataError(
            f"a segment of document {document!r} needs its position (or leave position unmapped: the segments "
            "are then numbered in file order)",
            file=origin.file,
            line=origin.line,
            field="position",
        )
    # Without start texts (which the store turns into outputs) nothing changes an empty container of
    # an item: every item with none shares one (a long study holds hundreds of thousands of items).
    shared = "start_text" not in values
    return ItemRow(
        external_id=external_id or content_id(source, model_output),
        source=source,
        model_output=model_output,
        model_output_from_outputs=from_outputs,
        instruction=_text(values, "instruction", origin),
        references=_text_list(values, "references", origin) or _NO_LIST,
        gold_edits=_text_list(values, "gold_edits", origin) or _NO_LIST,
        meta=meta or _NO_DICT,
        origin=origin,
        document=document,
        document_position=position,
        outputs=outputs or (_NO_DICT if shared else {}),
        highlights=_highlights(values, origin) or _NO_DICT,
        practice=study.practice(values.get("practice"), origin=origin),
        start_texts={} if not shared else _NO_DICT,
    )


# The empty containers items share (see _item): the checks and the store replace a container
# rather than change it, but for the outputs and start texts of items with start texts.
_NO_LIST: list = []
_NO_DICT: dict = {}


def _json_cell(values: dict[str, Any], target: str, origin: Origin, *, what: str) -> Any:
    """A JSON value: as is from JSONL, parsed from a CSV/TSV cell (an empty cell is None)."""
    value = values.get(target)
    if isinstance(value, str):
        if not value.strip():
            return None
        return parse_json(value, file=origin.file, line=origin.line, field=target, what=f"must be {what}")
    return value


def _outputs(values: dict[str, Any], origin: Origin) -> dict[str, str]:
    if "outputs" in values:
        return study.outputs(_json_cell(values, "outputs", origin, what="a JSON object"), origin=origin)
    found: dict[str, str] = {}
    for target, value in values.items():
        split = per_output(target)
        if split is None or split[0] != "output" or value is None or value == "":
            continue  # an empty cell: this item has no output of that system
        found[split[1]] = study.output_text(value, origin=origin, field=target)
    return found


def _highlights(values: dict[str, Any], origin: Origin) -> dict[str, list]:
    if "highlights" in values:
        return study.highlights(_json_cell(values, "highlights", origin, what="a JSON object"), origin=origin)
    found: dict[str, list] = {}
    for target in values:
        split = per_output(target)
        if split is None or split[0] != "highlights":
            continue
        spans = study.span_list(
            _json_cell(values, target, origin, what="a JSON list of spans"), origin=origin, field=target
        )
        if spans:
            found[split[1]] = spans
    return found


def _start_text_of(item: ItemRow, post_edit: PostEditRow, values: dict[str, Any], origin: Origin) -> None:
    """Record what this row's post-editor started from under their condition (a long table)."""
    text = _text(values, "start_text", origin)
    if not post_edit.condition:
        raise ImportDataError(
            "a start text is what the row's condition showed: this row names no condition",
            file=origin.file,
            line=origin.line,
            field="condition",
        )
    item.start_texts[post_edit.condition] = (text, origin)


def _same_item(known: ItemRow, item: ItemRow, resolved: dict[str, str]) -> None:
    fields = ("model_output", "source", "instruction", "references", "gold_edits", "document", "practice")
    for target in (*fields, "document_position", "outputs", "highlights"):
        if getattr(known, target) != getattr(item, target):
            name = "position" if target == "document_position" else target
            raise ImportDataError(
                f"item {item.external_id!r} has a different {name} than at line {known.origin.line}",
                file=item.origin.file,
                line=item.origin.line,
                field=resolved.get(name, name),
            )
    for condition, (text, origin) in item.start_texts.items():
        first = known.start_texts.setdefault(condition, (text, origin))
        if first[0] != text:
            raise ImportDataError(
                f"item {item.external_id!r} started from another text under condition {condition!r} than at "
                f"line {first[1].line}",
                file=origin.file,
                line=origin.line,
                field=resolved.get("start_text", "start_text"),
            )


def _post_edit(values: dict[str, Any], external_id: str, origin: Origin, extra: dict[str, Any]) -> PostEditRow:
    effort: dict[str, int] = {}
    for target in ("wall_ms", "wall_s", *EFFORT_COUNT_FIELDS):
        if target not in values:
            continue
        cell = values[target]
        if target != "wall_s" and type(cell) is str and cell.isascii() and cell.isdigit() and len(cell) <= 18:
            whole = int(cell)  # digits alone: a whole, non-negative number, as effort_value would find
            if whole <= EFFORT_MAX[target]:
                effort[target] = whole
                continue
        number, written = _number(cell, origin, target)
        if number is not None:
            name = "wall_ms" if target == "wall_s" else target
            effort[name] = effort_value(
                number,
                name=name,
                file=origin.file,
                line=origin.line,
                field=target,
                unit=1000 if target == "wall_s" else 1,
                written=written,
            )
    return PostEditRow(
        external_id=external_id,
        annotator=_text(values, "annotator", origin, required=True).strip(),
        text=_text(values, "edited", origin),
        effort=effort,
        extra=extra,
        origin=origin,
        condition=study.condition_name(values.get("condition"), origin=origin),
    )


def _number(value: Any, origin: Origin, target: str) -> tuple[int | float | None, str | None]:
    """The cell's number and its text as written (None, None when empty)."""
    where: WhereField = {"file": origin.file, "line": origin.line, "field": target}
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None, None
        if WHOLE.fullmatch(text):
            # Past 40 digits no column can hold it (and Python converts at most 4,300): any such number says so.
            return (int(text) if len(text) <= 40 else 10**40), text
        if _DECIMAL.fullmatch(text):
            return float(text), text  # may be inf ("1e400"): refused with its range by effort_value
        if text.lower().lstrip("+-") in ("nan", "inf", "infinity"):
            raise ImportDataError(f"{shown(text)} is not a finite number", **where)
        raise ImportDataError(f"{shown(text)} is not a number", **where)
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ImportDataError(f"{shown(value)} is not a number", **where)
    return value, None
