"""`natinst`: one Super-NaturalInstructions task file (JSON), and what a model made of it.

An instance is a task *input*, not a model output: its `input` becomes the item's
`source`, the task's `Definition` the item's `instruction`, its `output` list the gold
edits, its `id` the item's id (`<file stem>-<n>` when absent). The text to post-edit is
either

- a model's prediction, from a predictions file in the shape the benchmark's evaluation
  reads (`{"id": ..., "prediction": ...}`, one JSON object a line): instances without a
  prediction are not imported (the report says how many; evaluation sets often cover a
  subset), or
- for editing tasks whose input *is* the text to fix (grammar correction, simplification),
  the input itself, when the admin says so (`post_edit_input`); the item then has no source.

The Definition and the positive/negative examples are data, shown to annotators as text
(never Markdown): they go to the project's metadata under "natinst" with the categories,
languages, domains and source, not into the admin-written guidelines.
"""

from __future__ import annotations

import re
from typing import Any

from annotations.importers.base import (
    ImportDataError,
    ImportPlan,
    InputFile,
    ItemRow,
    Origin,
    Where,
    array_lines,
    json_lines,
    json_type,
    parse_json,
    require_str,
    require_str_list,
    shown,
)

META_KEYS = {
    "Categories": "categories",
    "Domains": "domains",
    "Input_language": "input_language",
    "Output_language": "output_language",
    "Instruction_language": "instruction_language",
    "Reasoning": "reasoning",
    "Source": "source",
    "URL": "url",
}
EXAMPLE_KEYS = {"Positive Examples": "positive_examples", "Negative Examples": "negative_examples"}
MISSING_PREDICTIONS_SHOWN = 5


def parse(file: InputFile, *, predictions: InputFile | None = None, post_edit_input: bool = False) -> ImportPlan:
    if predictions is not None and post_edit_input:
        raise ImportDataError(
            "give a predictions file or post-edit the instance inputs, not both", file=predictions.name
        )
    if predictions is None and not post_edit_input:
        raise ImportDataError(
            "an instance's input is the task's input, not a text to post-edit: give the model's predictions "
            '(a JSONL file of {"id", "prediction"}; --predictions on the command line) or, for an editing task '
            "whose input is the text to fix, choose to post-edit the input (--post-edit-input)",
            file=file.name,
        )
    text = file.text()
    try:
        task = parse_json(text, file=file.name)
    except ImportDataError as exc:
        raise _with_instance_line(exc, text) from None
    if not isinstance(task, dict):
        raise ImportDataError(f"expected a JSON object (one task), got {json_type(task)}", file=file.name, line=1)
    instances = task.get("Instances")
    if not isinstance(instances, list) or not instances:
        problem = "is missing" if instances is None else "must be a non-empty list"
        raise ImportDataError(f"required field {problem}", file=file.name, field="Instances")

    stem = file.basename.rsplit(".", 1)[0]
    categories = task.get("Categories") or []
    task_type = categories[0] if isinstance(categories, list) and categories and isinstance(categories[0], str) else ""
    definition = _definition(task, file)
    described = {"task": stem, **{new: task[old] for old, new in META_KEYS.items() if old in task}}
    described["definition"] = definition
    for key, name in EXAMPLE_KEYS.items():
        described[name] = _examples(task, key, file, text)
    plan = ImportPlan(fmt="natinst", task_type=task_type, project_meta={"natinst": described})

    lines = array_lines(text, "Instances")
    rows = [
        _item(instance, n, stem, task_type, definition, Origin(file.name, lines[n] if n < len(lines) else 1))
        for n, instance in enumerate(instances)
    ]
    if post_edit_input:
        for row in rows:
            row.model_output, row.source = row.source, ""
            row.meta["text_to_edit"] = "input"
        plan.items = rows
    else:
        assert predictions is not None  # refused at the top when neither is given
        plan.items = _with_predictions(rows, predictions, file)
        missing = [row.external_id for row in rows if not row.model_output]
        if missing:
            listed = ", ".join(shown(external_id, 40) for external_id in missing[:MISSING_PREDICTIONS_SHOWN])
            more = ", …" if len(missing) > MISSING_PREDICTIONS_SHOWN else ""
            plan.notes.append(
                f"{len(missing)} of {len(rows)} instances have no prediction and were not imported: {listed}{more}"
            )
    return plan


