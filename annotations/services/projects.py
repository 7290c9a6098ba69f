"""Projects: create and change them, and read their instruction lists (typed or from a JSON file)."""

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from django.db import transaction

from annotations.models import Project
from annotations.services.errors import ServiceError
from editlab import safe_json
from editlab.limits import IDLE_THRESHOLD_MAX_S, IDLE_THRESHOLD_MIN_S, MAX_SMALL


def instructions_from_json(
    *, data: bytes | str, task_type: str = "", filename: str = "instructions file"
) -> tuple[list[str], str, str]:
    """Parse an instructions file; returns (instructions, task_type, source).

    Accepted shapes: {"source": ..., "instructions": {task_type: [..]}} (EditEval's),
    {task_type: [..]}, or a plain list of strings. With a mapping, the task type picks
    the list; without one, a file holding a single task type is used as is.
    """
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ServiceError(f"{filename}: not UTF-8 (byte {exc.start})") from None
    try:
        parsed = safe_json.loads(data)  # depth-limited: a file nested 1,000 deep is a message, not a crash
    except json.JSONDecodeError as exc:
        raise ServiceError(f"{filename}: invalid JSON on line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:  # over the depth limit, NaN, NUL, a lone surrogate: the message says where
        raise ServiceError(f"{filename}: {exc}") from None
    source = ""
    if isinstance(parsed, dict) and "instructions" in parsed:
        source = str(parsed.get("source") or "")
        parsed = parsed["instructions"]
    if isinstance(parsed, list):
        return _instruction_list(parsed, filename=filename, where="instructions"), task_type, source
    if not isinstance(parsed, dict) or not parsed:
        raise ServiceError(f"{filename}: expected a list of instructions or an object mapping task types to lists")
    if not task_type:
        if len(parsed) != 1:
            raise ServiceError(
                f"{filename}: holds several task types ({', '.join(sorted(parsed))}); choose the project's task type"
            )
        task_type = next(iter(parsed))
    if task_type not in parsed:
        raise ServiceError(
            f"{filename}: no instructions for task type {task_type!r}; it has {', '.join(sorted(parsed))}"
        )
    return _instruction_list(parsed[task_type], filename=filename, where=task_type), task_type, source


def _instruction_list(value: Any, *, filename: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(text, str) for text in value):
        raise ServiceError(f"{filename}: {where} must be a list of strings")
    return clean_instructions(value)


def clean_instructions(lines: Iterable[str]) -> list[str]:
    """Stripped, non-empty, first occurrence kept: typed lines and file entries alike."""
    seen: dict[str, None] = {}
    for line in lines:
        text = line.strip()
        if text and text not in seen:
            seen[text] = None
    return list(seen)


def _validated_project_fields(*, idle_threshold_s: float, overlap: int) -> None:
    # `not low <= x` is also true for NaN.
    if not IDLE_THRESHOLD_MIN_S <= idle_threshold_s:
        raise ServiceError("idle_threshold_s: must be a positive number of seconds")
    if idle_threshold_s > IDLE_THRESHOLD_MAX_S:
        raise ServiceError(f"idle_threshold_s: must be at most {IDLE_THRESHOLD_MAX_S:,.0f} seconds (a day)")
    if overlap < 1:
        raise ServiceError("overlap: must be at least 1")
    if overlap > MAX_SMALL:
        raise ServiceError(f"overlap: must be at most {MAX_SMALL:,}")


@transaction.atomic
def project_create(
    *,
    name: str,
    guidelines: str = "",
    task_type: str = "",
    instructions: Sequence[str] | None = None,
    instructions_file: bytes | str | Path | None = None,
    instructions_filename: str = "instructions file",
    idle_threshold_s: float = 30.0,
    overlap: int = 1,
    meta: dict | None = None,
) -> Project:
    """A new project. Instructions come typed (a list) or from a JSON file (see instructions_from_json)."""
    name = (name or "").strip()
    if not name:
        raise ServiceError("name: must not be empty")
    if Project.objects.filter(name=name).exists():
        raise ServiceError(f"name: a project called {name!r} already exists")
    _validated_project_fields(idle_threshold_s=idle_threshold_s, overlap=overlap)
    project = Project(
        name=name,
        guidelines=guidelines,
        task_type=task_type.strip(),
        idle_threshold_s=idle_threshold_s,
        overlap=overlap,
        meta=dict(meta or {}),
    )
    _apply_instructions(
        project, instructions=instructions, instructions_file=instructions_file, filename=instructions_filename
    )
    project.save()
    return project


@transaction.atomic
def project_update(
    *,
    project: Project,
    name: str | None = None,
    guidelines: str | None = None,
    task_type: str | None = None,
    instructions: Sequence[str] | None = None,
    instructions_file: bytes | str | Path | None = None,
    instructions_filename: str = "instructions file",
    idle_threshold_s: float | None = None,
    overlap: int | None = None,
) -> Project:
    """Change what is given, keep the rest. Items already drawn keep their drawn instruction."""
    if name is not None:
        name = name.strip()
        if not name:
            raise ServiceError("name: must not be empty")
        if Project.objects.filter(name=name).exclude(pk=project.pk).exists():
            raise ServiceError(f"name: a project called {name!r} already exists")
        project.name = name
    if guidelines is not None:
        project.guidelines = guidelines
    if task_type is not None:
        project.task_type = task_type.strip()
    _validated_project_fields(
        idle_threshold_s=project.idle_threshold_s if idle_threshold_s is None else idle_threshold_s,
        overlap=project.overlap if overlap is None else overlap,
    )
    if idle_threshold_s is not None:
        project.idle_threshold_s = idle_threshold_s
    if overlap is not None:
        project.overlap = overlap
    _apply_instructions(
        project, instructions=instructions, instructions_file=instructions_file, filename=instructions_filename
    )
    project.save()
    return project


def _apply_instructions(
    project: Project,
    *,
    instructions: Sequence[str] | None,
    instructions_file: bytes | str | Path | None,
    filename: str,
) -> None:
    if instructions is not None and instructions_file is not None:
        raise ServiceError("instructions: type them or load a file, not both")
    if instructions is not None:
        project.instructions = clean_instructions(instructions)
        return
    if instructions_file is None:
        return
    if isinstance(instructions_file, Path):
        filename = instructions_file.name
        try:
            instructions_file = instructions_file.read_bytes()
        except OSError as exc:
            raise ServiceError(f"{filename}: cannot read: {exc.strerror}") from None
    loaded, task_type, source = instructions_from_json(
        data=instructions_file, task_type=project.task_type, filename=filename
    )
    if not loaded:
        raise ServiceError(f"{filename}: the instruction list for {task_type!r} is empty")
    project.instructions = loaded
    project.task_type = task_type
    if source:
        project.meta = {**project.meta, "instructions_source": source}
