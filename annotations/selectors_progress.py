"""Reads about progress: an annotator's batches (their home page) and a project's progress page (per
annotator, per batch, per condition)."""

import statistics
from array import array
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db.models import Count, Max, Q, QuerySet, Sum

from annotations.design import DesignError, parse_conditions
from annotations.models import Assignment, Project

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
_MEDIAN_CHUNK = 20_000


def project_progress(*, project: Project) -> ProjectProgress:
    """Submitted / in progress / pending per annotator, per batch and (when the project declares
    conditions or its assignments carry some) per condition, the median active time of submitted
    items, the last activity (latest start, save or submit), and how many submitted post-edits
    carry flags (per flag, the most frequent first) and keys no text change corroborates.

    Aggregated by the database, in the same few queries whatever the number of assignments: one
    grouped scan of the assignments (counts, latest moments, flags, keys), one reading the submitted
    post-edits' active times for the medians (when any has one) and two counts of items."""
    # Post-editing work only: reviews are counted on the project's review summary.
    assignments = Assignment.objects.first_pass().filter(item__project=project).order_by()
    groups = assignments.values("annotator_id", "item__batch_id", "condition", "status", "post_edit__flags").annotate(
        n=Count("id"),
        started_max=Max("started"),
        finished_max=Max("finished"),
        updated_max=Max("post_edit__updated"),
        uncorroborated=Sum("post_edit__uncorroborated_keys"),
        timed=Count("post_edit__active_ms", filter=Q(status=Assignment.SUBMITTED)),
    )
    by_annotator: dict[int, ProgressRow] = {}
    by_batch: dict[int | None, ProgressRow] = {}
    declared = _declared_condition_names(project)
    by_condition: dict[str, ProgressRow] = {name: ProgressRow(label=name, key=name) for name in declared}
    total = ProgressRow(label="all")
    batch_names = dict(project.batches.values_list("id", "name"))
    timed = 0  # submitted post-edits with an active time
    for group in groups:
        timed += group["timed"]
        user_id, batch_id, condition, status = (
            group["annotator_id"],
            group["item__batch_id"],
            group["condition"],
            group["status"],
        )
        targets = (
            by_annotator.setdefault(user_id, ProgressRow(label="", key=user_id)),
            by_batch.setdefault(batch_id, ProgressRow(label=batch_names.get(batch_id, "(no batch)"), key=batch_id)),
            by_condition.setdefault(condition, ProgressRow(label=condition or NO_CONDITION, key=condition)),
            total,
        )
        moments = [group[name] for name in ("started_max", "finished_max", "updated_max") if group[name] is not None]
        latest = max(moments) if moments else None
        flags = group["post_edit__flags"] if status == Assignment.SUBMITTED else None
        for row in targets:
            setattr(row, _STATUS_FIELD[status], getattr(row, _STATUS_FIELD[status]) + group["n"])
            if latest is not None and (row.last_activity is None or latest > row.last_activity):
                row.last_activity = latest
            if flags:
                row.flagged += group["n"]
                for flag in flags:
                    row.flag_counts[flag] = row.flag_counts.get(flag, 0) + group["n"]
            row.uncorroborated_keys += group["uncorroborated"] or 0
    names = dict(get_user_model().objects.filter(pk__in=list(by_annotator)).values_list("id", "username"))
    for user_id, row in by_annotator.items():
        row.label = names[user_id]
    if timed:
        medians = _medians(assignments.filter(status=Assignment.SUBMITTED, post_edit__active_ms__isnull=False))
        for rows, key in ((by_annotator, "annotator_id"), (by_batch, "item__batch_id"), (by_condition, "condition")):
            for value, median in medians[key].items():
                rows[value].median_active_ms = median
        total.median_active_ms = medians[None].get(None)
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
        unassigned_items=project.items.filter(assignments__isnull=True).count(),
        by_condition=_condition_rows(by_condition, declared),
    )


def _medians(submitted: QuerySet[Assignment]) -> dict[str | None, dict]:
    """The median active time of the submitted post-edits per annotator ("annotator_id"), batch
    ("item__batch_id") and condition ("condition") and of them all (None: {None: median}), as
    statistics.median gives it. One query reads the active times with their three keys (SQL has no
    portable median: window functions cost SQLite a sort per kind of row, several times this scan);
    the times are kept as compact arrays, one per (annotator, batch, condition), merged per kind of row."""
    cells: dict[tuple, array] = {}  # (annotator, batch, condition) -> active times
    rows = submitted.values_list("annotator_id", "item__batch_id", "condition", "post_edit__active_ms")
    for annotator_id, batch_id, condition, active_ms in rows.iterator(chunk_size=_MEDIAN_CHUNK):
        cell = cells.get((annotator_id, batch_id, condition))
        if cell is None:
            cell = cells[(annotator_id, batch_id, condition)] = array("q")
        cell.append(active_ms)  # type: ignore[arg-type]  # the query leaves out null times
    medians: dict[str | None, dict] = {}
    for index, name in enumerate(("annotator_id", "item__batch_id", "condition", None)):
        merged: dict = {}
        for key, cell in cells.items():
            merged.setdefault(key[index] if name else None, array("q")).extend(cell)
        medians[name] = {key: statistics.median(times) for key, times in merged.items()}
    return medians


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
