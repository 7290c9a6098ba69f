"""Reads that several views share (HackSoft's selectors): projects a user sees, batches with their
annotators, progress per project and per annotator's batch. Writes live in annotations/services/."""

import statistics
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Q, QuerySet

from annotations.design import Condition, DesignError, parse_conditions
from annotations.models import Assignment, Batch, Item, Participant, PostEdit, Project
from annotations.roles import ANNOTATOR, can_read_all

User = get_user_model()


# --------------------------------------------------------------------------- projects and people


def visible_projects(*, user) -> QuerySet:
    """All projects for admins and researchers; for an annotator, the projects they have work in.
    Each carries item_count and batch_count."""
    projects = Project.objects.annotate(
        item_count=Count("items", distinct=True), batch_count=Count("batches", distinct=True)
    )
    if can_read_all(user):
        return projects
    ids = Assignment.objects.filter(annotator=user).values("item__project_id")
    return projects.filter(pk__in=ids)


def annotator_queryset() -> QuerySet:
    """Active annotator accounts, by username: whom work can be given to."""
    return User.objects.filter(groups__name=ANNOTATOR, is_active=True).order_by("username")


# --------------------------------------------------------------------------- documents


@dataclass(frozen=True)
class Document:
    """A document of a project: its id and its segments' item ids in document order. An item
    without a document is a document of its own (key "item:<external id>")."""

    key: str
    item_ids: tuple[int, ...]


def group_documents(items: QuerySet) -> list[Document]:
    """`items` grouped into documents, in import order of each document's first segment."""
    rows = items.order_by("position", "id").values_list(
        "id", "external_id", "document", "document_position", "position"
    )
    segments: dict[str, list[tuple[int, int, int]]] = {}
    for item_id, external_id, document, document_position, position in rows:
        key = document or f"item:{external_id}"
        order = document_position if document_position is not None else position
        segments.setdefault(key, []).append((order, position, item_id))
    return [Document(key, tuple(item_id for *_, item_id in sorted(parts))) for key, parts in segments.items()]


def project_documents(*, project: Project, practice: bool = False) -> list[Document]:
    """The project's documents (or its practice items, each its own document when it has none)."""
    return group_documents(project.items.filter(practice=practice))


@dataclass(frozen=True)
class ContextSegment:
    external_id: str
    document_position: int | None
    source: str
    text: str  # the annotator's own submitted version, else the text they would start from
    state: str  # "done" (submitted by this annotator), "current", or "todo"


def declared_by_name(project: Project) -> dict[str, Condition]:
    """The project's declared conditions by name; none when the stored list does not parse."""
    try:
        return {c.name: c for c in project.declared_conditions()}
    except DesignError:
        return {}


def start_shown(*, assignment: Assignment, conditions: dict[str, Condition] | None = None) -> str:
    """The text the assignment's annotator starts from (or started from, once the editor fixed it):
    what their condition shows and nothing it hides (Item.blind_start)."""
    # A missing reverse one-to-one raises RelatedObjectDoesNotExist, an AttributeError.
    post_edit = getattr(assignment, "post_edit", None)
    if post_edit is not None:
        return post_edit.start_text
    if conditions is None:
        conditions = declared_by_name(assignment.item.project)
    return assignment.item.blind_start(assignment.condition, conditions.get(assignment.condition))[0]


def document_context(*, assignment: Assignment) -> list[ContextSegment]:
    """The segments around the assignment's item in its document, read-only, as the project's
    context setting asks (none, a window of N before and after, or the whole document).

    Blind by construction: a segment the annotator holds under the current assignment's condition
    shows their own text (submitted, or the start fixed when they opened it) or what that condition
    will show; one they do not hold shows what the current condition shows of it (Item.blind_start:
    nothing an empty editor hides, no other system's output, never the model output under a
    condition); one they hold under another condition shows its source only. No one else's text is
    read."""
    item = assignment.item
    project = item.project
    if project.context == Project.CONTEXT_NONE or not item.document:
        return []
    siblings = list(
        project.items.filter(document=item.document)
        .order_by("document_position", "position", "id")
        .only("id", "external_id", "document_position", "source", "model_output", "outputs", "project_id")
    )
    index = next(k for k, sibling in enumerate(siblings) if sibling.pk == item.pk)
    if project.context == Project.CONTEXT_WINDOW:
        window = project.context_window
        siblings = siblings[max(0, index - window) : index + window + 1]
    own = {
        a.item_id: a
        for a in Assignment.objects.filter(annotator_id=assignment.annotator_id, item__in=siblings).select_related(
            "post_edit"
        )
    }
    conditions = declared_by_name(project)
    name = assignment.condition
    current = conditions.get(name)
    segments = []
    for sibling in siblings:
        mine = own.get(sibling.pk)
        post_edit = getattr(mine, "post_edit", None) if mine is not None else None
        done = mine is not None and mine.status == Assignment.SUBMITTED and post_edit is not None
        state = "done" if done else "todo"
        if sibling.pk == item.pk:
            state, text = "current", ""
        elif mine is not None and mine.condition != name:
            text = ""  # held under another condition: what either condition hides stays hidden
        elif done and post_edit is not None:
            text = post_edit.text
        elif post_edit is not None:
            # The start fixed under this very condition when it was opened (null: the model output).
            text = sibling.model_output if post_edit.start_override is None else post_edit.start_override
        else:
            text = sibling.blind_start(name, current)[0]
        segments.append(ContextSegment(sibling.external_id, sibling.document_position, sibling.source, text, state))
    return segments


