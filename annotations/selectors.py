"""Reads that several views share (HackSoft's selectors): projects a user sees, the annotators work can
go to, a project's documents and what the editor shows around an item, batches with their annotators.
The other reads, by what they serve: selectors_conditions.py (a project's conditions and what its items
carry), selectors_progress.py (progress per project and per annotator's batch), selectors_participants.py
(crowd participants). Writes live in annotations/services/."""

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db.models import Count, QuerySet

from annotations.design import Condition, DesignError
from annotations.models import Assignment, Batch, Project
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
        for a in Assignment.objects.first_pass()
        .filter(annotator_id=assignment.annotator_id, item__in=siblings)
        .select_related("post_edit")
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
