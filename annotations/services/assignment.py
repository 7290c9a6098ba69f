"""Assignment: give batches to annotators with overlap k; withdraw or move pending assignments."""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, QuerySet

from annotations.models import Assignment, Batch, Item, Project
from annotations.roles import is_annotator
from annotations.services.errors import ServiceError


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
    skipped, so running it again creates nothing new; nobody gets an item twice. Imported
    post-edits (a finished study's) do not count toward the overlap.
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
    # A finished study's imported post-edits stay for comparison; they do not fill the overlap.
    live = Assignment.objects.live().first_pass().filter(item__batch__in=batches)
    for item_id, user_id in live.values_list("item_id", "annotator_id"):
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
        Assignment.objects.first_pass()
        .filter(item__project=project, annotator_id__in=user_ids)
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
        if assignment.is_closed:
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
    nobody gets an item twice. The moved assignment starts afresh as pending, with its condition
    and its place in the queue (a designed study's): the new annotator sees what the design said
    the item is seen under. Refused, nothing moved, when the new annotator holds another segment of
    a moved item's document under another condition (they would see one document under two).
    """
    if not is_annotator(to_annotator) or not to_annotator.is_active:
        raise ServiceError(f"to: {to_annotator.username} is not an active annotator")
    rows = _locked(assignments)
    movable, result = _split_withdrawable(rows, force=force)
    already = set(
        Assignment.objects.first_pass()
        .filter(annotator=to_annotator, item_id__in=[a.item_id for a in movable])
        .values_list("item_id", flat=True)
    )
    moving = [a for a in movable if a.item_id not in already]
    result.skipped_already_assigned = len(movable) - len(moving)
    _refuse_mixed_conditions(moving, to_annotator)
    Assignment.objects.filter(pk__in=[a.pk for a in moving]).delete()
    Assignment.objects.bulk_create(
        [
            Assignment(
                item_id=a.item_id, annotator=to_annotator, condition=a.condition, queue_position=a.queue_position
            )
            for a in moving
        ]
    )
    result.reassigned = len(moving)
    return result


def _refuse_mixed_conditions(moving: list[Assignment], to_annotator) -> None:
    """Refuse a move that would give `to_annotator` one document under two conditions."""
    document_of = {
        item_id: (project_id, document)
        for item_id, project_id, document in Item.objects.filter(pk__in=[a.item_id for a in moving])
        .exclude(document="")
        .values_list("id", "project_id", "document")
    }
    if not document_of:
        return
    conditions: dict[tuple[int, str], set[str]] = defaultdict(set)
    for assignment in moving:
        if assignment.item_id in document_of:
            conditions[document_of[assignment.item_id]].add(assignment.condition)
    names = {document for _, document in conditions}
    for project_id, document, condition in (
        Assignment.objects.first_pass()
        .filter(annotator=to_annotator, item__document__in=names)
        .values_list("item__project_id", "item__document", "condition")
    ):
        if (project_id, document) in conditions:
            conditions[(project_id, document)].add(condition)
    for (_, document), found in sorted(conditions.items()):
        if len(found) > 1:
            shown = ", ".join(repr(c) if c else "none" for c in sorted(found))
            raise ServiceError(
                f"to: {to_annotator.username} would see document {document!r} under more than one condition "
                f"({shown}); nothing was moved. Move a document's work under one condition to an annotator "
                "who holds none of it under another (or withdraw theirs first)"
            )


def _locked(assignments: Iterable[Assignment] | QuerySet) -> list[Assignment]:
    ids = assignments.values_list("pk", flat=True) if isinstance(assignments, QuerySet) else [a.pk for a in assignments]
    return list(Assignment.objects.select_for_update().filter(pk__in=ids).order_by("pk"))
