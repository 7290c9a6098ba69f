"""Designed studies: assign documents to annotators under counterbalanced conditions."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from annotations.design import DesignError, LatinSquarePlan, condition_names, latin_square, parse_conditions
from annotations.models import Assignment, Project
from annotations.selectors import Document, project_documents
from annotations.services.errors import ServiceError


@dataclass
class DesignResult:
    plan: LatinSquarePlan
    applied: bool
    created: int = 0
    practice_items: int = 0
    segments: int = 0  # non-practice items, each assigned to every annotator


def _plan(
    project: Project, annotators: Sequence, conditions: Sequence[str]
) -> tuple[LatinSquarePlan, list[Document], list[Document]]:
    try:
        declared = parse_conditions(project.conditions)
        names = condition_names(",".join(conditions), declared)
        documents = project_documents(project=project)
        plan = latin_square(
            annotators=[a.username for a in annotators], documents=[d.key for d in documents], conditions=names
        )
    except DesignError as exc:
        raise ServiceError(str(exc)) from None
    return plan, documents, project_documents(project=project, practice=True)


def study_queue(
    *, practice_ids: Sequence[int], items_of: Mapping[str, Sequence[int]], row: Sequence[tuple[str, str]]
) -> list[tuple[int, str]]:
    """One annotator's queue as (item id, condition): the practice items first (no condition), then
    each (document, condition) of their Latin-square row, its segments in document order. The
    designed assignment and a crowd participant's slot (services/participants.py) both make it here."""
    queue = [(item_id, "") for item_id in practice_ids]
    for document, condition in row:
        queue.extend((item_id, condition) for item_id in items_of[document])
    return queue


@transaction.atomic
def study_assign_latin_square(
    *, project: Project, annotators: Sequence, conditions: Sequence[str], apply: bool = False
) -> DesignResult:
    """The Latin-square plan over the annotators x the project's documents x the conditions,
    and with apply=True its assignments: each annotator gets practice items first (no
    condition), then every document, in the plan's rotated order, its segments in document
    order, each under the condition of its cell. Without apply nothing is written (the plan is
    shown first). A designed study is assigned once: annotators who already hold work in the
    project are refused (withdraw it first)."""
    if not annotators:
        raise ServiceError("annotators: name at least one annotator")
    project = Project.objects.select_for_update().get(pk=project.pk)
    plan, documents, practice = _plan(project, annotators, conditions)
    holding = (
        Assignment.objects.live()
        .filter(item__project=project, annotator__in=annotators)
        .values_list("annotator__username", flat=True)
        .distinct()
    )
    if holding:
        names = ", ".join(sorted(holding))
        raise ServiceError(
            f"annotators: {names} already hold work in this project; a designed study is assigned once "
            f"(withdraw it first: assign --project ... --withdraw-from NAME)"
        )
    practice_ids = [item_id for document in practice for item_id in document.item_ids]
    segments = sum(len(d.item_ids) for d in documents)
    result = DesignResult(plan=plan, applied=apply, practice_items=len(practice_ids), segments=segments)
    if not apply:
        return result
    items_of = {document.key: document.item_ids for document in documents}
    rows: list[Assignment] = []
    for annotator, row in zip(annotators, plan.rows(), strict=True):
        cells = [(cell["document"], cell["condition"]) for cell in row["documents"]]
        queue = study_queue(practice_ids=practice_ids, items_of=items_of, row=cells)
        rows.extend(
            Assignment(item_id=item_id, annotator=annotator, condition=condition, queue_position=position)
            for position, (item_id, condition) in enumerate(queue)
        )
    Assignment.objects.bulk_create(rows, batch_size=1000)
    result.created = len(rows)
    project.design = Project.DESIGN_LATIN_SQUARE
    history = project.meta.get("designs", [])
    history.append(
        {
            "design": Project.DESIGN_LATIN_SQUARE,
            "annotators": list(plan.annotators),
            "conditions": list(plan.conditions),
            "documents": len(plan.documents),
            "assigned": timezone.now().isoformat(),
        }
    )
    project.meta = {**project.meta, "designs": history}
    project.save(update_fields=["design", "meta"])
    return result
