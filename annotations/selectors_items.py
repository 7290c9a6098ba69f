"""Reads of the items browser: a page of a project's items (each with its post-edits counted by status)
or of its post-edits (one row per assignment: an item given to an annotator, opened or not), under the
browser's filters, and one item with everything it holds.

A page is read by keyset (items by (position, id), post-edits by id), PAGE_SIZE rows at a time: the
same few queries whatever the project's size and whichever page, never one per row.
"""

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Exists, F, IntegerField, Max, OuterRef, Q, QuerySet, TextField
from django.db.models.expressions import ExpressionWrapper
from django.db.models.functions import Cast

from annotations.design import DesignError, parse_spans
from annotations.items_forms import ANY_FLAG, NO_CONDITION, NO_FLAG, ItemFilters
from annotations.models import Assignment, Item, Project
from annotations.references import Reference, references_shown

PAGE_SIZE = 50
STATUSES = tuple(value for value, _ in Assignment.STATUS_CHOICES)
STATUS_LABELS = dict(Assignment.STATUS_CHOICES) | {Assignment.PENDING: "not started"}


@dataclass
class Page:
    rows: list[dict]
    total: int  # rows matching the filters, over every page
    next_after: int | None = None  # the marker of the next page (its `after`), None on the last
    previous_before: int | None = None  # the marker of the previous page (its `before`), None on the first
    problems: list[str] = field(default_factory=list)  # page markers that could not be followed


def _selected(project: Project, filters: ItemFilters, *, walk: bool = False) -> QuerySet:
    """The project's assignments the filters select (all of them when none is set). With `walk`, the project
    is compared through an expression no index answers (its item's project id + 0), so that the database
    reads a page by walking the assignments in id order until it has enough, instead of reading every
    assignment of the project through the item index and sorting them by id (see post_edits_page)."""
    assignments = Assignment.objects.first_pass()
    if walk:
        in_project = ExpressionWrapper(F("item__project_id") + 0, output_field=IntegerField())
        assignments = assignments.alias(in_project=in_project).filter(in_project=project.pk)
    else:
        assignments = assignments.filter(item__project=project)
    if filters.annotator:
        assignments = assignments.filter(annotator__username=filters.annotator)
    if filters.status:
        assignments = assignments.filter(status=filters.status)
    if filters.condition == NO_CONDITION:
        assignments = assignments.filter(condition="")
    elif filters.condition:
        assignments = assignments.filter(condition=filters.condition)
    if filters.flag == ANY_FLAG:
        assignments = assignments.filter(post_edit__isnull=False).exclude(post_edit__flags=[])
    elif filters.flag == NO_FLAG:
        assignments = assignments.filter(Q(post_edit__isnull=True) | Q(post_edit__flags=[]))
    elif filters.flag:
        # A flag is a plain name: the list's JSON text holds it quoted (SQLite and PostgreSQL alike;
        # the JSON `contains` lookup exists on PostgreSQL only).
        assignments = assignments.annotate(flags_text=Cast("post_edit__flags", TextField())).filter(
            flags_text__contains=f'"{filters.flag}"'
        )
    if filters.q:
        assignments = assignments.filter(item__external_id__icontains=filters.q)
    return assignments


def _keyset(rows: list, *, backwards: bool, had_marker: bool) -> tuple[list, bool, bool]:
    """(the page's rows in order, whether a page follows, whether one precedes) from PAGE_SIZE + 1 rows read
    forwards (after a marker, or from the start) or backwards (before a marker)."""
    more = len(rows) > PAGE_SIZE
    rows = rows[:PAGE_SIZE]
    if backwards:
        return rows[::-1], True, more
    return rows, more, had_marker


def items_page(*, project: Project, filters: ItemFilters) -> Page:
    """A page of the project's items in import order: id, document and place, batch, and its post-edits
    (those the filters select) counted by status. With a filter on post-edits, only items holding one."""
    items = project.items.all()
    if filters.q:
        items = items.filter(external_id__icontains=filters.q)
    if filters.selects_post_edits:
        items = items.filter(Exists(_selected(project, filters).filter(item=OuterRef("pk"))))
    total = items.count()
    problems: list[str] = []
    marker = filters.after if filters.after is not None else filters.before
    page_items = items
    if marker is not None:
        position = project.items.filter(pk=marker).values_list("position", flat=True).first()
        if position is None:
            problems.append(f"item {marker} is not in this project: showing the first page")
            marker = None
        elif filters.after is not None:
            page_items = items.filter(Q(position__gt=position) | Q(position=position, pk__gt=marker))
        else:
            page_items = items.filter(Q(position__lt=position) | Q(position=position, pk__lt=marker))
    backwards = marker is not None and filters.after is None
    order = ("-position", "-id") if backwards else ("position", "id")
    fields = ("id", "external_id", "document", "document_position", "position", "practice", "batch__name")
    rows, has_next, has_previous = _keyset(
        list(page_items.order_by(*order).values(*fields)[: PAGE_SIZE + 1]), backwards=backwards, had_marker=bool(marker)
    )
    counts: dict[int, dict[str, int]] = {row["id"]: dict.fromkeys(STATUSES, 0) for row in rows}
    if rows:
        selected = _selected(project, filters).filter(item_id__in=list(counts))
        for item_id, status, n in selected.values_list("item_id", "status").annotate(n=Count("id")).order_by():
            counts[item_id][status] = n
    for row in rows:
        row["counts"] = counts[row["id"]]
        row["total"] = sum(counts[row["id"]].values())
    return Page(
        rows=rows,
        total=total,
        next_after=rows[-1]["id"] if rows and has_next else None,
        previous_before=rows[0]["id"] if rows and has_previous else None,
        problems=problems,
    )