# --------------------------------------------------------------------------- conditions


@dataclass
class ConditionUsage:
    """What already carries a condition's name in a project."""

    assignments: int = 0  # live and imported
    imported: int = 0
    post_edits: int = 0  # started (live: opened at least once) or imported
    live_post_edits: int = 0
    in_design: bool = False  # counterbalanced by the project's Latin-square design

    @property
    def holds_name(self) -> bool:
        return bool(self.assignments or self.in_design)

    def describe(self) -> str:
        parts = []
        if self.assignments:
            imported = f", {self.imported} of them imported" if self.imported else ""
            parts.append(f"{self.assignments} assignment(s){imported}")
        if self.in_design:
            parts.append("the project's Latin-square design (crowd participants join it)")
        return " and ".join(parts) or "nothing"


def designed_conditions(*, project: Project) -> list[str]:
    """The conditions the project's current Latin-square design counterbalances (none for a simple design)."""
    if project.design != Project.DESIGN_LATIN_SQUARE:
        return []
    designs = project.meta.get("designs") if isinstance(project.meta, dict) else None
    latin = [d for d in designs or [] if isinstance(d, dict) and d.get("design") == Project.DESIGN_LATIN_SQUARE]
    if not latin:
        return []
    return [name for name in latin[-1].get("conditions") or [] if isinstance(name, str)]


def condition_usage(*, project: Project) -> dict[str, ConditionUsage]:
    """Per condition name: the assignments and post-edits that carry it, and whether the design does."""
    rows = (
        Assignment.objects.filter(item__project=project)
        .exclude(condition="")
        .values("condition")
        .annotate(
            n=Count("id"),
            imported=Count("id", filter=Q(post_edit__origin=PostEdit.IMPORTED)),
            post_edits=Count("post_edit"),
            live=Count("post_edit", filter=Q(post_edit__origin=PostEdit.LIVE)),
        )
        .order_by("condition")
    )
    usage = {
        row["condition"]: ConditionUsage(
            assignments=row["n"], imported=row["imported"], post_edits=row["post_edits"], live_post_edits=row["live"]
        )
        for row in rows
    }
    for name in designed_conditions(project=project):
        usage.setdefault(name, ConditionUsage()).in_design = True
    return usage


def _json_key_counts(*, project: Project, column: str) -> dict[str, int]:
    """How many of the project's non-practice items carry each key of a JSON object column
    (outputs, highlights), counted by the database: a project's outputs are its largest texts."""
    if column not in ("outputs", "highlights"):
        raise ValueError(column)
    table = Item._meta.db_table
    if connection.vendor == "postgresql":
        sql = (
            f"SELECT k, COUNT(*) FROM {table} i CROSS JOIN LATERAL jsonb_object_keys("
            f"CASE WHEN jsonb_typeof(i.{column}) = 'object' THEN i.{column} ELSE '{{}}'::jsonb END) AS k "
            "WHERE i.project_id = %s AND NOT i.practice GROUP BY k"
        )
    elif connection.vendor == "sqlite":
        sql = (
            f"SELECT j.key, COUNT(*) FROM {table} i, json_each("
            f"CASE WHEN json_type(i.{column}) = 'object' THEN i.{column} ELSE '{{}}' END) AS j "
            "WHERE i.project_id = %s AND NOT i.practice GROUP BY j.key"
        )
    else:  # another database: read the objects (slower, same answer)
        counts: dict[str, int] = {}
        for value in project.items.filter(practice=False).values_list(column, flat=True).iterator(chunk_size=500):
            for key in value if isinstance(value, dict) else ():
                counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items()))
    with connection.cursor() as cursor:
        cursor.execute(sql, [project.pk])
        return dict(sorted((str(key), count) for key, count in cursor.fetchall()))


