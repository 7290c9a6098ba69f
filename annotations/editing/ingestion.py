"""Storing a page load's batch of events exactly once, and recording the seqs still missing."""

import bisect
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from annotations.editing import event_store
from annotations.editing.errors import PostEditClosed, SeqConflict
from annotations.editing.locks import is_closed, locked_post_edit_for_events
from annotations.effort import LogEvent
from annotations.models import PostEdit


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


@transaction.atomic
def post_edit_ingest_events(
    *, post_edit: PostEdit, page_id: uuid.UUID | str, events: list[LogEvent], now: datetime | None = None
) -> IngestResult:
    """Store a validated batch of one page load's events once; record gaps. All or nothing."""
    now = now or timezone.now()
    post_edit = locked_post_edit_for_events(post_edit)
    visit_id = event_store.touch_visit(post_edit, page_id, now)  # rolled back with the batch if it is refused
    seqs = [event.seq for event in events]
    found = event_store.stored_seqs_and_top(post_edit.pk, seqs)
    previous_max = max(found, default=-1)
    requested = set(seqs)
    stored_pages = {seq: stored_visit for seq, stored_visit in found.items() if seq in requested}
    foreign = sorted(seq for seq, stored_visit in stored_pages.items() if stored_visit != visit_id)
    if foreign:
        raise SeqConflict(
            f"seq {foreign[0]} is already taken by another page load of this post-edit (another tab?); "
            f"renumber the pending events from {previous_max + 1} and send them again",
            next_seq=previous_max + 1,
        )
    fresh = [event for event in events if event.seq not in stored_pages]
    if fresh and is_closed(post_edit):
        raise PostEditClosed(
            f"post-edit {post_edit.pk} is already {post_edit.assignment.get_status_display()}; it accepts no new events"
        )
    event_store.insert_events(post_edit, visit_id, fresh, now)
    gaps = merge_gaps(post_edit.event_gaps, previous_max=previous_max, new_seqs=[event.seq for event in fresh])
    if gaps != post_edit.event_gaps:
        post_edit.event_gaps = gaps
        post_edit.save(update_fields=["event_gaps", "updated"])
    return IngestResult(
        stored=len(fresh),
        duplicates=len(events) - len(fresh),
        gaps=gaps,
        max_seq=max([previous_max, *seqs]),
    )
