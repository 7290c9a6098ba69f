"""Reads about progress: an annotator's batches (their home page) and a project's progress page (per
annotator, per batch, per condition)."""

import json
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q

from annotations.design import DesignError, parse_conditions
from annotations.models import Assignment, ProgressCell, ProgressEntry, Project
from annotations.models.progress import NO_BATCH

# The count each status is added to, on a BatchProgress and a ProgressRow.
_STATUS_FIELD = {
    Assignment.SUBMITTED: "submitted",
    Assignment.IN_PROGRESS: "in_progress",
    Assignment.PENDING: "pending",
    Assignment.SKIPPED: "skipped",
}


def _closed(counts: "BatchProgress | ProgressRow") -> int:
    """How many of the counted assignments are closed (Assignment.CLOSED)."""
    return sum(getattr(counts, _STATUS_FIELD[status]) for status in Assignment.CLOSED)


@dataclass
class BatchProgress:
    batch_id: int | None
    name: str
    project: str
    total: int = 0
    submitted: int = 0
    skipped: int = 0
    in_progress: int = 0
    pending: int = 0
    next_assignment_id: int | None = None
    assignments: list[Assignment] = field(default_factory=list)

    @property
    def done(self) -> int:
        return _closed(self)

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 0


def batch_progress(*, user) -> list[BatchProgress]:
    """One annotator's batches with their counts by status and the first open assignment of each."""
    rows = (
        Assignment.objects.first_pass()
        .filter(annotator=user)
        .values("item__batch_id", "item__batch__name", "item__project__name")
        .annotate(
            total=Count("id"),
            submitted=Count("id", filter=Q(status=Assignment.SUBMITTED)),
            skipped=Count("id", filter=Q(status=Assignment.SKIPPED)),
            in_progress=Count("id", filter=Q(status=Assignment.IN_PROGRESS)),
            pending=Count("id", filter=Q(status=Assignment.PENDING)),
        )
        .order_by("item__project__name", "item__batch_id")
    )
    batches = {
        row["item__batch_id"]: BatchProgress(
            batch_id=row["item__batch_id"],
            name=row["item__batch__name"] or "(not in a batch)",
            project=row["item__project__name"],
            total=row["total"],
            submitted=row["submitted"],
            skipped=row["skipped"],
            in_progress=row["in_progress"],
            pending=row["pending"],
        )
        for row in rows
    }
    # The first open assignment of each batch, in batch order (one ordered scan of ids).
    for assignment_id, batch_id in Assignment.objects.open_for(user).values_list("id", "item__batch_id"):
        progress = batches.get(batch_id)
        if progress is not None and progress.next_assignment_id is None:
            progress.next_assignment_id = assignment_id
    return list(batches.values())


# --------------------------------------------------------------------------- project progress


@dataclass
class ProgressRow:
    label: str
    key: int | str | None = None  # the annotator's or batch's id; a condition's name ("" for none)
    submitted: int = 0
    in_progress: int = 0
    pending: int = 0
    skipped: int = 0
    median_active_ms: float | None = None
    last_activity: datetime | None = None
    flagged: int = 0  # submitted post-edits with any flag (README: "Replay and flags")
    flag_counts: dict[str, int] = field(default_factory=dict)
    uncorroborated_keys: int = 0

    @property
    def total(self) -> int:
        return self.submitted + self.in_progress + self.pending + self.skipped

    @property
    def percent_done(self) -> int:
        return round(100 * _closed(self) / self.total) if self.total else 0


@dataclass
class ProjectProgress:
    project: Project
    by_annotator: list[ProgressRow]
    by_batch: list[ProgressRow]
    total: ProgressRow
    items: int
    unbatched_items: int
    unassigned_items: int
    # Per condition when the project declares conditions or its work carries some (else empty):
    # the declared ones in their order, then other names, then work under no condition (practice).
    by_condition: list[ProgressRow] = field(default_factory=list)

    @property
    def by_design(self) -> bool:
        """Whether the study's design assigns its documents (a Latin square): its work is in no batch by design."""
        return self.project.design == Project.DESIGN_LATIN_SQUARE


NO_CONDITION = "(no condition)"
GroupKey = int | str | None  # an annotator's id, a batch key, a condition's name; None for all


