"""The rows every editing write works on, locked in one order: annotator's clock -> assignment ->
post-edit -> visits; the one lock order.

Opening, submitting and skipping lock the annotator's clock row first (clock.py: one page load of
the annotator runs at a time, and the tolerance budget is spent by one submit at a time); event
batches and autosaves lock only the post-edit, by plain SQL statements that also read what the write
needs of it. Every write locks the assignment and/or the post-edit row (select_for_update) before it
touches the post-edit's visits or events, so a batch re-sent concurrently is stored once and a
double-clicked submit gives one result (tests/editlab/test_faults.py, test_one_clock.py).
"""

import functools
import json
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from annotations.editing import event_store
from annotations.editing.errors import UnknownVisit
from annotations.effort import LogEvent
from annotations.models import Assignment, PostEdit, Visit


def locked_post_edit(post_edit: PostEdit) -> PostEdit:
    return (
        PostEdit.objects.select_for_update(of=("self",))
        .select_related("assignment__item__project")
        .get(pk=post_edit.pk)
    )


def visit_of(post_edit: PostEdit, page_id: uuid.UUID | str) -> Visit:
    try:
        return post_edit.visits.get(page_id=page_id)
    except (Visit.DoesNotExist, ValueError):
        raise UnknownVisit(f"page_id {page_id} is not a page load of post-edit {post_edit.pk}") from None


# ---------------------------------------------------------------- the hot paths' locks (plain SQL)


@dataclass(frozen=True)
class LockedPostEdit:
    """What an editing write reads of the post-edit it has locked: its assignment's status."""

    status: str

    @property
    def closed(self) -> bool:
        return self.status in Assignment.CLOSED

    @property
    def status_display(self) -> str:
        return dict(Assignment.STATUS_CHOICES).get(self.status, self.status)


@dataclass(frozen=True)
class EventsLock(LockedPostEdit):
    """... and, for ingestion, its recorded gaps."""

    event_gaps: list[list[int]]


@dataclass(frozen=True)
class DraftLock(LockedPostEdit):
    """... and, for an autosave, its draft and version."""

    version: int
    draft_text: str


@functools.cache
def _lock_sql(*columns: str) -> str:
    """Lock the post-edit row (PostgreSQL: FOR UPDATE OF it, in the lock order) and read its
    assignment's status and the post-edit's `columns`, in one plain SQL statement."""
    post_edits, assignments = event_store.post_edit_tables()
    quote = connection.ops.quote_name
    lock = f" FOR UPDATE OF {post_edits}" if connection.features.has_select_for_update_of else ""
    read = "".join(f", {post_edits}.{quote(name)}" for name in columns)
    return (
        f"SELECT {assignments}.{quote('status')}{read} FROM {post_edits} "
        f"INNER JOIN {assignments} ON {assignments}.{quote('id')} = {post_edits}.{quote('assignment_id')} "
        f"WHERE {post_edits}.{quote('id')} = %s{lock}"
    )


def _locked_row(post_edit_id: int, sql: str, params: list) -> tuple:
    """The row of a statement that locks the post-edit (_lock_sql first); DoesNotExist when it is gone."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        raise PostEdit.DoesNotExist(f"post-edit {post_edit_id} does not exist")
    return row


def _events_lock(row: tuple) -> EventsLock:
    status, gaps = row[:2]
    return EventsLock(status=status, event_gaps=json.loads(gaps) if isinstance(gaps, str | bytes) else gaps)


def lock_for_events(post_edit_id: int) -> EventsLock:
    """Lock the post-edit for ingestion: its assignment's status and its recorded gaps."""
    return _events_lock(_locked_row(post_edit_id, _lock_sql("event_gaps"), [post_edit_id]))


def lock_and_advance_visit(
    post_edit: PostEdit, page_id: uuid.UUID | str, now: datetime, events: list[LogEvent]
) -> tuple[EventsLock, int | None]:
    """lock_for_events, then advance_visit, as one statement on PostgreSQL: one round trip less
    per batch. The lock is a CTE that the visit's UPDATE waits for (its EXISTS), so the post-edit
    is locked before the page load, in the lock order; a CTE that locks is run once, whoever
    reads it. SQLite (no UPDATE in a CTE; its transaction holds the whole database): the two."""
    if connection.vendor != "postgresql":
        return lock_for_events(post_edit.pk), event_store.advance_visit(post_edit, page_id, now, events)
    update, params = event_store.advance_visit_sql(
        post_edit, page_id, now, events, also=" AND EXISTS (SELECT 1 FROM locked)"
    )
    visit_id = connection.ops.quote_name("id")
    sql = (
        f"WITH locked AS ({_lock_sql('event_gaps')}), seen AS ({update}) "
        f"SELECT locked.*, (SELECT {visit_id} FROM seen) FROM locked"
    )
    row = _locked_row(post_edit.pk, sql, [post_edit.pk, *params])
    return _events_lock(row), row[2]


def lock_for_draft(post_edit_id: int) -> DraftLock:
    """Lock the post-edit for an autosave: its assignment's status, its version and its draft, in one
    plain SQL statement."""
    status, version, draft_text = _locked_row(post_edit_id, _lock_sql("version", "draft_text"), [post_edit_id])
    return DraftLock(status=status, version=version, draft_text=draft_text)
