"""Projects: create and change them, and read their instruction lists (typed or from a JSON file)."""

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from django.db import transaction

from annotations.design import Condition, DesignError, language_error, parse_conditions
from annotations.models import Project
from annotations.selectors_conditions import condition_usage, output_counts
from annotations.services.errors import ServiceError
from editlab import safe_json
from editlab.limits import CONTEXT_WINDOW_MAX, CONTEXT_WINDOW_MIN, IDLE_THRESHOLD_MAX_S, IDLE_THRESHOLD_MIN_S, MAX_SMALL

# More conditions than this is no study design anyone runs (each needs as many annotators and documents).
MAX_CONDITIONS = 100


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
    conditions: Any = None,
    source_lang: str = "",
    target_lang: str = "",
    context: str = Project.CONTEXT_NONE,
    context_window: int = 2,
) -> Project:
    """A new project. Instructions come typed (a list) or from a JSON file (see instructions_from_json);
    the study settings (conditions, languages, document context) as _apply_study_settings checks them."""
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
    _apply_study_settings(
        project,
        conditions=conditions,
        source_lang=source_lang,
        target_lang=target_lang,
        context=context,
        context_window=context_window,
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
    conditions: Any = None,
    source_lang: str | None = None,
    target_lang: str | None = None,
    context: str | None = None,
    context_window: int | None = None,
) -> Project:
    """Change what is given, keep the rest. Items already drawn keep their drawn instruction; a
    condition some work already carries keeps its name and what it showed (_check_condition_changes)."""
    # Under the project's lock, as a designed assignment and a participant's join are: the condition
    # check below sees every assignment made before it, and none is made under it meanwhile.
    list(Project.objects.select_for_update().filter(pk=project.pk).values_list("pk"))
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
    _apply_study_settings(
        project,
        conditions=conditions,
        source_lang=source_lang,
        target_lang=target_lang,
        context=context,
        context_window=context_window,
    )
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


def _apply_study_settings(
    project: Project,
    *,
    conditions: Any,
    source_lang: str | None,
    target_lang: str | None,
    context: str | None,
    context_window: int | None,
) -> None:
    """Check and set the study settings that are given (None: keep)."""
    for field, tag in (("source_lang", source_lang), ("target_lang", target_lang)):
        if tag is None:
            continue
        if not isinstance(tag, str):
            raise ServiceError(f"{field}: must be a BCP 47 language tag (text), e.g. en, de-CH, ar")
        problem = language_error(tag.strip())
        if problem:
            raise ServiceError(f"{field}: {problem}")
        setattr(project, field, tag.strip())
    if context is not None:
        choices = [choice for choice, _ in Project.CONTEXT_CHOICES]
        if context not in choices:
            raise ServiceError(f"context: must be one of {', '.join(choices)}, got {str(context)[:40]!r}")
        project.context = context
    if context_window is not None:
        if isinstance(context_window, bool) or not isinstance(context_window, int):
            raise ServiceError("context_window: must be a whole number of segments")
        if not CONTEXT_WINDOW_MIN <= context_window <= CONTEXT_WINDOW_MAX:
            raise ServiceError(
                f"context_window: must be {CONTEXT_WINDOW_MIN} to {CONTEXT_WINDOW_MAX} segments before and after "
                f"(for more, show the whole document), got {context_window}"
            )
        project.context_window = context_window
    if conditions is not None:
        try:
            declared = parse_conditions(conditions)
        except DesignError as exc:
            raise ServiceError(str(exc)) from None
        if len(declared) > MAX_CONDITIONS:
            raise ServiceError(f"conditions: at most {MAX_CONDITIONS} conditions, got {len(declared)}")
        if project.pk is not None:
            _check_condition_changes(project, declared)
            _check_condition_outputs(project, declared)
        project.conditions = [condition.as_json() for condition in declared]


def _check_condition_changes(project: Project, declared: list[Condition]) -> None:
    """Refuse a change that would rewrite what work already done or assigned means.

    - A condition some assignment carries (live or imported), or that the project's Latin-square
      design counterbalances (crowd participants still join it), keeps its name: removing or
      renaming it would leave that work under a condition the project no longer declares.
    - Its output stays once any post-edit has started under it: the post-edit's start text was
      fixed from it (imported ones were checked against it).
    - Its highlights stay once an annotator has opened an item under it: others would see the
      same condition differently. (Imported post-edits do not hold them back: turning highlights
      on records what a finished study showed.)
    """
    try:
        before = {condition.name: condition for condition in parse_conditions(project.conditions)}
    except DesignError:
        before = {}  # a stored list that no longer parses: only the usage below can hold anything back
    after = {condition.name: condition for condition in declared}
    usage = condition_usage(project=project)
    for name, used in usage.items():
        if not used.holds_name or name in after:
            continue
        raise ServiceError(
            f"conditions: {name!r} cannot be removed or renamed: {used.describe()} carry it. Keep it "
            "(you may add other conditions beside it), or withdraw its pending assignments first"
        )
    for name, condition in after.items():
        old, carried = before.get(name), usage.get(name)
        if old is None or carried is None:
            continue
        if old.output != condition.output and carried.post_edits:
            raise ServiceError(
                f"conditions: {name!r} cannot change what the editor starts from ({_shows(old)} -> "
                f"{_shows(condition)}): {carried.post_edits} post-edit(s) started from {_shows(old)}. "
                "Declare a new condition for the new output instead"
            )
        if old.highlights != condition.highlights and carried.live_post_edits:
            raise ServiceError(
                f"conditions: {name!r} cannot turn highlights {'on' if condition.highlights else 'off'}: "
                f"{carried.live_post_edits} annotator(s)' items under it were already shown "
                f"{'with' if old.highlights else 'without'} them. Declare a new condition instead"
            )


def _check_condition_outputs(project: Project, declared: list[Condition]) -> None:
    """Refuse a new or changed condition whose output no item carries while the items do carry named
    outputs: a name the items lack beside the ones they have is a slip ("sysZ" for "sysA"). Without
    any named output yet (items imported later), the condition is saved and the Settings page warns."""
    try:
        before = {(c.name, c.output) for c in parse_conditions(project.conditions)}
    except DesignError:
        before = set()
    outputs = output_counts(project=project)
    if not outputs:
        return
    for index, condition in enumerate(declared):
        if condition.output is None or condition.output in outputs or (condition.name, condition.output) in before:
            continue
        raise ServiceError(
            f"conditions[{index}].output: condition {condition.name!r} starts from output {condition.output!r}, "
            f"which no item of this project carries; the items carry {', '.join(sorted(outputs))}. Choose one of "
            "them, or import items with that output first"
        )


def _shows(condition: Condition) -> str:
    return "an empty editor" if condition.output is None else f"output {condition.output!r}"