POST_EDIT_FIELDS = (
    "id",
    "status",
    "condition",
    "item_id",
    "item__external_id",
    "item__document",
    "item__document_position",
    "item__practice",
    "annotator__username",
    "post_edit__id",
    "post_edit__origin",
    "post_edit__active_ms",
    "post_edit__wall_ms",
    "post_edit__keystrokes",
    "post_edit__allkeys",
    "post_edit__flags",
)


def _walks(total: int, highest: int) -> bool:
    """Whether a page of `total` matching assignments, among ids up to `highest`, is read by a walk in id order."""
    return total * total > PAGE_SIZE * highest


def post_edits_page(*, project: Project, filters: ItemFilters) -> Page:
    """A page of the project's post-edits (one row per assignment, in the order they were made): the
    item, the annotator, condition, status, effort (active and wall time, keys) and flags.

    The page's ids are read first, then their rows by id (a fixed number of queries either way). When the
    matching assignments are dense among all (total² > PAGE_SIZE × the highest assignment id: a walk in id
    order finds a page's rows before it would have read all of them), the ids are read by that walk;
    otherwise through the project's items and sorted."""
    selected = _selected(project, filters)
    total = selected.count()
    highest = Assignment.objects.aggregate(highest=Max("id"))["highest"] or 0
    page_rows = _selected(project, filters, walk=True) if _walks(total, highest) else selected
    if filters.after is not None:
        page_rows = page_rows.filter(pk__gt=filters.after)
    elif filters.before is not None:
        page_rows = page_rows.filter(pk__lt=filters.before)
    backwards = filters.before is not None and filters.after is None
    order = "-id" if backwards else "id"
    ids = list(page_rows.order_by(order).values_list("id", flat=True)[: PAGE_SIZE + 1])
    found = Assignment.objects.filter(pk__in=ids).order_by(order).values(*POST_EDIT_FIELDS) if ids else []
    rows, has_next, has_previous = _keyset(list(found), backwards=backwards, had_marker=filters.after is not None)
    return Page(
        rows=[_post_edit_row(row) for row in rows],
        total=total,
        next_after=rows[-1]["id"] if rows and has_next else None,
        previous_before=rows[0]["id"] if rows and has_previous else None,
    )


def _post_edit_row(row: dict[str, Any]) -> dict[str, Any]:
    flags = row["post_edit__flags"]
    return {
        "assignment_id": row["id"],
        "status": row["status"],
        "status_label": STATUS_LABELS.get(row["status"], row["status"]),
        "condition": row["condition"],
        "item_id": row["item_id"],
        "external_id": row["item__external_id"],
        "document": row["item__document"],
        "document_position": row["item__document_position"],
        "practice": row["item__practice"],
        "annotator": row["annotator__username"],
        "post_edit_id": row["post_edit__id"],
        "origin": row["post_edit__origin"],
        "active_ms": row["post_edit__active_ms"],
        "wall_ms": row["post_edit__wall_ms"],
        "keystrokes": row["post_edit__keystrokes"],
        "allkeys": row["post_edit__allkeys"],
        "flags": [str(flag) for flag in flags] if isinstance(flags, list) else [],
    }


# --------------------------------------------------------------------------- one item


@dataclass
class Output:
    name: str
    text: str
    pieces: list[tuple[str, str | None]]  # the text cut at its highlights: (text, label or None outside)
    spans: int
    problem: str = ""  # why the highlights are not shown


@dataclass
class ItemDetail:
    item: Item
    references: list[Reference]
    outputs: list[Output]
    post_edits: list[dict]


def highlight_pieces(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[str, str | None]]:
    """`text` cut at its spans (code points, sorted, not overlapping): (piece, label) inside a span, (piece,
    None) between them; empty pieces left out."""
    pieces: list[tuple[str, str | None]] = []
    at = 0
    for start, end, label in spans:
        if start > at:
            pieces.append((text[at:start], None))
        pieces.append((text[start:end], label))
        at = end
    if at < len(text):
        pieces.append((text[at:], None))
    return pieces


def _outputs(item: Item) -> list[Output]:
    outputs = item.outputs if isinstance(item.outputs, dict) else {}
    highlights = item.highlights if isinstance(item.highlights, dict) else {}
    shown = []
    for name in sorted(outputs):
        text = outputs[name] if isinstance(outputs[name], str) else str(outputs[name])
        try:
            spans = parse_spans(highlights.get(name), text, where=f"highlights[{name!r}]")
        except DesignError as exc:
            shown.append(Output(name, text, [(text, None)], 0, problem=str(exc)))
        else:
            shown.append(Output(name, text, highlight_pieces(text, spans), len(spans)))
    return shown


def item_detail(*, item: Item) -> ItemDetail:
    """The item's texts (source, model output, each system's output cut at its highlights, references) and
    its post-edits (every assignment of it: annotator, condition, status, effort, flags, the text) in one query."""
    assignments = (
        Assignment.objects.first_pass()
        .filter(item=item)
        .select_related("annotator", "post_edit")
        .defer("post_edit__draft_text", "post_edit__extra", "post_edit__replay_divergence")
        .order_by("id")
    )
    post_edits = []
    for assignment in assignments:
        post_edit = getattr(assignment, "post_edit", None)
        post_edits.append({"assignment": assignment, "post_edit": post_edit})
    return ItemDetail(
        item=item,
        references=references_shown(item.references),
        outputs=_outputs(item),
        post_edits=post_edits,
    )