def project_progress(*, project: Project) -> ProjectProgress:
    """Submitted / in progress / pending per annotator, per batch and (when the project declares
    conditions or its assignments carry some) per condition, the median active time of submitted
    items, the last activity (latest start, save or submit), and how many submitted post-edits
    carry flags (per flag, the most frequent first) and keys no text change corroborates.

    Read from the figures the database keeps as the work changes (annotations/models/progress.py), in
    the same few queries whatever the number of assignments: the project's cells (one per annotator,
    batch, condition, status and flags), the medians' middle active times read in index order (when
    any submitted post-edit has one), the annotators' and batches' names and two counts of items.
    Post-editing work only: reviews are counted on the project's review summary."""
    cells = ProgressCell.objects.filter(project_id=project.pk, n__gt=0).values_list(
        "annotator_id", "batch_key", "condition", "status", "flags", "n", "uncorroborated", "timed", "latest"
    )
    by_annotator: dict[int, ProgressRow] = {}
    by_batch: dict[int | None, ProgressRow] = {}
    declared = _declared_condition_names(project)
    by_condition: dict[str, ProgressRow] = {name: ProgressRow(label=name, key=name) for name in declared}
    total = ProgressRow(label="all")
    batch_names: dict[int | None, str] = dict(project.batches.values_list("id", "name"))
    timed: dict[tuple[str, GroupKey], int] = {}  # (kind of row, key) -> submitted post-edits with an active time
    for user_id, batch_key, condition, status, flag_text, n, uncorroborated, timed_n, latest in cells:
        batch_id = None if batch_key == NO_BATCH else batch_key
        targets = (
            by_annotator.setdefault(user_id, ProgressRow(label="", key=user_id)),
            by_batch.setdefault(batch_id, ProgressRow(label=batch_names.get(batch_id, "(no batch)"), key=batch_id)),
            by_condition.setdefault(condition, ProgressRow(label=condition or NO_CONDITION, key=condition)),
            total,
        )
        if timed_n:
            for kind, key in (("annotator", user_id), ("batch", batch_key), ("condition", condition), ("all", None)):
                timed[(kind, key)] = timed.get((kind, key), 0) + timed_n
        flags = json.loads(flag_text) if flag_text and status == Assignment.SUBMITTED else None
        for row in targets:
            setattr(row, _STATUS_FIELD[status], getattr(row, _STATUS_FIELD[status]) + n)
            if latest is not None and (row.last_activity is None or latest > row.last_activity):
                row.last_activity = latest
            if flags:
                row.flagged += n
                for flag in flags:
                    row.flag_counts[flag] = row.flag_counts.get(flag, 0) + n
            row.uncorroborated_keys += uncorroborated
    names = dict(get_user_model().objects.filter(pk__in=list(by_annotator)).values_list("id", "username"))
    for user_id, row in by_annotator.items():
        row.label = names[user_id]
    rows_of: dict[str, dict[Any, ProgressRow]] = {
        "annotator": by_annotator,
        "batch": {NO_BATCH if key is None else key: row for key, row in by_batch.items()},
        "condition": by_condition,
    }
    for (kind, key), median in _medians(project, timed).items():
        (rows_of[kind][key] if kind in rows_of else total).median_active_ms = median
    for row in (*by_annotator.values(), *by_batch.values(), *by_condition.values(), total):
        row.flag_counts = dict(sorted(row.flag_counts.items(), key=lambda pair: (-pair[1], pair[0])))
    items = project.items.aggregate(n=Count("id"), unbatched=Count("id", filter=Q(batch__isnull=True)))
    return ProjectProgress(
        project=project,
        by_annotator=sorted(by_annotator.values(), key=lambda r: r.label),
        by_batch=sorted(by_batch.values(), key=lambda r: (r.key is None, r.label)),
        total=total,
        items=items["n"],
        unbatched_items=items["unbatched"],
        # NOT EXISTS: an anti-join probing the assignments' item index, where the LEFT JOIN joined them all.
        unassigned_items=project.items.filter(~Exists(Assignment.objects.filter(item=OuterRef("pk")))).count(),
        by_condition=_condition_rows(by_condition, declared),
    )


# Groups whose middle active times one query reads (SQLite allows 500 terms in a compound SELECT).
_MEDIANS_PER_QUERY = 400
_MEDIAN_COLUMN = {"annotator": "annotator_id", "batch": "batch_key", "condition": '"condition"'}


def _medians(project: Project, timed: dict[tuple[str, GroupKey], int]) -> dict[tuple[str, GroupKey], float]:
    """The median active time of each group's submitted post-edits, as statistics.median gives it, for
    each (kind of row, key) in `timed` with its number of timed post-edits: its one or two middle times
    read from the progress entries' index of (project, group, active time) past the first (n - 1) // 2,
    every group's in one query (a compound SELECT, at most _MEDIANS_PER_QUERY groups each)."""
    if not timed:
        return {}
    table = connection.ops.quote_name(ProgressEntry._meta.db_table)
    groups = list(timed.items())
    middle: dict[int, list[int]] = {}
    for first in range(0, len(groups), _MEDIANS_PER_QUERY):
        parts: list[str] = []
        parameters: list[GroupKey] = []
        for index, ((kind, key), count) in enumerate(groups[first : first + _MEDIANS_PER_QUERY], start=first):
            where = "" if kind == "all" else f" AND {_MEDIAN_COLUMN[kind]} = %s"
            # The literals match the partial indexes' condition (a parameter would not prove it).
            parts.append(
                f"SELECT {index} AS g, active_ms FROM (SELECT active_ms FROM {table} WHERE project_id = %s{where}"
                " AND status = 'submitted' AND active_ms IS NOT NULL ORDER BY active_ms LIMIT %s OFFSET %s) AS m"
            )
            parameters += [project.pk, *([] if kind == "all" else [key]), 2 - count % 2, (count - 1) // 2]
        with connection.cursor() as cursor:
            cursor.execute(" UNION ALL ".join(parts), parameters)
            for index, active_ms in cursor.fetchall():
                middle.setdefault(index, []).append(active_ms)
    return {group: statistics.median(middle[index]) for index, (group, _count) in enumerate(groups)}


def _condition_rows(rows: dict[str, ProgressRow], declared: list[str]) -> list[ProgressRow]:
    """The declared conditions in their order, then other names assignments carry (an imported
    study's, a condition since renamed) by name, then no condition; none at all for a project
    that neither declares nor carries any."""
    if not declared and set(rows) <= {""}:
        return []
    place = {name: index for index, name in enumerate(declared)}
    return sorted(rows.values(), key=lambda r: (r.key == "", place.get(str(r.key), len(place)), str(r.key)))


def _declared_condition_names(project: Project) -> list[str]:
    """The project's declared conditions; none when they cannot be read (the settings page says why)."""
    try:
        return [condition.name for condition in parse_conditions(project.conditions)]
    except DesignError:
        return []
