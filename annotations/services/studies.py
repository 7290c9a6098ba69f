"""Designed studies: assign documents to annotators under counterbalanced conditions."""

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from annotations.design import (
    Condition,
    DesignError,
    LatinSquarePlan,
    condition_names,
    latin_square,
    parse_conditions,
)
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
    segments_of: dict[str, int] = field(default_factory=dict)  # document -> its segments
    digest: str = ""  # what the plan was made from (plan_digest); a confirmation names it

    @property
    def assignments(self) -> int:
        """How many assignments the plan makes (or made): every annotator, practice and every segment."""
        return len(self.plan.annotators) * (self.practice_items + self.segments)

    def per_annotator(self) -> list[dict]:
        """Per annotator: their documents in queue order with each one's condition, and how many of
        their documents fall under each condition (every chosen condition, zeros included)."""
        return [
            {**row, "conditions": {name: row["conditions"].get(name, 0) for name in self.plan.conditions}}
            for row in self.plan.rows()
        ]

    def per_document(self) -> list[dict]:
        """Per document: its segments and how many annotators see it under each condition."""
        counts = self.plan.per_document()
        return [
            {
                "document": document,
                "segments": self.segments_of.get(document, 0),
                "conditions": {name: counts[document].get(name, 0) for name in self.plan.conditions},
            }
            for document in self.plan.documents
        ]


DIGEST_PARTS = {
    "items": "the project's items, documents or practice items",
    "annotators": "the chosen annotators or their order",
    "conditions": "the chosen conditions, their order, or what one shows (the output that prefills the editor, "
    "highlights on or off)",
}


def _part(value) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=True, sort_keys=True).encode()).hexdigest()[:12]


def plan_digest(
    *,
    annotators: Sequence[str],
    conditions: Sequence[Condition | str],
    documents: Sequence[Document],
    practice: Sequence[int],
    annotator_ids: Sequence[int] = (),
) -> str:
    """A fingerprint of everything the assignments would be made from and of everything that decides
    what their annotators will see: the same digest means the same assignments, shown the same way.
    Three parts, items.annotators.conditions, so that a refusal can say which changed: the documents'
    item ids and the practice items; the annotators (names and accounts) in slot order; the chosen
    conditions in order with their full definitions (name, output, highlights). A page shows the plan
    with it and applies only the plan it showed."""
    items = _part([[[d.key, list(d.item_ids)] for d in documents], list(practice)])
    people = _part([list(annotators), list(annotator_ids)])
    definitions = _part([c.as_json() if isinstance(c, Condition) else c for c in conditions])
    return f"{items}.{people}.{definitions}"


def digest_changes(expected: str, actual: str) -> list[str]:
    """What differs between two plan digests, in words (every part when `expected` is not one)."""
    old, new = expected.split("."), actual.split(".")
    if len(old) != len(DIGEST_PARTS):
        return list(DIGEST_PARTS.values())
    return [words for (name, words), a, b in zip(DIGEST_PARTS.items(), old, new, strict=True) if a != b]


def _plan(
    project: Project, annotators: Sequence, conditions: Sequence[str]
) -> tuple[LatinSquarePlan, list[Document], list[Document], list[Condition]]:
    try:
        declared = parse_conditions(project.conditions)
        names = condition_names(",".join(conditions), declared)
        documents = project_documents(project=project)
        plan = latin_square(
            annotators=[a.username for a in annotators], documents=[d.key for d in documents], conditions=names
        )
    except DesignError as exc:
        raise ServiceError(str(exc)) from None
    by_name = {condition.name: condition for condition in declared}
    chosen = [by_name[name] for name in plan.conditions]
    return plan, documents, project_documents(project=project, practice=True), chosen


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
    *,
    project: Project,
    annotators: Sequence,
    conditions: Sequence[str],
    apply: bool = False,
    expected_digest: str = "",
) -> DesignResult:
    """The Latin-square plan over the annotators x the project's documents x the conditions,
    and with apply=True its assignments: each annotator gets practice items first (no
    condition), then every document, in the plan's rotated order, its segments in document
    order, each under the condition of its cell. Without apply nothing is written (the plan is
    shown first). A designed study is assigned once: annotators who already hold work in the
    project are refused (withdraw it first). With expected_digest (the digest of the plan that was
    shown) the assignments are made only if the plan is still that one."""
    if not annotators:
        raise ServiceError("annotators: name at least one annotator")
    # Only applying locks the project (against a concurrent apply or a participant's Start taking a
    # slot); a plan is read without a lock, so previews never hold up anyone's work.
    project = (Project.objects.select_for_update() if apply else Project.objects).get(pk=project.pk)
    plan, documents, practice, chosen = _plan(project, annotators, conditions)
    holding = (
        Assignment.objects.live()
        .filter(item__project=project, annotator__in=annotators)
        .order_by("annotator__username")  # not the default queue ordering: DISTINCT would keep its columns
        .values_list("annotator__username", flat=True)
        .distinct()
    )
    if holding:
        names = ", ".join(holding)
        raise ServiceError(
            f"annotators: {names} already hold work in this project; a designed study is assigned once "
            "(withdraw it first: Batches & assignment, the assignments API, or assign --withdraw-from NAME)"
        )
    practice_ids = [item_id for document in practice for item_id in document.item_ids]
    segments = sum(len(d.item_ids) for d in documents)
    result = DesignResult(
        plan=plan,
        applied=apply,
        practice_items=len(practice_ids),
        segments=segments,
        segments_of={document.key: len(document.item_ids) for document in documents},
        digest=plan_digest(
            annotators=plan.annotators,
            annotator_ids=[a.pk for a in annotators],
            conditions=chosen,
            documents=documents,
            practice=practice_ids,
        ),
    )
    if apply and expected_digest and expected_digest != result.digest:
        changed = "; ".join(digest_changes(expected_digest, result.digest))
        raise ServiceError(
            f"plan_digest: the plan changed since it was shown ({changed}); nothing was assigned. "
            "Look at the new plan and confirm it again"
        )
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
