"""The one writer every importer shares: checks a plan against the project, then stores it with
bulk inserts inside the caller's transaction; raises before writing anything.

What is checked where: the plan on its own in checks.py, its conditions and start texts in
conditions.py, against what the project already holds (re-imports, positions, accounts) in
existing.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db.models import Max
from django.utils import timezone

from annotations.design import Condition
from annotations.importers.base import ImportPlan, ItemRow, PostEditRow
from annotations.importers.checks import (
    MAX_TASK_TYPE,
    check_design,
    check_plan,
    check_text_sizes,
    normalize_plan_line_endings,
)
from annotations.importers.conditions import plan_conditions, starting_texts
from annotations.importers.existing import check_positions, existing_items, existing_post_edits, plan_annotators
from annotations.models import Assignment, Item, PostEdit, Project
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
    """Check the plan against itself and the project, then write it; raises before writing."""
    check_plan(plan)
    check_design(plan)
    endings = normalize_plan_line_endings(plan)
    if endings:
        report.notes.append(endings)
    check_text_sizes(plan)
    declared, new_conditions = plan_conditions(project, plan)
    starts = starting_texts(plan, declared)
    existing = existing_items(project, plan.items)
    new_items = [row for row in plan.items if row.external_id not in existing]
    check_positions(project, plan.items, new_items)
    annotators = plan_annotators(plan.post_edits)
    skipped_post_edits = existing_post_edits(plan.post_edits, existing, annotators)

    _update_project(project, plan, report, new_conditions)
    item_ids = {external_id: pk for external_id, (pk, _) in existing.items()}
    item_ids.update(_create_items(project, new_items))
    report.items_created = len(new_items)
    report.items_skipped = len(plan.items) - len(new_items)

    users = {name: _annotator_account(name, user, report) for name, user in annotators.items()}
    to_create = [row for row in plan.post_edits if (row.external_id, row.annotator) not in skipped_post_edits]
    _create_post_edits(plan, to_create, item_ids, users, starts)
    report.post_edits_created = len(to_create)
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


def _create_items(project: Project, rows: list[ItemRow]) -> dict[str, int]:
    if not rows:
        return {}
    last = project.items.aggregate(last=Max("position"))["last"]
    start = 0 if last is None else last + 1
    ids: dict[str, int] = {}
    # A chunk's model instances at a time: memory holds BULK_SIZE of them, not the whole file's.
    for low in range(0, len(rows), BULK_SIZE):
        items = [
            Item(
                project=project,
                external_id=row.external_id,
                source=row.source,
                model_output=row.model_output,
                instruction=row.instruction,
                references=row.references,
                gold_edits=row.gold_edits,
                task_type=row.task_type,
                meta=row.meta,
                position=start + low + n,
                document=row.document,
                document_position=row.document_position,
                outputs=row.outputs,
                highlights=row.highlights,
                practice=row.practice,
            )
            for n, row in enumerate(rows[low : low + BULK_SIZE])
        ]
        project.draw_instructions(items)
        # SQLite >= 3.35 and PostgreSQL both return the new primary keys from bulk inserts.
        ids.update((item.external_id, item.pk) for item in Item.objects.bulk_create(items))
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


def _create_post_edits(
    plan: ImportPlan,
    rows: list[PostEditRow],
    item_ids: dict[str, int],
    users: dict,
    starts: dict[tuple[str, str], str],
) -> None:
    if not rows:
        return
    now = timezone.now()
    for low in range(0, len(rows), BULK_SIZE):
        chunk = rows[low : low + BULK_SIZE]
        assignments = Assignment.objects.bulk_create(
            [
                Assignment(
                    item_id=item_ids[row.external_id],
                    annotator=users[row.annotator],
                    status=Assignment.SUBMITTED,
                    finished=now,
                    condition=row.condition,
                )
                for row in chunk
            ]
        )
        PostEdit.objects.bulk_create(
            [
                PostEdit(
                    assignment=assignment,
                    text=row.text,
                    draft_text=row.text,
                    origin=PostEdit.IMPORTED,
                    origin_detail={
                        "format": plan.fmt,
                        "file": row.origin.file,
                        "line": row.origin.line,
                        **({"line_endings": row.line_endings} if row.line_endings else {}),
                    },
                    definition_version=plan.definition_version,
                    submitted_at=now,
                    extra=row.extra,
                    condition=row.condition,
                    start_override=starts.get((row.external_id, row.annotator)),
                    **row.effort,
                )
                for assignment, row in zip(assignments, chunk, strict=True)
            ]
        )
