"""`table`: CSV, TSV or JSONL rows with a column mapping (target field -> column).

Targets are the data model's names. Item fields: external_id, source, model_output
(required), instruction, references, gold_edits. A finished study adds edited,
annotator, wall_ms or wall_s, and any effort count (letters ... allkeys): each row is
then one submitted post-edit, and rows sharing external_id (or, without it, source
and model_output) are one item edited by several annotators.

A column named exactly like a target is mapped to it unless the mapping says
otherwise (TARGET= with no column: not mapped). Unmapped columns are kept in
Item.meta (plain items) or PostEdit.extra (finished study).

The kind of table comes from the file's extension: .csv (RFC 4180 quoting), .tsv or
.tab (one row per line, tab-separated, no quoting), .jsonl or .ndjson (one object
per line; keys are the columns).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from annotations.importers.base import (
    ImportDataError,
    InputFile,
    ItemRow,
    Origin,
    Plan,
    PostEditRow,
    content_id,
    json_lines,
    json_type,
    load_json,
    scalar,
)
from annotations.models import EFFORT_COUNT_FIELDS

ITEM_TARGETS = ("external_id", "source", "model_output", "instruction", "references", "gold_edits")
STUDY_TARGETS = ("edited", "annotator", "wall_ms", "wall_s", *EFFORT_COUNT_FIELDS)
TARGETS = ITEM_TARGETS + STUDY_TARGETS
LIST_TARGETS = ("references", "gold_edits")
KINDS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
DEFINITION_VERSION = "table"


def table_kind(file: InputFile) -> str:
    name = file.basename.lower()
    for suffix, kind in KINDS.items():
        if name.endswith(suffix):
            return kind
    raise ImportDataError(f"cannot tell the table's kind from its name; use one of {', '.join(KINDS)}", file=file.name)


def read_header(file: InputFile) -> list[str]:
    """The columns a mapping can name (JSONL: the keys of the first object)."""
    columns, _ = _read(file)
    return columns


def resolve_mapping(columns: list[str], mapping: dict[str, str], file: str) -> dict[str, str]:
    """Explicit entries, plus identically named columns; checked against the header."""
    for target in mapping:
        if target not in TARGETS:
            raise ImportDataError(
                f"unknown mapping target; targets are {', '.join(TARGETS)}", file=file, line=1, field=target
            )
    resolved = {t: t for t in TARGETS if t in columns and t not in mapping}
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

    if "model_output" not in targets:
        raise fail("map a column to model_output (e.g. --map model_output=mt_text)", "model_output")
    if {"wall_ms", "wall_s"} <= targets:
        raise fail("map wall_ms or wall_s, not both", "wall_s")
    study = targets & set(STUDY_TARGETS)
    if study and not {"edited", "annotator"} <= targets:
        missing = "edited" if "edited" not in targets else "annotator"
        raise fail(f"a finished study ({', '.join(sorted(study))}) needs both edited and annotator", missing)


def parse(file: InputFile, *, mapping: dict[str, str]) -> Plan:
    columns, rows = _read(file)
    resolved = resolve_mapping(columns, mapping, file.name)
    study = "edited" in resolved
    plan = Plan(fmt="table", definition_version=DEFINITION_VERSION if study else "")
    items: dict[str, ItemRow] = {}
    for line, record in rows:
        origin = Origin(file.name, line)
        for target, column in resolved.items():
            if column not in record:
                raise ImportDataError(
                    f"this row has no {column!r} (mapped to {target})", file=file.name, line=line, field=column
                )
        values = {target: record[column] for target, column in resolved.items()}
        rest = {c: _kept(v) for c, v in record.items() if c not in resolved.values()}
        item = _item(values, origin, meta={} if study else rest)
        if not study:
            plan.items.append(item)
            continue
        known = items.setdefault(item.external_id, item)
        if known is item:
            plan.items.append(item)
        else:
            _same_item(known, item, resolved)
        plan.post_edits.append(_post_edit(values, item.external_id, origin, extra=rest))
    if not plan.items:
        raise ImportDataError("no rows under the header", file=file.name)
    return plan


def _read(file: InputFile) -> tuple[list[str], Iterator[tuple[int, dict[str, Any]]]]:
    kind = table_kind(file)
    if kind == "jsonl":
        records = list(json_lines(file))
        columns = list(records[0][1]) if records else []
        return columns, iter(records)
    text = file.text()
    reader = csv.reader(io.StringIO(text, newline=""), **_dialect(kind))
    rows = _csv_rows(reader, file)
    try:
        header_line, columns = next(rows)
    except StopIteration:
        raise ImportDataError("the file is empty", file=file.name, line=1) from None
    columns = [c.strip() for c in columns]
    for n, column in enumerate(columns):
        if not column:
            raise ImportDataError(f"column {n + 1} of the header has no name", file=file.name, line=header_line)
        if columns.index(column) != n:
            raise ImportDataError("column named twice in the header", file=file.name, line=header_line, field=column)
    return columns, _records(rows, columns, file)


def _dialect(kind: str) -> dict[str, Any]:
    if kind == "tsv":
        return {"delimiter": "\t", "quoting": csv.QUOTE_NONE}
    return {"dialect": "excel", "strict": True}


def _csv_rows(reader, file: InputFile) -> Iterator[tuple[int, list[str]]]:
    """(first line of the record, fields), skipping blank lines; quoting errors name their line."""
    start = 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ImportDataError(f"unreadable row: {exc}", file=file.name, line=reader.line_num) from None
        if fields and any(f.strip() for f in fields):
            yield start, fields
        start = reader.line_num + 1


def _records(rows, columns: list[str], file: InputFile) -> Iterator[tuple[int, dict[str, Any]]]:
    for line, fields in rows:
        if len(fields) != len(columns):
            raise ImportDataError(
                f"{len(fields)} fields, but the header names {len(columns)} columns",
                file=file.name,
                line=line,
            )
        yield line, dict(zip(columns, fields, strict=True))


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


def _text_list(values: dict[str, Any], target: str, origin: Origin) -> list[str]:
    """JSONL: a list of strings or one string; CSV/TSV: a JSON list ("[...]") or one string."""
    value = values.get(target, "")
    where = {"file": origin.file, "line": origin.line, "field": target}
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            value = load_json(value)
        except json.JSONDecodeError as exc:
            raise ImportDataError(f"starts with '[' but is not a JSON list: {exc.msg}", **where) from None
        except ValueError as exc:
            raise ImportDataError(f"starts with '[' but is not a JSON list: {exc}", **where) from None
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ImportDataError(f"must be a string or a list of strings, got {json_type(value)}", **where)
    return value


def _item(values: dict[str, Any], origin: Origin, meta: dict[str, Any]) -> ItemRow:
    source = _text(values, "source", origin)
    model_output = _text(values, "model_output", origin, required=True)
    external_id = _text(values, "external_id", origin) if "external_id" in values else ""
    if "external_id" in values and not external_id.strip():
        raise ImportDataError("must not be empty", file=origin.file, line=origin.line, field="external_id")
    return ItemRow(
        external_id=external_id or content_id(source, model_output),
        source=source,
        model_output=model_output,
        instruction=_text(values, "instruction", origin),
        references=_text_list(values, "references", origin),
        gold_edits=_text_list(values, "gold_edits", origin),
        meta=meta,
        origin=origin,
    )


def _same_item(known: ItemRow, item: ItemRow, resolved: dict[str, str]) -> None:
    for target in ("model_output", "source", "instruction", "references", "gold_edits"):
        if getattr(known, target) != getattr(item, target):
            raise ImportDataError(
                f"item {item.external_id!r} has a different {target} than at line {known.origin.line}",
                file=item.origin.file,
                line=item.origin.line,
                field=resolved.get(target, target),
            )


def _post_edit(values: dict[str, Any], external_id: str, origin: Origin, extra: dict[str, Any]) -> PostEditRow:
    effort: dict[str, int] = {}
    for target in ("wall_ms", *EFFORT_COUNT_FIELDS):
        if target in values:
            count = _count(values[target], origin, target)
            if count is not None:
                effort[target] = count
    if "wall_s" in values:
        seconds = _number(values["wall_s"], origin, "wall_s")
        if seconds is not None:
            effort["wall_ms"] = round(seconds * 1000)
    return PostEditRow(
        external_id=external_id,
        annotator=_text(values, "annotator", origin, required=True).strip(),
        text=_text(values, "edited", origin),
        effort=effort,
        extra=extra,
        origin=origin,
    )


def _number(value: Any, origin: Origin, target: str) -> float | None:
    if isinstance(value, str):
        if not value.strip():
            return None
        value = scalar(value.strip())
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ImportDataError(f"{value!r} is not a number", file=origin.file, line=origin.line, field=target)
    if value < 0:
        raise ImportDataError(f"{value} is negative", file=origin.file, line=origin.line, field=target)
    return value


def _count(value: Any, origin: Origin, target: str) -> int | None:
    number = _number(value, origin, target)
    if number is None:
        return None
    if number != int(number):
        raise ImportDataError(f"{number} is not a whole number", file=origin.file, line=origin.line, field=target)
    return int(number)
