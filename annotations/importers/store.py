"""The one writer every importer shares: checks a plan against the project, then
stores it with bulk inserts inside the caller's transaction.

Re-import policy: an item whose external_id already exists in the project with the
same source and model_output is skipped (counted); the same id with different text
stops the import. A post-edit that already exists (same item, same annotator,
imported, same text) is skipped; any other existing assignment for that pair stops it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db.models import Max
from django.utils import timezone

from annotations.importers.base import ImportDataError, ItemRow, Origin, Plan, PostEditRow
from annotations.models import Assignment, Item, PostEdit, Project
from annotations.roles import ANNOTATOR, is_annotator, set_role

BULK_SIZE = 1000
MAX_EXTERNAL_ID = Item._meta.get_field("external_id").max_length
MAX_TASK_TYPE = Item._meta.get_field("task_type").max_length


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
        if self.annotators_created:
            lines.append(f"  inactive annotator accounts created: {', '.join(self.annotators_created)}")
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)


def plan_store(*, project: Project, plan: Plan, report: ImportReport) -> None:
    """Check the plan against itself and the project, then write it; raises before writing."""
    _check_plan(plan)
    existing = _existing_items(project, plan.items)
    annotators = _annotators(plan.post_edits)
    skipped_post_edits = _existing_post_edits(plan.post_edits, existing, annotators)

    _update_project(project, plan, report)
    item_ids = {external_id: pk for external_id, (pk, _) in existing.items()}
    new_items = [row for row in plan.items if row.external_id not in existing]
    item_ids.update(_create_items(project, new_items))
    report.items_created = len(new_items)
    report.items_skipped = len(plan.items) - len(new_items)

    users = {name: _annotator_account(name, user, report) for name, user in annotators.items()}
    to_create = [row for row in plan.post_edits if (row.external_id, row.annotator) not in skipped_post_edits]
    _create_post_edits(plan, to_create, item_ids, users)
    report.post_edits_created = len(to_create)
    report.post_edits_skipped = len(skipped_post_edits)


def _fail(message: str, origin: Origin, field: str | None = None) -> ImportDataError:
    return ImportDataError(message, file=origin.file, line=origin.line, field=field)


def _check_plan(plan: Plan) -> None:
    seen: dict[str, Origin] = {}
    for row in plan.items:
        if len(row.external_id) > MAX_EXTERNAL_ID:
            raise _fail(f"id is longer than {MAX_EXTERNAL_ID} characters", row.origin, "external_id")
        if len(row.task_type) > MAX_TASK_TYPE:
            raise _fail(f"task type is longer than {MAX_TASK_TYPE} characters", row.origin, "task_type")
        first = seen.setdefault(row.external_id, row.origin)
        if first is not row.origin:
            raise _fail(
                f"duplicate id {row.external_id!r} (first at {first.file}, line {first.line})",
                row.origin,
                "external_id",
            )
    pairs: dict[tuple[str, str], Origin] = {}
    username = UnicodeUsernameValidator()
    for row in plan.post_edits:
        try:
            username(row.annotator)
        except ValidationError:
            raise _fail(
                f"annotator name {row.annotator!r} is not a valid username "
                "(letters, digits and @ . + - _ only, at most 150 characters)",
                row.origin,
                "annotator",
            ) from None
        if len(row.annotator) > 150:
            raise _fail("annotator name is longer than 150 characters", row.origin, "annotator")
        first = pairs.setdefault((row.external_id, row.annotator), row.origin)
        if first is not row.origin:
            raise _fail(
                f"annotator {row.annotator!r} edits item {row.external_id!r} twice "
                f"(first at {first.file}, line {first.line})",
                row.origin,
                "annotator",
            )


def _existing_items(project: Project, rows: list[ItemRow]) -> dict[str, tuple[int, ItemRow]]:
    """Items of the project with the plan's ids; the same id with other text is a conflict."""
    wanted = {row.external_id: row for row in rows}
    found: dict[str, tuple[int, ItemRow]] = {}
    for ids in _chunks(list(wanted)):
        stored = project.items.filter(external_id__in=ids).values_list("external_id", "id", "source", "model_output")
        for external_id, pk, source, model_output in stored:
            row = wanted[external_id]
            if (source, model_output) != (row.source, row.model_output):
                changed = "model_output" if model_output != row.model_output else "source"
                raise _fail(
                    f"duplicate id {external_id!r}: project {project.name!r} already has this item "
                    f"with a different {changed}",
                    row.origin,
                    "external_id",
                )
            found[external_id] = (pk, row)
    return found


