"""Admin-side services: users and roles, projects, batches, assignment with overlap, progress.

Every function that changes data is keyword-only, typed and atomic. Bad input raises
ServiceError with a message naming the problem; callers (commands, pages, API) show it.
"""

import json
import random
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Count, QuerySet

from annotations.models import Assignment, Batch, Item, Project
from annotations.roles import ANNOTATOR, ROLES, is_annotator, set_role

User = get_user_model()


class ServiceError(ValueError):
    """Input the service refuses; the message is meant for the person who gave it."""


# --------------------------------------------------------------------------- users


@transaction.atomic
def user_add(*, username: str, role: str, password: str | None = None, email: str | None = None) -> tuple[Any, bool]:
    """Create the user or update an existing one; returns (user, created).

    The role replaces any earlier one; admins become staff (Django admin site access),
    everyone else loses staff status. A new account needs a password.
    """
    username = (username or "").strip()
    if not username:
        raise ServiceError("username: must not be empty")
    if role not in ROLES:
        raise ServiceError(f"role: unknown role {role!r}; choose one of {', '.join(ROLES)}")
    user = User.objects.filter(username=username).first()
    created = user is None
    if created:
        if not password:
            raise ServiceError(f"password: a new user ({username}) needs a password")
        user = User(username=username)
    if password:
        try:
            validate_password(password, user=user)
        except ValidationError as exc:
            raise ServiceError("password: " + " ".join(exc.messages)) from None
        user.set_password(password)
    if email is not None:
        user.email = email
    user.is_active = True
    user.save()
    set_role(user, role)
    return user, created


@transaction.atomic
def user_set_role(*, user, role: str) -> None:
    if role not in ROLES:
        raise ServiceError(f"role: unknown role {role!r}; choose one of {', '.join(ROLES)}")
    set_role(user, role)


def annotators_by_name(*, usernames: Iterable[str]) -> list:
    """Active annotator accounts in the order given; unknown or non-annotator names are an error."""
    names = [name.strip() for name in usernames if name and name.strip()]
    if not names:
        raise ServiceError("annotators: name at least one annotator")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ServiceError(f"annotators: listed twice: {', '.join(duplicates)}")
    users = {user.username: user for user in User.objects.filter(username__in=names).prefetch_related("groups")}
    missing = [name for name in names if name not in users]
    if missing:
        raise ServiceError(f"annotators: no such user: {', '.join(missing)}")
    not_annotators = [name for name in names if not is_annotator(users[name])]
    if not_annotators:
        raise ServiceError(f"annotators: not in the annotator role: {', '.join(not_annotators)}")
    inactive = [name for name in names if not users[name].is_active]
    if inactive:
        raise ServiceError(f"annotators: inactive accounts cannot be assigned work: {', '.join(inactive)}")
    return [users[name] for name in names]


def annotator_queryset() -> QuerySet:
    return User.objects.filter(groups__name=ANNOTATOR, is_active=True).order_by("username")


