"""Reading stored event logs back, as the pure effort, replay and process functions take them.

One post-edit's log (`stored_log`: the editor, replay and submit paths) or the logs of many
post-edits at once (`stored_logs`: analyses over a selection; two queries for a chunk of
post-edits instead of two per post-edit, which is what reading 100,000 logs costs, measured in
editlab/benchmarks/results/process.md). Column values, not model instances, and `extra` as text
(nearly always "{}"): a long log loads without the JSON and UUID field converters.
"""

import json
from collections.abc import Iterable, Sequence

from django.db.models import QuerySet, TextField
from django.db.models.functions import Cast

from annotations.editing.event_store import EVENT_VALUE_COLUMNS
from annotations.log_event import LogEvent
from annotations.models import EditEvent, PostEdit, Visit

LOG_COLUMNS = ("seq", "t_ms", "kind", "visit_id", *EVENT_VALUE_COLUMNS, "length_after", "extra_text")


def _log_rows(events: QuerySet, *columns: str) -> QuerySet:
    return events.annotate(extra_text=Cast("extra", TextField())).values_list(*columns, *LOG_COLUMNS)


def _log_event(row: Sequence, pages: dict[int, str]) -> LogEvent:
    seq, t_ms, kind, visit_id, key, code, modifiers, repeat, input_type, start, end, data, length, extra_text = row
    state, source, full_text = "", "", False
    if extra_text and extra_text != "{}":
        extra = json.loads(extra_text)
        state, source, full_text = extra.get("state", ""), extra.get("src", ""), bool(extra.get("f", False))
    # Positional, in LogEvent's field order (a frozen dataclass's keywords cost per event).
    return LogEvent(
        seq, t_ms, kind, pages.get(visit_id, ""), key, code, modifiers, repeat, input_type, start, end, data,
        length, state, source, full_text,
    )  # fmt: skip


def stored_log(post_edit: PostEdit) -> list[LogEvent]:
    """The post-edit's events in seq order."""
    pages = {pk: str(page_id) for pk, page_id in post_edit.visits.values_list("pk", "page_id")}
    return [_log_event(row, pages) for row in _log_rows(post_edit.events.order_by("seq"))]


def stored_logs(post_edit_ids: Iterable[int]) -> dict[int, list[LogEvent]]:
    """The events of these post-edits in seq order, by post-edit id (one with no events is absent):
    one query for their page loads, one for their events. The caller bounds how many it asks for."""
    ids = list(post_edit_ids)
    pages = {
        pk: str(page_id) for pk, page_id in Visit.objects.filter(post_edit_id__in=ids).values_list("pk", "page_id")
    }
    events = EditEvent.objects.filter(post_edit_id__in=ids).order_by("post_edit_id", "seq")
    logs: dict[int, list[LogEvent]] = {}
    current: list[LogEvent] = []
    current_id = None
    for row in _log_rows(events, "post_edit_id").iterator(chunk_size=20_000):
        if row[0] != current_id:
            current_id = row[0]
            current = logs[current_id] = []
        current.append(_log_event(row[1:], pages))
    return logs
