"""`natinst`: one Super-NaturalInstructions task file (JSON).

`Definition` (string or list of strings) and the `Positive Examples` / `Negative
Examples` become the project's guidelines (markdown); each of `Instances` becomes an
item: `input` is the text to edit, the `output` list its gold edits, `id` its id (or
<file stem>-<n> when absent). Categories, languages, domains and the source are kept
in the project's metadata under "natinst".
"""

from __future__ import annotations

import json
from typing import Any

from annotations.importers.base import (
    ImportDataError,
    InputFile,
    ItemRow,
    Origin,
    Plan,
    array_lines,
    json_type,
    load_json,
    require_str,
    require_str_list,
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
EXAMPLE_KEYS = ("Positive Examples", "Negative Examples")


def parse(file: InputFile) -> Plan:
    text = file.text()
    try:
        task = load_json(text)
    except json.JSONDecodeError as exc:
        raise ImportDataError(
            f"invalid JSON: {exc.msg} (column {exc.colno})", file=file.name, line=exc.lineno
        ) from None
    except ValueError as exc:
        raise ImportDataError(f"invalid JSON: {exc}", file=file.name) from None
    if not isinstance(task, dict):
        raise ImportDataError(f"expected a JSON object (one task), got {json_type(task)}", file=file.name, line=1)
    instances = task.get("Instances")
    if not isinstance(instances, list) or not instances:
        problem = "is missing" if instances is None else "must be a non-empty list"
        raise ImportDataError(f"required field {problem}", file=file.name, field="Instances")

    stem = file.basename.rsplit(".", 1)[0]
    categories = task.get("Categories") or []
    task_type = categories[0] if isinstance(categories, list) and categories and isinstance(categories[0], str) else ""
    plan = Plan(
        fmt="natinst",
        guidelines=_guidelines(task, file, text),
        task_type=task_type,
        project_meta={"natinst": {"task": stem, **{new: task[old] for old, new in META_KEYS.items() if old in task}}},
    )
    lines = array_lines(text, "Instances")
    for n, instance in enumerate(instances):
        origin = Origin(file.name, lines[n] if n < len(lines) else 1)
        plan.items.append(_item(instance, n, stem, task_type, origin))
    return plan


def _guidelines(task: dict[str, Any], file: InputFile, text: str) -> str:
    definition = task.get("Definition")
    if definition is None:
        raise ImportDataError("required field is missing", file=file.name, field="Definition")
    if isinstance(definition, str):
        definition = [definition]
    definition = require_str_list(definition, file=file.name, line=1, field="Definition")
    parts = ["## Definition", *definition]
    for key in EXAMPLE_KEYS:
        examples = task.get(key) or []
        if not isinstance(examples, list):
            raise ImportDataError(f"must be a list, got {json_type(examples)}", file=file.name, field=key)
        lines = array_lines(text, key)
        if examples:
            parts.append(f"## {key.capitalize()}")
        for n, example in enumerate(examples, start=1):
            line = lines[n - 1] if n <= len(lines) else 1
            parts.append(_example(example, n, file.name, line, key))
    return "\n\n".join(parts) + "\n"


def _example(example: Any, n: int, file: str, line: int, key: str) -> str:
    if not isinstance(example, dict):
        raise ImportDataError(f"must be an object, got {json_type(example)}", file=file, line=line, field=key)
    values = {
        name: require_str(
            example.get(name, ""),
            file=file,
            line=line,
            field=f"{key}[{n - 1}].{name}",
            allow_empty=name == "explanation",
        )
        for name in ("input", "output", "explanation")
    }
    block = [f"### Example {n}", "Input:", _fenced(values["input"]), "Output:", _fenced(values["output"])]
    if values["explanation"]:
        block.append(f"Explanation: {values['explanation']}")
    return "\n\n".join(block)


def _fenced(text: str) -> str:
    fence = "~~~~"
    while fence in text:
        fence += "~"
    return f"{fence}\n{text}\n{fence}"


def _item(instance: Any, n: int, stem: str, task_type: str, origin: Origin) -> ItemRow:
    where = {"file": origin.file, "line": origin.line}
    if not isinstance(instance, dict):
        raise ImportDataError(f"must be an object, got {json_type(instance)}", field=f"Instances[{n}]", **where)
    for name in ("input", "output"):
        if name not in instance:
            raise ImportDataError("required field is missing", field=f"Instances[{n}].{name}", **where)
    external_id = instance.get("id", f"{stem}-{n + 1}")
    return ItemRow(
        external_id=require_str(external_id, field=f"Instances[{n}].id", **where),
        model_output=require_str(instance["input"], field=f"Instances[{n}].input", **where),
        gold_edits=require_str_list(instance["output"], field=f"Instances[{n}].output", **where),
        task_type=task_type,
        origin=origin,
    )
