"""Reads of the error-span task: a rater's evaluations (their list), the document around the text
evaluated, and the JSON the task page embeds.

Blind as the editor is: a rater sees the text they evaluate, the item's source, and of the document's
other segments their source and the same system's output (for a post-edit: the same annotator's
submitted post-edits); never the system's name, nor another rater's spans.
"""

from __future__ import annotations

from django.db.models import Case, Count, IntegerField, Q, Value, When
from django.urls import reverse

from annotations.models import Assignment, Evaluation, PostEdit, Project
from annotations.selectors import ContextSegment
from annotations.services.evaluation_task import MAX_EVENTS_PER_BATCH
from annotations.services.evaluations import MAX_COMMENT, MAX_SPANS
from annotations.typology import NON_TRANSLATION, SEVERITIES, TypologyError

# The chooser's severities: the WMT ones a rater picks ("neutral" is an import's, not offered).
OFFERED_SEVERITIES = tuple(s for s in SEVERITIES if s != "neutral")


def rater_evaluations(*, user) -> list[Evaluation]:
    """The user's own evaluations: open ones first (in progress, then pending), then submitted ones."""
    order = Case(
        When(status=Evaluation.IN_PROGRESS, then=Value(0)),
        When(status=Evaluation.PENDING, then=Value(1)),
        default=Value(2),
        output_field=IntegerField(),
    )
    return list(
        Evaluation.objects.filter(rater=user, origin="live")
        .select_related("item__project")
        .annotate(open_order=order)
        .order_by("open_order", "item__project__name", "item__position", "pk")
    )


def evaluations_summary(*, user) -> dict[str, int]:
    """How many live evaluations the user has, and how many of them are still open (one query)."""
    live = Evaluation.objects.filter(rater=user, origin=PostEdit.LIVE)
    return live.aggregate(total=Count("id"), open=Count("id", filter=~Q(status=Evaluation.SUBMITTED)))


def next_open_evaluation(*, user, exclude: int | None = None) -> Evaluation | None:
    queryset = Evaluation.objects.filter(rater=user, origin="live").exclude(status=Evaluation.SUBMITTED)
    if exclude is not None:
        queryset = queryset.exclude(pk=exclude)
    return queryset.order_by("item__project__name", "item__position", "pk").first()


def evaluation_context(*, evaluation: Evaluation) -> list[ContextSegment]:
    """The segments around the evaluated text in its document, as the project's context setting asks:
    their source and the same system's output (or the same annotator's submitted post-edit)."""
    item = evaluation.item
    project = item.project
    if project.context == Project.CONTEXT_NONE or not item.document:
        return []
    siblings = list(project.items.filter(document=item.document).order_by("document_position", "position", "id"))
    index = next(k for k, sibling in enumerate(siblings) if sibling.pk == item.pk)
    if project.context == Project.CONTEXT_WINDOW:
        window = project.context_window
        siblings = siblings[max(0, index - window) : index + window + 1]
    edits: dict[int, str] = {}
    if evaluation.post_edit is not None:
        author = evaluation.post_edit.assignment.annotator_id
        for assignment in Assignment.objects.filter(
            annotator_id=author, item__in=siblings, status=Assignment.SUBMITTED
        ).select_related("post_edit"):
            post_edit = getattr(assignment, "post_edit", None)
            if post_edit is not None:
                edits[assignment.item_id] = post_edit.text
    segments = []
    for sibling in siblings:
        if sibling.pk == item.pk:
            segments.append(
                ContextSegment(sibling.external_id, sibling.document_position, sibling.source, "", "current")
            )
            continue
        if evaluation.post_edit_id is not None:
            text = edits.get(sibling.pk, "")
        else:
            output = sibling.outputs.get(evaluation.system) if isinstance(sibling.outputs, dict) else None
            text = output if isinstance(output, str) else ""
        segments.append(ContextSegment(sibling.external_id, sibling.document_position, sibling.source, text, "todo"))
    return segments


def evaluation_config(*, evaluation: Evaluation, page_id: str, next_seq: int, csrf_token: str) -> dict:
    """The JSON the task page embeds (json_script id "evaluation-config"); offsets in code points."""
    project = evaluation.item.project
    try:
        categories = list(project.typology().categories)
    except TypologyError:
        categories = []
    following = next_open_evaluation(user=evaluation.rater, exclude=evaluation.pk)
    return {
        "evaluation_id": evaluation.pk,
        "page_id": page_id,
        "next_seq": next_seq,
        "protocol": evaluation.protocol,
        "text": evaluation.text,
        "source": evaluation.item.source,
        "prefill": evaluation.prefill if isinstance(evaluation.prefill, list) else [],
        "categories": [c for c in categories if c != NON_TRANSLATION],
        "severities": list(OFFERED_SEVERITIES),
        "non_translation": NON_TRANSLATION in categories,
        "max_spans": MAX_SPANS,
        "max_comment": MAX_COMMENT,
        "max_batch_events": MAX_EVENTS_PER_BATCH,
        "csrf_token": csrf_token,
        "urls": {
            "events": reverse("api-evaluation-events", args=[evaluation.pk]),
            "submit": reverse("api-evaluation-submit", args=[evaluation.pk]),
            "next": reverse("evaluation", args=[following.pk]) if following else reverse("evaluations"),
        },
    }