@dataclass
class ConditionCoverage:
    condition: Condition
    usage: ConditionUsage
    items_lacking: int = 0  # non-practice items without the condition's output
    items_with_spans: int = 0  # non-practice items with highlight spans over its output


@dataclass
class StudySettings:
    """What a project's conditions need and what its items carry (the settings page's summary)."""

    items: int  # not counting practice items (those are shown with no condition)
    practice_items: int
    documents: int
    outputs: dict[str, int]  # output name -> items carrying it
    highlights: dict[str, int]  # output name -> items with spans over it
    conditions: list[ConditionCoverage]
    undeclared: dict[str, ConditionUsage]  # names work carries that the project does not declare
    conditions_error: str = ""  # the stored list does not parse
    warnings: list[str] = field(default_factory=list)

    @property
    def output_rows(self) -> list[tuple[str, int, int]]:
        """(output, items carrying it, items with highlight spans over it), by name."""
        return [(name, count, self.highlights.get(name, 0)) for name, count in self.outputs.items()]


def study_settings(*, project: Project) -> StudySettings:
    items = project.items.filter(practice=False)
    item_count = items.count()
    documents = items.exclude(document="").values("document").distinct().count() + items.filter(document="").count()
    outputs = _json_key_counts(project=project, column="outputs")
    highlights = _json_key_counts(project=project, column="highlights")
    usage = condition_usage(project=project)
    error = ""
    try:
        declared = parse_conditions(project.conditions)
    except DesignError as exc:
        declared, error = [], str(exc)
    coverage = [
        ConditionCoverage(
            condition=condition,
            usage=usage.get(condition.name, ConditionUsage()),
            items_lacking=0 if condition.output is None else item_count - outputs.get(condition.output, 0),
            items_with_spans=0 if condition.output is None else highlights.get(condition.output, 0),
        )
        for condition in declared
    ]
    names = {condition.name for condition in declared}
    summary = StudySettings(
        items=item_count,
        practice_items=project.items.filter(practice=True).count(),
        documents=documents,
        outputs=outputs,
        highlights=highlights,
        conditions=coverage,
        undeclared={name: used for name, used in usage.items() if name not in names},
        conditions_error=error,
    )
    summary.warnings = _condition_warnings(summary)
    return summary


def _condition_warnings(summary: StudySettings) -> list[str]:
    warnings = []
    if summary.conditions_error:
        warnings.append(f"The stored conditions cannot be read: {summary.conditions_error}.")
    for entry in summary.conditions:
        condition = entry.condition
        if condition.output is not None and entry.items_lacking:
            have = ", ".join(summary.outputs) or "none"
            warnings.append(
                f"Condition {condition.name!r} shows output {condition.output!r}, which {entry.items_lacking} of "
                f"{summary.items} item(s) lack (the items carry: {have}): under it they would start from an "
                "empty editor instead, flagged condition_output_missing."
            )
        if condition.highlights and condition.output is None:
            warnings.append(
                f"Condition {condition.name!r} turns highlights on over an empty editor: there is nothing to highlight."
            )
        elif condition.highlights and summary.items and not entry.items_with_spans:
            warnings.append(
                f"Condition {condition.name!r} turns highlights on, but no item has spans over {condition.output!r}."
            )
    for name, used in summary.undeclared.items():
        warnings.append(
            f"{used.describe()} carry the condition {name!r}, which the project does not declare; declare it "
            "again (until then an item opened under it starts from an empty editor, flagged condition_unknown)."
        )
    return warnings


# --------------------------------------------------------------------------- batches


@dataclass(frozen=True)
class BatchRow:
    """A batch as the batch tables and the API show it."""

    id: int
    name: str
    created: datetime
    item_count: int
    annotators: list[str]  # the usernames holding assignments in it, sorted