# --------------------------------------------------------------------------- projects


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
        parsed = json.loads(data)
    except json.JSONDecodeError as exc:
        raise ServiceError(f"{filename}: invalid JSON on line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
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
    if not idle_threshold_s or idle_threshold_s <= 0:
        raise ServiceError("idle_threshold_s: must be a positive number of seconds")
    if overlap < 1:
        raise ServiceError("overlap: must be at least 1")


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


# --------------------------------------------------------------------------- batches


@transaction.atomic
def batch_make(*, project: Project, size: int, shuffle_seed: int | None = None) -> list[Batch]:
    """Cut the project's unbatched items into batches of `size` (the last may be smaller).

    Order: the items' import order (Item.position), or a random order drawn from
    `shuffle_seed` (the same seed and items give the same batches). Size and seed are
    recorded in the project's meta["batching"], so the cut can be reproduced.
    """
    if size < 1:
        raise ServiceError("size: must be at least 1")
    project = Project.objects.select_for_update().get(pk=project.pk)
    items = list(project.items.unbatched().order_by("position", "id"))
    if not items:
        return []
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(items)
    start_number = _next_batch_number(project)
    chunks = [items[offset : offset + size] for offset in range(0, len(items), size)]
    batches = Batch.objects.bulk_create(
        [Batch(project=project, name=f"batch {start_number + n:03d}") for n in range(len(chunks))]
    )
    _set_batch_membership(
        (batch.pk, batch_position, item.pk)
        for batch, chunk in zip(batches, chunks, strict=True)
        for batch_position, item in enumerate(chunk)
    )
    history = project.meta.get("batching", [])
    history.append({"batches": [b.name for b in batches], "size": size, "shuffle_seed": shuffle_seed})
    project.meta = {**project.meta, "batching": history}
    project.save(update_fields=["meta"])
    return batches


def _set_batch_membership(rows: Iterable[tuple[int, int, int]]) -> None:
    """(batch id, batch position, item id) rows in one executemany: bulk_update's CASE
    expressions took ~8 s for 20,000 items, this takes a fraction of a second."""
    quote = connection.ops.quote_name
    table = quote(Item._meta.db_table)
    batch_column = quote(Item._meta.get_field("batch").column)
    position_column = quote(Item._meta.get_field("batch_position").column)
    sql = f"UPDATE {table} SET {batch_column} = %s, {position_column} = %s WHERE {quote(Item._meta.pk.column)} = %s"
    with connection.cursor() as cursor:
        cursor.executemany(sql, list(rows))


def _next_batch_number(project: Project) -> int:
    taken = set(project.batches.values_list("name", flat=True))
    number = len(taken) + 1
    while f"batch {number:03d}" in taken:
        number += 1
    return number


# --------------------------------------------------------------------------- assignment


@dataclass
class AssignResult:
    created: int = 0
    batches: int = 0
    skipped_full_items: int = 0
    per_annotator: dict[str, int] = field(default_factory=dict)


@transaction.atomic
def batch_assign(
    *,
    project: Project,
    annotators: Sequence,
    overlap: int,
    batches: Sequence[Batch] | None = None,
) -> AssignResult:
    """Give every batched item of the project (or of `batches`) to `overlap` distinct annotators.

    Whole batches go to the least-loaded annotators (load = the project's assignments
    they hold, ties broken by the order given), so starting from nothing the loads
    differ by at most one batch. Items that already have `overlap` assignments are
    skipped, so running it again creates nothing new; nobody gets an item twice.
    Only Assignment rows are created (the editor makes the PostEdit when it first opens).
    """
    if overlap < 1:
        raise ServiceError("overlap: must be at least 1")
    if not annotators:
        raise ServiceError("annotators: name at least one annotator")
    if len({a.pk for a in annotators}) != len(annotators):
        raise ServiceError("annotators: an annotator is listed twice")
    if overlap > len(annotators):
        raise ServiceError(
            f"overlap: each item needs {overlap} distinct annotators but only {len(annotators)} were given"
        )
    project = Project.objects.select_for_update().get(pk=project.pk)
    if batches is None:
        batches = list(project.batches.order_by("id"))
    elif any(batch.project_id != project.pk for batch in batches):
        raise ServiceError("batches: every batch must belong to the project")

    items_by_batch: dict[int, list[int]] = defaultdict(list)
    for item_id, batch_id in (
        Item.objects.filter(batch__in=batches).order_by("batch_position", "id").values_list("id", "batch_id")
    ):
        items_by_batch[batch_id].append(item_id)
    holders: dict[int, set[int]] = defaultdict(set)
    for item_id, user_id in Assignment.objects.filter(item__batch__in=batches).values_list("item_id", "annotator_id"):
        holders[item_id].add(user_id)
    load = {a.pk: 0 for a in annotators}
    for user_id, item_count in _project_loads(project, user_ids=list(load)):
        load[user_id] = item_count
    order = {a.pk: index for index, a in enumerate(annotators)}

    result = AssignResult(per_annotator={a.username: 0 for a in annotators})
    names = {a.pk: a.username for a in annotators}
    new_rows: list[Assignment] = []
    for batch in batches:
        item_ids = items_by_batch.get(batch.pk, [])
        result.skipped_full_items += sum(1 for item_id in item_ids if len(holders[item_id]) >= overlap)
        touched = False
        while True:
            open_items = [item_id for item_id in item_ids if len(holders[item_id]) < overlap]
            if not open_items:
                break
            # Prefer annotators new to the batch, then the least loaded.
            candidates = [user_id for user_id in load if any(user_id not in holders[item_id] for item_id in open_items)]
            if not candidates:  # cannot happen while overlap <= len(annotators); kept as a guard
                raise ServiceError(f"batch {batch.name}: not enough distinct annotators for overlap {overlap}")
            chosen = min(
                candidates,
                key=lambda uid: (any(uid in holders[i] for i in item_ids), load[uid], order[uid]),
            )
            for item_id in open_items:
                if chosen not in holders[item_id]:
                    holders[item_id].add(chosen)
                    new_rows.append(Assignment(item_id=item_id, annotator_id=chosen))
                    load[chosen] += 1
                    result.per_annotator[names[chosen]] += 1
                    result.created += 1
            touched = True
        result.batches += int(touched)
    # ignore_conflicts: a concurrent run cannot make duplicates (unique item+annotator).
    Assignment.objects.bulk_create(new_rows, batch_size=1000, ignore_conflicts=True)
    return result


def _project_loads(project: Project, *, user_ids: list[int]) -> Iterable[tuple[int, int]]:
    return (
        Assignment.objects.filter(item__project=project, annotator_id__in=user_ids)
        .values("annotator_id")
        .annotate(n=Count("id"))
        .values_list("annotator_id", "n")
    )


@dataclass
class WithdrawResult:
    withdrawn: int = 0
    kept_submitted: int = 0
    kept_in_progress: int = 0
    reassigned: int = 0
    skipped_already_assigned: int = 0


def _split_withdrawable(assignments: Iterable[Assignment], *, force: bool) -> tuple[list[Assignment], WithdrawResult]:
    result = WithdrawResult()
    movable: list[Assignment] = []
    for assignment in assignments:
        if assignment.status in (Assignment.SUBMITTED, Assignment.SKIPPED):
            result.kept_submitted += 1
        elif assignment.status == Assignment.IN_PROGRESS and not force:
            result.kept_in_progress += 1
        else:
            movable.append(assignment)
    return movable, result


@transaction.atomic
def assignment_withdraw(*, assignments: Iterable[Assignment] | QuerySet, force: bool = False) -> WithdrawResult:
    """Remove pending assignments. Submitted (and skipped) work is never touched; in-progress
    assignments only with force=True, which discards their draft and event log."""
    rows = _locked(assignments)
    movable, result = _split_withdrawable(rows, force=force)
    Assignment.objects.filter(pk__in=[a.pk for a in movable]).delete()
    result.withdrawn = len(movable)
    return result


@transaction.atomic
def assignment_reassign(
    *, assignments: Iterable[Assignment] | QuerySet, to_annotator, force: bool = False
) -> WithdrawResult:
    """Move pending assignments (in-progress ones only with force) to another annotator.

    An item the new annotator already has is left where it was (counted as skipped), so
    nobody gets an item twice. The moved assignment starts afresh as pending.
    """
    if not is_annotator(to_annotator) or not to_annotator.is_active:
        raise ServiceError(f"to: {to_annotator.username} is not an active annotator")
    rows = _locked(assignments)
    movable, result = _split_withdrawable(rows, force=force)
    already = set(
        Assignment.objects.filter(annotator=to_annotator, item_id__in=[a.item_id for a in movable]).values_list(
            "item_id", flat=True
        )
    )
    moving = [a for a in movable if a.item_id not in already]
    result.skipped_already_assigned = len(movable) - len(moving)
    Assignment.objects.filter(pk__in=[a.pk for a in moving]).delete()
    Assignment.objects.bulk_create([Assignment(item_id=a.item_id, annotator=to_annotator) for a in moving])
    result.reassigned = len(moving)
    return result


def _locked(assignments: Iterable[Assignment] | QuerySet) -> list[Assignment]:
    ids = [a.pk for a in assignments] if not isinstance(assignments, QuerySet) else assignments.values("pk")
    return list(Assignment.objects.select_for_update().filter(pk__in=ids).order_by("pk"))


# --------------------------------------------------------------------------- progress


@dataclass
class ProgressRow:
    label: str
    key: int | None = None
    submitted: int = 0
    in_progress: int = 0
    pending: int = 0
    skipped: int = 0
    median_active_ms: float | None = None
    last_activity: datetime | None = None
    active_values: list[int] = field(default_factory=list, repr=False)

    @property
    def total(self) -> int:
        return self.submitted + self.in_progress + self.pending + self.skipped

    @property
    def percent_done(self) -> int:
        return round(100 * (self.submitted + self.skipped) / self.total) if self.total else 0


@dataclass
class ProjectProgress:
    project: Project
    by_annotator: list[ProgressRow]
    by_batch: list[ProgressRow]
    total: ProgressRow
    items: int
    unbatched_items: int
    unassigned_items: int


_STATUS_FIELD = {
    Assignment.SUBMITTED: "submitted",
    Assignment.IN_PROGRESS: "in_progress",
    Assignment.PENDING: "pending",
    Assignment.SKIPPED: "skipped",
}


def project_progress(*, project: Project) -> ProjectProgress:
    """Submitted / in progress / pending per annotator and per batch, the median active
    time of submitted items, and the last activity (latest start, save or submit)."""
    rows = Assignment.objects.filter(item__project=project).values_list(
        "annotator_id",
        "annotator__username",
        "item__batch_id",
        "status",
        "post_edit__active_ms",
        "started",
        "finished",
        "post_edit__updated",
    )
    by_annotator: dict[int, ProgressRow] = {}
    by_batch: dict[int | None, ProgressRow] = {}
    total = ProgressRow(label="all")
    batch_names = dict(project.batches.values_list("id", "name"))
    for user_id, username, batch_id, status, active_ms, started, finished, updated in rows.iterator(chunk_size=2000):
        targets = (
            by_annotator.setdefault(user_id, ProgressRow(label=username, key=user_id)),
            by_batch.setdefault(batch_id, ProgressRow(label=batch_names.get(batch_id, "(no batch)"), key=batch_id)),
            total,
        )
        moments = [moment for moment in (started, finished, updated) if moment is not None]
        latest = max(moments) if moments else None
        for row in targets:
            setattr(row, _STATUS_FIELD[status], getattr(row, _STATUS_FIELD[status]) + 1)
            if latest is not None and (row.last_activity is None or latest > row.last_activity):
                row.last_activity = latest
            if status == Assignment.SUBMITTED and active_ms is not None:
                row.active_values.append(active_ms)
    for row in (*by_annotator.values(), *by_batch.values(), total):
        row.median_active_ms = statistics.median(row.active_values) if row.active_values else None
    items = project.items.count()
    return ProjectProgress(
        project=project,
        by_annotator=sorted(by_annotator.values(), key=lambda r: r.label),
        by_batch=sorted(by_batch.values(), key=lambda r: (r.key is None, r.label)),
        total=total,
        items=items,
        unbatched_items=project.items.unbatched().count(),
        unassigned_items=project.items.filter(assignments__isnull=True).count(),
    )


# --------------------------------------------------------------------------- items (API bulk create)


@dataclass
class ItemsCreated:
    created: int
    skipped: int
    items: list[Item]


@transaction.atomic
def item_create_bulk(*, project: Project, items: Sequence[dict[str, Any]]) -> ItemsCreated:
    """Add items to a project through the importers' one writer (same checks, positions,
    instruction draw and re-import policy: an identical item already there is skipped,
    the same external_id with other text is refused). Nothing is stored on error."""
    # Imported here so a problem in the importers cannot break the other admin services.
    from annotations.importers.base import ImportDataError, ItemRow, Origin, Plan
    from annotations.importers.store import ImportReport, plan_store

    rows = [ItemRow(origin=Origin(file="items", line=number), **item) for number, item in enumerate(items, start=1)]
    report = ImportReport(project=project.name, fmt="api", files=["items"])
    project = Project.objects.select_for_update().get(pk=project.pk)
    try:
        plan_store(project=project, plan=Plan(fmt="api", items=rows), report=report)
    except ImportDataError as exc:
        index = "" if exc.line is None else f"[{exc.line - 1}]"
        field_name = f".{exc.field}" if exc.field else ""
        raise ServiceError(f"items{index}{field_name}: {exc.message}") from None
    stored = project.items.filter(external_id__in=[row.external_id for row in rows]).order_by("position", "id")
    return ItemsCreated(created=report.items_created, skipped=report.items_skipped, items=list(stored))
