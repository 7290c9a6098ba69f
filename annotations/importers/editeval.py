"""`editeval`: JSONL in EditEval's core format, one example per line.

Two shapes are read. EditEval's dataset features: `id` (string or number), `input` (the
text to edit), `edits` (list of gold targets, may be empty), `tasks` (a task name, or a
list of them). And what EditEval's own JSONL writer (`main.py --write_to_jsonl`) emits:
`task_type` instead of `tasks` and no `edits` (the gold stays with the benchmark). Optional
in both: `title`, `retrieved_documents` (list of strings or {"url", "title", "text"}
objects, kept as the item's references), `meta` (an object; the writer puts `[]` when an
example has none, and a non-empty list is kept under meta["meta"]).

The `title` (the article a text comes from) is the example's document: examples with the
same title are the segments of one document, numbered in file order after the positions
that document already has in the project.
"""

from __future__ import annotations

from typing import Any

from annotations.importers import study
from annotations.importers.base import (
    ImportDataError,
    ImportPlan,
    InputFile,
    ItemRow,
    Origin,
    Where,
    json_lines,
    json_type,
    require_str,
    require_str_list,
)

REQUIRED = ("id", "input")


def parse(file: InputFile) -> ImportPlan:
    plan = ImportPlan(fmt="editeval")
    for line_no, record in json_lines(file):
        plan.items.append(_item(record, Origin(file.name, line_no)))
    if not plan.items:
        raise ImportDataError("no examples in the file", file=file.name)
    return plan


def _item(record: dict[str, Any], origin: Origin) -> ItemRow:
    where: Where = {"file": origin.file, "line": origin.line}
    for name in REQUIRED:
        if name not in record:
            raise ImportDataError("required field is missing", field=name, **where)
    external_id = record["id"]
    if isinstance(external_id, bool) or not isinstance(external_id, str | int):
        raise ImportDataError(f"must be a string or a number, got {json_type(external_id)}", field="id", **where)
    external_id = require_str(str(external_id), field="id", **where)
    tasks = _tasks(record, where)
    references = record.get("retrieved_documents") or []
    if not isinstance(references, list):
        raise ImportDataError(f"must be a list, got {json_type(references)}", field="retrieved_documents", **where)
    meta = record.get("meta") or {}
    if isinstance(meta, list):
        meta = {"meta": meta}
    if not isinstance(meta, dict):
        raise ImportDataError(f"must be an object or a list, got {json_type(meta)}", field="meta", **where)
    title = record.get("title") or ""
    if not isinstance(title, str):
        raise ImportDataError(f"must be a string, got {json_type(title)}", field="title", **where)
    return ItemRow(
        external_id=external_id,
        model_output=require_str(record["input"], field="input", **where),
        gold_edits=require_str_list(record.get("edits", []), field="edits", **where),
        references=references,
        task_type=",".join(tasks),
        meta={**meta, **({"title": title} if title else {}), **({"tasks": tasks} if len(tasks) > 1 else {})},
        origin=origin,
        document=study.document_id(title, origin=origin, field="title"),
    )


def _tasks(record: dict[str, Any], where: Where) -> list[str]:
    """`tasks` (EditEval's feature) or `task_type` (its JSONL writer): a name or a list of names."""
    present = [name for name in ("tasks", "task_type") if name in record]
    if not present:
        raise ImportDataError(
            "required field is missing (or task_type, as EditEval's writer names it)", field="tasks", **where
        )
    if len(present) == 2 and record["tasks"] != record["task_type"]:
        raise ImportDataError("tasks and task_type disagree; give one of them", field="task_type", **where)
    tasks = record[present[0]]
    if isinstance(tasks, str):
        tasks = [tasks] if tasks else []
    return require_str_list(tasks, field=present[0], **where)
