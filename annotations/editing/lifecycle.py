"""A post-edit's life: opened (a visit per page load), then submitted (effort derived) or skipped."""

import uuid
from datetime import datetime

from django.db import transaction
from django.http import Http404
from django.utils import timezone

from annotations.editing.clock import (
    bounded_effort,
    end_where_the_next_began,
    lock_annotator,
    spend_tolerance,
    tolerance_left_ms,
)
from annotations.editing.errors import DraftConflict, InvalidInput, PostEditClosed, ensure_text
from annotations.editing.locks import locked_post_edit, visit_of
from annotations.editing.logs import stored_log
from annotations.editing.navigation import Navigation, navigation_after, skipped_url
from annotations.editing.selectors import shown_condition
from annotations.effort import RATE_LIMIT_KEYS, RATE_WINDOW_MS
from annotations.highlights import highlight_edits
from annotations.models import DEFINITION_VERSION, EFFORT_FIELDS, Assignment, PostEdit, Visit
from annotations.replay import replay

FLAG_EVENT_GAP = "event_gap"
FLAG_KEYS_UNCORROBORATED = "keys_uncorroborated"
FLAG_KEY_RATE = "key_rate"
FLAG_REPLAY_MISMATCH = "replay_mismatch"
FLAG_WALL_CLIPPED = "wall_clipped"
FLAG_CONDITION_UNKNOWN = "condition_unknown"
FLAG_CONDITION_OUTPUT_MISSING = "condition_output_missing"


# ---------------------------------------------------------------- opening


@transaction.atomic
def post_edit_open(*, assignment: Assignment, user, now: datetime | None = None) -> tuple[PostEdit, Visit]:
    """Show an item to its annotator: one PostEdit (created once), one new Visit for this page load."""
    lock_annotator(user.pk)  # one page load of the annotator opens at a time (clock.py)
    now = now or timezone.now()
    # The item and project come along for the editor page (without them: a query each); only the
    # assignment row is locked (locking the project's row would queue every annotator's page load).
    assignment = (
        Assignment.objects.select_for_update(of=("self",)).select_related("item__project").get(pk=assignment.pk)
    )
    if assignment.annotator_id != user.pk:
        raise Http404("No such assignment.")
    if not assignment.is_open:
        raise PostEditClosed(f"this item is already {assignment.get_status_display()}")
    post_edit = PostEdit.objects.filter(assignment=assignment).first() or _new_post_edit(assignment)
    if post_edit.first_shown_at is None:
        post_edit.first_shown_at = now
        post_edit.save(update_fields=["first_shown_at", "updated"])
    if assignment.status == Assignment.PENDING:
        assignment.status = Assignment.IN_PROGRESS
        assignment.started = assignment.started or now
        assignment.save(update_fields=["status", "started"])
    # Create first, then end the others: lock order annotator's clock -> assignment -> post-edit -> visits.
    visit = Visit.objects.create(post_edit=post_edit, started_at=now, last_seen_at=now)
    Visit.objects.filter(post_edit__assignment__annotator=user, ended_at__isnull=True).exclude(pk=visit.pk).update(
        ended_at=now
    )
    post_edit.assignment = assignment
    return post_edit, visit


def _new_post_edit(assignment: Assignment) -> PostEdit:
    """The post-edit of a first opening: the assignment's condition fixes the text it starts from
    (an output, or nothing), copied here so that later changes to the project cannot alter it."""
    item = assignment.item
    # An undeclared condition or a missing output starts from an empty editor, flagged: never a text
    # the condition hides (condition_unknown, condition_output_missing).
    start, flag = item.blind_start(assignment.condition, shown_condition(item.project, assignment.condition))
    flags = [flag] if flag else []
    start_override = None if not assignment.condition else start
    return PostEdit.objects.create(
        assignment=assignment,
        draft_text=start,
        condition=assignment.condition,
        start_override=start_override,
        flags=flags,
    )


# ---------------------------------------------------------------- submit


def _annotator_of(post_edit: PostEdit) -> int:
    """The annotator of the post-edit's assignment (read before any lock: it never changes)."""
    return Assignment.objects.filter(pk=post_edit.assignment_id).values_list("annotator_id", flat=True).get()


