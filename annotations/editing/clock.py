"""The server's clock over an annotator's work: one running clock, and the tolerance as a budget.

What the server saw of a page load (a Visit) is its window: from serving the page to the page
load's last request, cut where the annotator's next page load started (of any item: opening one
item ends the others). The time a submitted post-edit may count is bounded by those windows, plus
a share of the clock tolerance (settings.EDITLAB_CLOCK_TOLERANCE_MS: clock skew, events a page logs
while it is being left):

- One clock: opening an item, submitting and skipping lock the annotator's AnnotatorClock row
  first (lock order: annotator's clock -> assignment -> post-edit -> visits, locks.py), so page loads
  opened at once are opened one after the other and the later one ends the earlier; the submit
  also cuts each of its page loads where the annotator's next one started (and stores that end),
  so page loads stored open side by side still count once. The windows of an annotator's page
  loads of different items therefore never overlap.
- The budget: the tolerance is granted to the annotator once, not per post-edit. Each submit may
  use what is left of it (clock_tolerance_ms, stored on the post-edit); what the post-edit's time
  used beyond its server-observed time is spent, what it left unused of that time (the latency
  between serving a page and its first event, and between its last event and the request that
  carries it) is given back, up to the whole tolerance. So the wall times of an annotator's
  submitted post-edits add up to at most the time the server saw them working (the union of
  their windows) plus one tolerance, and each post-edit's to at most its own windows plus one
  tolerance. Time beyond the bound is clipped (flag wall_clipped, as any clipping).
"""

import bisect
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings

from annotations.effort import Effort, LogEvent, derive_effort
from annotations.models import AnnotatorClock, PostEdit, Visit

_MS = timedelta(milliseconds=1)


def lock_annotator(annotator_id: int) -> AnnotatorClock:
    """Lock the annotator's clock row (created on first use), before any other row of an editing write."""
    clock, _ = AnnotatorClock.objects.select_for_update().get_or_create(user_id=annotator_id)
    return clock


def visit_server_window(visit: Visit) -> tuple[datetime, datetime]:
    """What the server observed of a page load: served .. its last request, cut where another page
    of the annotator was opened."""
    end = visit.last_seen_at
    if visit.ended_at is not None and visit.ended_at < end:
        end = visit.ended_at
    return visit.started_at, max(end, visit.started_at)


def visit_server_span_ms(visit: Visit) -> float:
    start, end = visit_server_window(visit)
    return (end - start) / _MS


def server_observed(visits: Iterable[Visit]) -> timedelta:
    """The time the server observed these page loads, overlapping windows counted once."""
    total = timedelta(0)
    covered_until: datetime | None = None
    for start, end in sorted(visit_server_window(visit) for visit in visits):
        if covered_until is not None and start < covered_until:
            start = covered_until
        if end > start:
            total += end - start
        covered_until = end if covered_until is None else max(covered_until, end)
    return total


def server_observed_ms(visits: Iterable[Visit]) -> float:
    return server_observed(visits) / _MS


def observed_whole_ms(visits: Iterable[Visit]) -> int:
    """server_observed in whole ms, rounded down (the bound a submit stores as server_elapsed_ms)."""
    return server_observed(visits) // _MS


def end_where_the_next_began(visits: list[Visit], *, annotator_id: int) -> None:
    """Cut each of these page loads (of one post-edit) where the annotator's next page load, of any
    item, started, and store the cut: the one-clock rule for page loads opened side by side."""
    if not visits:
        return
    first = min(visit.started_at for visit in visits)
    later = list(
        Visit.objects.filter(post_edit__assignment__annotator_id=annotator_id, started_at__gte=first)
        .order_by("started_at", "pk")
        .values_list("started_at", "pk")
    )
    for visit in visits:
        index = bisect.bisect_right(later, (visit.started_at, visit.pk))
        following = later[index][0] if index < len(later) else None
        if following is not None and (visit.ended_at is None or following < visit.ended_at):
            visit.ended_at = following
            Visit.objects.filter(pk=visit.pk).update(ended_at=following)


@dataclass(frozen=True)
class TimeBound:
    """The bound of one post-edit's time: each page load's and all of them together (ms)."""

    visit_limits_ms: Mapping[str, float]
    total_limit_ms: float
    observed_ms: int


def time_bound(visits: Iterable[Visit], *, tolerance_ms: float) -> TimeBound:
    """Each page load to its window plus `tolerance_ms`, all of them to their union plus `tolerance_ms`
    once (page loads cannot add their shares up): what derive_effort's limits take."""
    visits = list(visits)
    observed = observed_whole_ms(visits)
    return TimeBound(
        visit_limits_ms={str(visit.page_id): visit_server_span_ms(visit) + tolerance_ms for visit in visits},
        total_limit_ms=observed + tolerance_ms,
        observed_ms=observed,
    )


def bounded_effort(
    events: Sequence[LogEvent],
    *,
    visits: Iterable[Visit],
    tolerance_ms: float,
    idle_threshold_ms: float,
    committed_compositions: Collection[int] = (),
    noop_inputs: Collection[int] = (),
) -> tuple[Effort, TimeBound]:
    """The effort of a post-edit's log, its time bounded by its page loads' windows plus
    `tolerance_ms` (time_bound): the one place the bound meets the effort definition, for the
    submit and for every recomputation."""
    bound = time_bound(visits, tolerance_ms=tolerance_ms)
    effort = derive_effort(
        events,
        idle_threshold_ms=idle_threshold_ms,
        visit_limits_ms=bound.visit_limits_ms,
        total_limit_ms=bound.total_limit_ms,
        committed_compositions=committed_compositions,
        noop_inputs=noop_inputs,
    )
    return effort, bound


def granted_tolerance_ms(post_edit: PostEdit) -> float:
    """The tolerance a stored post-edit's time was bounded with: its grant, or the whole tolerance
    for one submitted before the budget."""
    if post_edit.clock_tolerance_ms is not None:
        return post_edit.clock_tolerance_ms
    return settings.EDITLAB_CLOCK_TOLERANCE_MS


def tolerance_left_ms(clock: AnnotatorClock) -> int:
    """What is left of the annotator's tolerance (never more than the whole, never less than 0)."""
    tolerance = settings.EDITLAB_CLOCK_TOLERANCE_MS
    return max(0, min(tolerance, tolerance - clock.tolerance_used_ms))


def spend_tolerance(clock: AnnotatorClock, *, granted_ms: int, observed_ms: int, wall_ms: int) -> None:
    """Record a submit: the time beyond its server-observed time is spent, its unused observed time
    given back (up to the whole tolerance)."""
    tolerance = settings.EDITLAB_CLOCK_TOLERANCE_MS
    left = granted_ms + observed_ms - wall_ms
    clock.tolerance_used_ms = max(0, tolerance - left)
    clock.save(update_fields=["tolerance_used_ms"])
