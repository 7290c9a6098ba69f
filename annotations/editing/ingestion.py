"""Storing a page load's batch of events exactly once, and recording the seqs still missing."""

import bisect
import uuid
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import NoReturn

from django.db import transaction
from django.utils import timezone

from annotations.editing import event_store, locks
from annotations.editing.errors import InvalidInput, PostEditClosed, SeqConflict
from annotations.log_event import LogEvent
from annotations.models import PostEdit, Visit


@dataclass(frozen=True)
class IngestResult:
    stored: int
    duplicates: int
    gaps: list[list[int]]
    max_seq: int


def merge_gaps(gaps: list[list[int]], *, previous_max: int, new_seqs: list[int]) -> list[list[int]]:
    """Missing seq ranges after storing new_seqs, from the recorded gaps (no scan of the log).

    Works on the arrived seqs only, so a far jump costs no more than a near one.
    """
    arrived = sorted(set(new_seqs))
    candidates = [(first, last) for first, last in gaps]
    top = arrived[-1] if arrived else previous_max
    if top > previous_max + 1:
        candidates.append((previous_max + 1, top - 1))
    merged: list[list[int]] = []
    for first, last in candidates:
        low = bisect.bisect_left(arrived, first)
        high = bisect.bisect_right(arrived, last)
        start = first
        for seq in arrived[low:high]:
            if seq > start:
                merged.append([start, seq - 1])
            start = seq + 1
        if start <= last:
            merged.append([start, last])
    return sorted(merged)


def _ms(t: float) -> str:
    return str(int(t)) if float(t).is_integer() else str(t)


def _clock_error(events: list[LogEvent], fresh: dict[int, LogEvent], timeline: list[tuple[int, float]]) -> str | None:
    """Why the page load's events, stored and new, in seq order, do not keep client time from running
    backwards; None when they do. Names the new event, by its index in the batch as sent."""
    for (earlier_seq, earlier_t), (later_seq, later_t) in pairwise(timeline):
        if later_t >= earlier_t:
            continue
        if later_seq in fresh:
            index = next(n for n, event in enumerate(events) if event.seq == later_seq)
            return (
                f"events: event {index} (seq {later_seq}) field 't' decreases: {_ms(later_t)} after {_ms(earlier_t)} at "
                f"seq {earlier_seq}, stored from an earlier batch of this page load (client time may not run "
                "backwards within a page load)"
            )
        index = next(n for n, event in enumerate(events) if event.seq == earlier_seq)
        return (
            f"events: event {index} (seq {earlier_seq}) field 't' is {_ms(earlier_t)}, later than {_ms(later_t)} at "
            f"seq {later_seq}, stored from an earlier batch of this page load (client time may not run "
            "backwards within a page load)"
        )
    return None


def _place_late_batch(
    post_edit: PostEdit,
    visit: tuple[int, int | None, float | None],
    events: list[LogEvent],
    fresh: list[LogEvent],
    now: datetime,
) -> None:
    """The slow path, for a batch that does not simply follow its page load's stored events (a
    retry, a late beacon, a gap filled): check its new events' times against the stored ones around
    them, then mark the page load seen and, if they extend it, move its last event there."""
    visit_id, last_seq, _ = visit
    update: dict = {"last_seen_at": now}
    if fresh:
        by_seq = {event.seq: event for event in fresh}
        stored = event_store.stored_times_around(post_edit.pk, visit_id, min(by_seq), max(by_seq))
        timeline = sorted([*stored, *((event.seq, event.t_ms) for event in fresh)])
        problem = _clock_error(events, by_seq, timeline)
        if problem:
            raise InvalidInput(problem)
        top = by_seq[max(by_seq)]
        if last_seq is None or top.seq > last_seq:
            update.update(last_seq=top.seq, last_t_ms=top.t_ms)
    Visit.objects.filter(pk=visit_id).update(**update)


def _refuse_taken_seq(seq: int, previous_max: int) -> NoReturn:
    raise SeqConflict(
        f"seq {seq} is already taken by another page load of this post-edit (another tab?); "
        f"renumber the pending events from {previous_max + 1} and send them again",
        next_seq=previous_max + 1,
    )


def _store_checked(
    post_edit: PostEdit,
    page_id: uuid.UUID | str,
    visit_id: int | None,
    locked: locks.EventsLock,
    events: list[LogEvent],
    in_order: list[LogEvent],
    seqs: list[int],
    now: datetime,
) -> tuple[list[LogEvent], int]:
    """The batch that does not simply follow its page load (a retry, a late beacon, a gap filled) or
    comes to a closed post-edit: look at what is stored first. Returns the events stored and the
    post-edit's top seq before them."""
    late: tuple[int, int | None, float | None] | None = None
    if visit_id is None:
        late = event_store.visit_position(post_edit, page_id)
        visit_id = late[0]
    found = event_store.stored_seqs_and_top(post_edit.pk, seqs)
    previous_max = max(found, default=-1)
    requested = set(seqs)
    stored_pages = {seq: stored_visit for seq, stored_visit in found.items() if seq in requested}
    foreign = sorted(seq for seq, stored_visit in stored_pages.items() if stored_visit != visit_id)
    if foreign:
        _refuse_taken_seq(foreign[0], previous_max)
    fresh = [event for event in in_order if event.seq not in stored_pages]
    if fresh and locked.closed:
        raise PostEditClosed(f"post-edit {post_edit.pk} is already {locked.status_display}; it accepts no new events")
    if late is not None:
        _place_late_batch(post_edit, late, events, fresh, now)
    event_store.insert_events(post_edit, visit_id, fresh, now)
    return fresh, previous_max


@transaction.atomic
def post_edit_ingest_events(
    *, post_edit: PostEdit, page_id: uuid.UUID | str, events: list[LogEvent], now: datetime | None = None
) -> IngestResult:
    """Store a validated batch of one page load's events once; record gaps. All or nothing.

    Client time may not run backwards within a page load, across batches too: the page load's last
    stored seq and time are kept on its Visit row, so a batch that follows them (nearly every batch)
    is checked and moved there by the same UPDATE that marks the page load seen.
    """
    now = now or timezone.now()
    in_order = sorted(events, key=lambda event: event.seq)
    # The page load marked seen (and advanced) is rolled back if the batch is refused.
    locked, visit_id = locks.lock_and_advance_visit(post_edit, page_id, now, in_order)
    seqs = [event.seq for event in events]
    if visit_id is not None and not locked.closed:
        # The batch follows its page load's stored events, so none of its seqs can be that page
        # load's already: one statement inserts them, and a seq it finds taken is another tab's.
        previous_max, inserted = event_store.insert_following_events(post_edit, visit_id, in_order, now)
        if len(inserted) < len(in_order):
            _refuse_taken_seq(min(set(seqs) - inserted), previous_max)
        fresh = in_order
    else:
        fresh, previous_max = _store_checked(post_edit, page_id, visit_id, locked, events, in_order, seqs, now)
    gaps = merge_gaps(locked.event_gaps, previous_max=previous_max, new_seqs=[event.seq for event in fresh])
    if gaps != locked.event_gaps:
        PostEdit.objects.filter(pk=post_edit.pk).update(event_gaps=gaps, updated=timezone.now())
    return IngestResult(
        stored=len(fresh),
        duplicates=len(events) - len(fresh),
        gaps=gaps,
        max_seq=max([previous_max, *seqs]),
    )