def _with_instance_line(exc: ImportDataError, text: str) -> ImportDataError:
    """An error placed by its path only (`Instances[3].input`) gets the line of that instance."""
    match = re.match(r"Instances\[(\d+)\]", exc.field or "")
    if exc.line is not None or match is None:
        return exc
    lines = array_lines(text, "Instances")
    n = int(match.group(1))
    return ImportDataError(exc.message, file=exc.file, line=lines[n] if n < len(lines) else None, field=exc.field)


def _definition(task: dict[str, Any], file: InputFile) -> str:
    definition = task.get("Definition")
    if definition is None:
        raise ImportDataError("required field is missing", file=file.name, field="Definition")
    if isinstance(definition, str):
        definition = [definition]
    parts = require_str_list(definition, file=file.name, line=1, field="Definition")
    text = "\n\n".join(parts)
    if not text.strip():
        raise ImportDataError("must not be empty", file=file.name, line=1, field="Definition")
    return text


def _examples(task: dict[str, Any], key: str, file: InputFile, text: str) -> list[dict[str, str]]:
    """Examples as data: any string, empty ones included (task922's negative example has an empty output)."""
    examples = task.get(key) or []
    if not isinstance(examples, list):
        raise ImportDataError(f"must be a list, got {json_type(examples)}", file=file.name, field=key)
    lines = array_lines(text, key)
    kept = []
    for n, example in enumerate(examples):
        line = lines[n] if n < len(lines) else 1
        if not isinstance(example, dict):
            raise ImportDataError(f"must be an object, got {json_type(example)}", file=file.name, line=line, field=key)
        kept.append(
            {
                name: require_str(
                    example.get(name, ""), file=file.name, line=line, field=f"{key}[{n}].{name}", allow_empty=True
                )
                for name in ("input", "output", "explanation")
            }
        )
    return kept


def _item(instance: Any, n: int, stem: str, task_type: str, definition: str, origin: Origin) -> ItemRow:
    where: Where = {"file": origin.file, "line": origin.line}
    if not isinstance(instance, dict):
        raise ImportDataError(f"must be an object, got {json_type(instance)}", field=f"Instances[{n}]", **where)
    for name in ("input", "output"):
        if name not in instance:
            raise ImportDataError("required field is missing", field=f"Instances[{n}].{name}", **where)
    external_id = instance.get("id", f"{stem}-{n + 1}")
    return ItemRow(
        external_id=require_str(external_id, field=f"Instances[{n}].id", **where),
        source=require_str(instance["input"], field=f"Instances[{n}].input", **where),
        model_output="",  # the prediction, or the input itself: filled by parse
        instruction=definition,
        gold_edits=require_str_list(instance["output"], field=f"Instances[{n}].output", **where),
        task_type=task_type,
        meta={"natinst_task": stem},
        origin=origin,
    )


def _with_predictions(rows: list[ItemRow], predictions: InputFile, task: InputFile) -> list[ItemRow]:
    """The rows that have a prediction, in the task's order, each with its prediction to post-edit."""
    by_id = {row.external_id: row for row in rows}
    seen: dict[str, int] = {}
    for line, record in json_lines(predictions):
        where: Where = {"file": predictions.name, "line": line}
        for name in ("id", "prediction"):
            if name not in record:
                raise ImportDataError(
                    'required field is missing (a predictions file has {"id", "prediction"} on each line)',
                    field=name,
                    **where,
                )
        external_id = record["id"]
        if isinstance(external_id, int) and not isinstance(external_id, bool):
            external_id = str(external_id)
        external_id = require_str(external_id, field="id", **where)
        prediction = record["prediction"]
        if not isinstance(prediction, str):
            raise ImportDataError(f"must be a string, got {json_type(prediction)}", field="prediction", **where)
        if not prediction.strip():
            raise ImportDataError(
                f"the prediction for {shown(external_id)} is empty: there is no text to post-edit",
                field="prediction",
                **where,
            )
        if external_id in seen:
            raise ImportDataError(
                f"a second prediction for {shown(external_id)} (the first is on line {seen[external_id]})",
                field="id",
                **where,
            )
        row = by_id.get(external_id)
        if row is None:
            raise ImportDataError(
                f"{shown(external_id)} matches no instance of {task.basename} (its ids look like "
                f"{shown(rows[0].external_id)}); is this the predictions file of another task?",
                field="id",
                **where,
            )
        seen[external_id] = line
        row.model_output = prediction
    if not seen:
        raise ImportDataError("the predictions file holds no predictions", file=predictions.name)
    return [row for row in rows if row.model_output]