@transaction.atomic
def post_edit_submit(
    *,
    post_edit: PostEdit,
    page_id: uuid.UUID | str,
    text: str,
    version: int,
    last_seq: int,
    now: datetime | None = None,
) -> Navigation:
    """Finish the edit: derive effort from the stored log, replay it, clip by server time. Idempotent."""
    ensure_text(text, field="text")
    annotator_id = _annotator_of(post_edit)
    clock = lock_annotator(annotator_id)
    now = now or timezone.now()
    assignment = Assignment.objects.select_for_update().get(pk=post_edit.assignment_id)
    post_edit = locked_post_edit(post_edit)
    if assignment.status == Assignment.SUBMITTED:
        return navigation_after(post_edit.assignment)
    if assignment.status == Assignment.SKIPPED:
        raise PostEditClosed(f"post-edit {post_edit.pk} was skipped; it cannot be submitted")
    visit = visit_of(post_edit, page_id)
    if version != post_edit.version:
        raise DraftConflict(server_text=post_edit.draft_text, server_version=post_edit.version)

    visit.last_seen_at = now
    visit.ended_at = visit.ended_at or now
    visit.save(update_fields=["last_seen_at", "ended_at"])
    visits = list(post_edit.visits.all())
    end_where_the_next_began(visits, annotator_id=annotator_id)
    # What is left of the annotator's tolerance, for each page load and once for all of them.
    granted = tolerance_left_ms(clock)
    events = stored_log(post_edit)
    result = replay(post_edit.start_text, events, final_text=text)
    effort, bound = bounded_effort(
        events,
        visits=visits,
        tolerance_ms=granted,
        idle_threshold_ms=post_edit.assignment.item.project.idle_threshold_ms,
        committed_compositions=result.committed_compositions,
        noop_inputs=result.noop_inputs,
    )
    spend_tolerance(clock, granted_ms=granted, observed_ms=bound.observed_ms, wall_ms=effort.wall_ms)
    item = post_edit.assignment.item
    # A review starts from a person's text, on which the output's spans do not lie.
    reviewing = post_edit.assignment.reviews_id is not None
    spans = [] if reviewing else item.spans_for(shown_condition(item.project, post_edit.condition))
    if spans:
        post_edit.extra = {**post_edit.extra, "highlight_edits": highlight_edits(post_edit.start_text, spans, events)}

    for name in EFFORT_FIELDS:
        setattr(post_edit, name, getattr(effort, name))
    post_edit.uncorroborated_keys = effort.uncorroborated_keys
    if effort.clipped_ms > 0:
        post_edit.add_flag(FLAG_WALL_CLIPPED)
    if effort.uncorroborated_keys > effort.rate_excess_keys:
        post_edit.add_flag(FLAG_KEYS_UNCORROBORATED)
    if effort.rate_excess_keys or effort.fast_compositions:
        post_edit.add_flag(FLAG_KEY_RATE)
        post_edit.extra = {
            **post_edit.extra,
            "key_rate": {
                "window_ms": RATE_WINDOW_MS,
                "limit": RATE_LIMIT_KEYS,
                "excess_keys": effort.rate_excess_keys,
                "fast_compositions": effort.fast_compositions,
            },
        }
    post_edit.replay_ok = result.ok
    post_edit.replay_divergence = result.divergence
    if not result.ok:
        post_edit.add_flag(FLAG_REPLAY_MISMATCH)
    max_seq = max((event.seq for event in events), default=-1)
    if last_seq > max_seq:
        post_edit.event_gaps = sorted([*post_edit.event_gaps, [max_seq + 1, last_seq]])
    if post_edit.event_gaps:
        post_edit.add_flag(FLAG_EVENT_GAP)
    post_edit.text = text
    post_edit.draft_text = text
    post_edit.submitted_at = now
    post_edit.server_elapsed_ms = bound.observed_ms
    post_edit.clock_tolerance_ms = granted
    post_edit.definition_version = DEFINITION_VERSION
    post_edit.save()

    assignment.status = Assignment.SUBMITTED
    assignment.finished = now
    assignment.save(update_fields=["status", "finished"])
    post_edit.assignment = assignment
    return navigation_after(post_edit.assignment)


# ---------------------------------------------------------------- skip


@transaction.atomic
def post_edit_skip(*, post_edit: PostEdit, page_id: uuid.UUID | str, reason: str, now: datetime | None = None) -> str:
    """Give the item up with a reason; returns the next URL. Events and draft are kept."""
    reason = reason.strip()
    if not reason:
        raise InvalidInput("reason: say why you skip this item")
    ensure_text(reason, field="reason")
    lock_annotator(_annotator_of(post_edit))
    now = now or timezone.now()
    assignment = Assignment.objects.select_for_update().get(pk=post_edit.assignment_id)
    post_edit = locked_post_edit(post_edit)
    if assignment.status == Assignment.SUBMITTED:
        raise PostEditClosed(f"post-edit {post_edit.pk} is already submitted; it cannot be skipped")
    visit = visit_of(post_edit, page_id)
    if assignment.status != Assignment.SKIPPED:
        assignment.status = Assignment.SKIPPED
        assignment.skip_reason = reason
        assignment.finished = now
        assignment.save(update_fields=["status", "skip_reason", "finished"])
        Visit.objects.filter(pk=visit.pk).update(last_seen_at=now, ended_at=visit.ended_at or now)
    return skipped_url(assignment)
