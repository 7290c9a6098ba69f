"""The one writer every importer shares: checks a plan against the project, then stores it with
bulk inserts inside the caller's transaction; raises before writing anything.

What is checked where: the plan on its own in checks.py, its conditions and start texts in
conditions.py, against what the project already holds (re-imports, positions, accounts) in
existing.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from django.contrib.auth import get_user_model
from django.db.models import Max
from django.utils import timezone

from annotations.design import Condition
from annotations.importers.base import ImportPlan, ItemRow
from annotations.importers.bulk import Inserter
from annotations.importers.checks import (
    MAX_TASK_TYPE,
    check_design,
    check_plan,
    check_text_sizes,
    normalize_plan_line_endings,
    post_edit_facts,
)
from annotations.importers.conditions import Starts, plan_conditions, starting_texts
from annotations.importers.existing import check_positions, existing_items, existing_post_edits, plan_annotators
from annotations.models import EFFORT_FIELDS, Assignment, Item, PostEdit, Project
from annotations.roles import ANNOTATOR, set_role

BULK_SIZE = 1000


@dataclass
class ImportReport:
    project: str
    fmt: str
    files: list[str] = field(default_factory=list)
    project_id: int | None = None
    project_created: bool = False
    items_created: int = 0
    items_skipped: int = 0
    post_edits_created: int = 0
    post_edits_skipped: int = 0
    annotators_created: list[str] = field(default_factory=list)
    evaluations_created: int = 0
    evaluations_skipped: int = 0
    error_spans_created: int = 0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [
            f"Imported {', '.join(self.files)} ({self.fmt}) into project {self.project!r}"
            + (" (created)" if self.project_created else "")
            + ":",
            f"  items created: {self.items_created}, skipped as already present: {self.items_skipped}",
        ]
        if self.post_edits_created or self.post_edits_skipped:
            lines.append(
                f"  post-edits created: {self.post_edits_created}, "
                f"skipped as already present: {self.post_edits_skipped}"
            )
        if self.evaluations_created or self.evaluations_skipped:
            lines.append(
                f"  evaluations created: {self.evaluations_created} with {self.error_spans_created} error spans, "
                f"skipped as already present: {self.evaluations_skipped}"
            )
        if self.annotators_created:
            lines.append(f"  inactive annotator accounts created: {', '.join(self.annotators_created)}")
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)


def plan_store(*, project: Project, plan: ImportPlan, report: ImportReport) -> None:
    """Check the plan against itself and the project, then write it; raises before writing.

    The post-edits are read in passes (post_edit_facts, the re-import check, the inserts), never
    all held at once: a spooled plan keeps them on disk."""
    facts = post_edit_facts(plan.post_edit_rows())
    check_plan(plan, facts)
    check_design(plan)
    endings = normalize_plan_line_endings(plan, facts)
    if endings:
        report.notes.append(endings)
    check_text_sizes(plan, facts)
    declared, new_conditions = plan_conditions(project, plan, facts)
    starts = starting_texts(plan, declared, facts)
    existing = existing_items(project, plan.items)
    new_items = [row for row in plan.items if row.external_id not in existing]
    check_positions(project, plan.items, new_items)
    annotators = plan_annotators(facts.annotators)
    skipped_post_edits = existing_post_edits(plan.post_edit_rows(), existing, annotators)

    _update_project(project, plan, report, new_conditions)
    item_ids = {external_id: pk for external_id, (pk, _) in existing.items()}
    item_ids.update(_create_items(project, new_items))
    report.items_created = len(new_items)
    report.items_skipped = len(plan.items) - len(new_items)

    users = {name: _annotator_account(name, user, report) for name, user in annotators.items()}
    _create_post_edits(plan, skipped_post_edits, item_ids, users, starts)
    report.post_edits_created = facts.count - len(skipped_post_edits)
    report.post_edits_skipped = len(skipped_post_edits)


def _update_project(project: Project, plan: ImportPlan, report: ImportReport, new_conditions: list[Condition]) -> None:
    """Fill what the file defines without overwriting what the project already has."""
    changed: list[str] = []
    if new_conditions:
        project.conditions = [*project.conditions, *(condition.as_json() for condition in new_conditions)]
        changed.append("conditions")
        shows = ", ".join(
            f"{c.name} ({'an empty editor' if c.output is None else f'output {c.output!r}'})" for c in new_conditions
        )
        report.notes.append(
            f"declared the file's conditions on the project: {shows}; without highlights "
            "(turn them on in the project's conditions if the study showed them)"
        )
    if plan.task_type and not project.task_type:
        project.task_type = plan.task_type[:MAX_TASK_TYPE]
        changed.append("task_type")
    for key, value in plan.project_meta.items():
        if key not in project.meta:
            project.meta = {**project.meta, key: value}
            changed.append("meta")
        elif project.meta[key] != value:
            report.notes.append(f"the project's metadata {key!r} differs from the file's; kept the project's")
    if changed:
        project.save(update_fields=sorted(set(changed)))


ITEM_COLUMNS = ("project_id", *Item.DATA_FIELDS)


@dataclass(slots=True)
class _Drawn:
    """What Project.draw_instructions reads and sets of an item."""

    external_id: str
    instruction: str
    drawn_instruction: str = ""


def _create_items(project: Project, rows: list[ItemRow]) -> dict[str, int]:
    if not rows:
        return {}
    last = project.items.aggregate(last=Max("position"))["last"]
    start = 0 if last is None else last + 1
    ids: dict[str, int] = {}
    inserter = Inserter(Item, ITEM_COLUMNS)
    # A chunk's rows at a time: memory holds BULK_SIZE of them, not the whole file's.
    for low in range(0, len(rows), BULK_SIZE):
        chunk = rows[low : low + BULK_SIZE]
        drawn = [_Drawn(row.external_id, row.instruction) for row in chunk]
        project.draw_instructions(cast(list[Item], drawn))
        pks = inserter.insert_returning(
            (
                project.pk,
                row.external_id,
                row.source,
                row.model_output,
                row.instruction,
                draw.drawn_instruction,
                row.references,
                row.gold_edits,
                row.task_type,
                row.meta,
                start + low + n,
                row.document,
                row.document_position,
                row.outputs,
                row.highlights,
                row.practice,
            )
            for n, (row, draw) in enumerate(zip(chunk, drawn, strict=True))
        )
        ids.update(zip((row.external_id for row in chunk), pks, strict=True))
    return ids


def _annotator_account(name: str, user, report: ImportReport):
    """An existing annotator, or a new inactive one: it only owns imported work, nobody logs in as it."""
    if user is not None:
        return user
    User = get_user_model()
    user = User(username=name, is_active=False)
    user.set_unusable_password()
    user.save()
    set_role(user, ANNOTATOR)
    report.annotators_created.append(name)
    return user


POST_EDIT_COLUMNS = (
    "assignment_id",
    "text",
    "draft_text",
    "origin_detail",
    "extra",
    "condition",
    "start_override",
    *EFFORT_FIELDS,
)


def _create_post_edits(
    plan: ImportPlan,
    skipped: set[tuple[str, str]],
    item_ids: dict[str, int],
    users: dict,
    starts: Starts,
) -> None:
    """An assignment (submitted) and its post-edit for each row not skipped, BULK_SIZE rows at a time."""
    now = timezone.now()
    assignments = Inserter(
        Assignment,
        ("item_id", "annotator_id", "condition"),
        {"status": Assignment.SUBMITTED, "finished": now},
    )
    post_edits = Inserter(
        PostEdit,
        POST_EDIT_COLUMNS,
        {"origin": PostEdit.IMPORTED, "definition_version": plan.definition_version, "submitted_at": now},
    )
    user_ids = {name: user.pk for name, user in users.items()}
    for rows in plan.post_edit_chunks(BULK_SIZE):
        chunk = [row for row in rows if (row.external_id, row.annotator) not in skipped] if skipped else rows
        if not chunk:
            continue
        assignment_ids = assignments.insert_returning(
            (item_ids[row.external_id], user_ids[row.annotator], row.condition) for row in chunk
        )
        post_edits.insert(
            (
                assignment_id,
                row.text,
                row.text,
                {
                    "format": plan.fmt,
                    "file": row.origin.file,
                    "line": row.origin.line,
                    **({"line_endings": row.line_endings} if row.line_endings else {}),
                },
                row.extra,
                row.condition,
                starts.of(row),
                *(row.effort.get(name) for name in EFFORT_FIELDS),
            )
            for assignment_id, row in zip(assignment_ids, chunk, strict=True)
        )