def batch_rows(*, project: Project, batches: list[Batch] | None = None) -> list[BatchRow]:
    """The project's batches (or only `batches`) in creation order."""
    queryset = project.batches.annotate(item_count=Count("items", distinct=True)).order_by("id")
    if batches is not None:
        queryset = queryset.filter(pk__in=[b.pk for b in batches])
    rows = list(queryset)
    holders: dict[int, list[str]] = {}
    for batch_id, username in (
        Assignment.objects.filter(item__batch__in=rows)
        .values_list("item__batch_id", "annotator__username")
        .distinct()
        .order_by("annotator__username")
    ):
        holders.setdefault(batch_id, []).append(username)
    return [
        BatchRow(
            id=batch.pk,
            name=batch.name,
            created=batch.created,
            item_count=batch.item_count,
            annotators=holders.get(batch.pk, []),
        )
        for batch in rows
    ]


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
        return self.submitted + self.skipped

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 0


def batch_progress(*, user) -> list[BatchProgress]:
    """One annotator's batches with their counts by status and the first open assignment of each."""
    rows = (
        Assignment.objects.filter(annotator=user)
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
    active_values: list[int] = field(default_factory=list, repr=False)
    flagged: int = 0  # submitted post-edits with any flag (README: "Replay and flags")
    flag_counts: dict[str, int] = field(default_factory=dict)
    uncorroborated_keys: int = 0

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
    # Per condition when the project declares conditions or its work carries some (else empty):
    # the declared ones in their order, then other names, then work under no condition (practice).
    by_condition: list[ProgressRow] = field(default_factory=list)


NO_CONDITION = "(no condition)"

_STATUS_FIELD = {
    Assignment.SUBMITTED: "submitted",
    Assignment.IN_PROGRESS: "in_progress",
    Assignment.PENDING: "pending",
    Assignment.SKIPPED: "skipped",
}


def project_progress(*, project: Project) -> ProjectProgress:
    """Submitted / in progress / pending per annotator, per batch and (when the project declares
    conditions or its assignments carry some) per condition, the median active time of submitted
    items, the last activity (latest start, save or submit), and how many submitted post-edits
    carry flags (per flag) and keys no text change corroborates."""
    rows = Assignment.objects.filter(item__project=project).values_list(
        "annotator_id",
        "annotator__username",
        "item__batch_id",
        "condition",
        "status",
        "post_edit__active_ms",
        "started",
        "finished",
        "post_edit__updated",
        "post_edit__flags",
        "post_edit__uncorroborated_keys",
    )
    by_annotator: dict[int, ProgressRow] = {}
    by_batch: dict[int | None, ProgressRow] = {}
    declared = _declared_condition_names(project)
    by_condition: dict[str, ProgressRow] = {name: ProgressRow(label=name, key=name) for name in declared}
    total = ProgressRow(label="all")
    batch_names = dict(project.batches.values_list("id", "name"))
    for (
        user_id,
        username,
        batch_id,
        condition,
        status,
        active_ms,
        started,
        finished,
        updated,
        flags,
        uncorroborated,
    ) in rows.iterator(chunk_size=2000):
        targets = (
            by_annotator.setdefault(user_id, ProgressRow(label=username, key=user_id)),
            by_batch.setdefault(batch_id, ProgressRow(label=batch_names.get(batch_id, "(no batch)"), key=batch_id)),
            by_condition.setdefault(condition, ProgressRow(label=condition or NO_CONDITION, key=condition)),
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
            if status == Assignment.SUBMITTED and flags:
                row.flagged += 1
                for flag in flags:
                    row.flag_counts[flag] = row.flag_counts.get(flag, 0) + 1
            row.uncorroborated_keys += uncorroborated or 0
    for row in (*by_annotator.values(), *by_batch.values(), *by_condition.values(), total):
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
        by_condition=_condition_rows(by_condition, declared),
    )


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


# --------------------------------------------------------------------------- crowd participants


def participant_of(*, user) -> Participant | None:
    """The user's Participant record (a crowd participant's account), or None."""
    if not user.is_authenticated:
        return None
    return Participant.objects.select_related("join_link", "project").filter(user=user).first()


def project_participants(*, project: Project) -> QuerySet:
    """The project's participants by slot, each with its username and counts of its work
    (`assigned`, `submitted`, `skipped`)."""
    work = "user__assignments"
    return (
        project.participants.select_related("user", "join_link")
        .annotate(
            assigned=Count(work, distinct=True),
            submitted=Count(work, filter=Q(**{f"{work}__status": Assignment.SUBMITTED}), distinct=True),
            skipped=Count(work, filter=Q(**{f"{work}__status": Assignment.SKIPPED}), distinct=True),
        )
        .order_by("slot")
    )


def project_join_links(*, project: Project) -> QuerySet:
    """The project's participation links, newest first, each with `participant_count`."""
    return project.join_links.annotate(participant_count=Count("participants")).order_by("-created", "-id")