def _chunks(values: list, size: int = 2000):
    # Keeps each IN (...) well under SQLite's bound-parameter limit.
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _annotators(rows: list[PostEditRow]) -> dict[str, object | None]:
    """Every annotator name of the plan -> its existing account (None: to be created)."""
    first_row: dict[str, PostEditRow] = {}
    for row in rows:
        first_row.setdefault(row.annotator, row)
    User = get_user_model()
    existing = {user.username: user for user in User.objects.filter(username__in=list(first_row))}
    for name, user in existing.items():
        if not is_annotator(user):
            raise _fail(
                f"user {name!r} exists and is not an annotator; imported work is only attached to annotator accounts",
                first_row[name].origin,
                "annotator",
            )
    return {name: existing.get(name) for name in first_row}


def _existing_post_edits(
    rows: list[PostEditRow], existing: dict[str, tuple[int, ItemRow]], annotators: dict
) -> set[tuple[str, str]]:
    """(external_id, annotator) pairs already imported identically; anything else there stops."""
    users = {user.pk: name for name, user in annotators.items() if user is not None}
    items = {pk: external_id for external_id, (pk, _) in existing.items()}
    if not users or not items:
        return set()
    wanted = {(row.external_id, row.annotator): row for row in rows}
    stored = [
        found
        for item_ids in _chunks(list(items))
        for found in Assignment.objects.filter(annotator_id__in=list(users), item_id__in=item_ids).values_list(
            "item_id", "annotator_id", "status", "post_edit__origin", "post_edit__text"
        )
    ]
    same: set[tuple[str, str]] = set()
    for item_id, user_id, status, origin, text in stored:
        key = (items[item_id], users[user_id])
        row = wanted.get(key)
        if row is None:
            continue
        if status == Assignment.SUBMITTED and origin == PostEdit.IMPORTED and text == row.text:
            same.add(key)
            continue
        what = "a different post-edit" if status == Assignment.SUBMITTED else f"an assignment ({status})"
        raise _fail(
            f"annotator {key[1]!r} already has {what} of item {key[0]!r} in this project; nothing is overwritten",
            row.origin,
            "annotator",
        )
    return same


def _update_project(project: Project, plan: Plan, report: ImportReport) -> None:
    """Fill what the file defines without overwriting what the project already has."""
    changed: list[str] = []
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
            position=start + n,
        )
        for n, row in enumerate(rows)
    ]
    project.draw_instructions(items)
    # SQLite >= 3.35 and PostgreSQL both return the new primary keys from bulk inserts.
    created = Item.objects.bulk_create(items, batch_size=BULK_SIZE)
    return {item.external_id: item.pk for item in created}


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


def _create_post_edits(plan: Plan, rows: list[PostEditRow], item_ids: dict[str, int], users: dict) -> None:
    if not rows:
        return
    now = timezone.now()
    assignments = Assignment.objects.bulk_create(
        [
            Assignment(
                item_id=item_ids[row.external_id],
                annotator=users[row.annotator],
                status=Assignment.SUBMITTED,
                finished=now,
            )
            for row in rows
        ],
        batch_size=BULK_SIZE,
    )
    PostEdit.objects.bulk_create(
        [
            PostEdit(
                assignment=assignment,
                text=row.text,
                draft_text=row.text,
                origin=PostEdit.IMPORTED,
                origin_detail={"format": plan.fmt, "file": row.origin.file, "line": row.origin.line},
                definition_version=plan.definition_version,
                submitted_at=now,
                extra=row.extra,
                **row.effort,
            )
            for assignment, row in zip(assignments, rows, strict=True)
        ],
        batch_size=BULK_SIZE,
    )
