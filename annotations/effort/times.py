"""Effort: the timeline of a post-edit's page loads, and the times of each (wall, active,
reading, pauses; the times of the definition in annotations/effort/__init__.py; pure)."""

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise

from annotations.log_event import LogEvent

INTERACTION_KINDS = frozenset(
    {
        "keydown",
        "beforeinput",
        "input",
        "paste",
        "cut",
        "copy",
        "mousedown",
        "compositionstart",
        "compositionupdate",
        "compositionend",
    }
)
PAUSE_THRESHOLDS_MS = (300, 1000, 2000)

Clock = tuple[float, float, float]  # a page load's (offset on the timeline, its start, its bounded span)


def visit_clocks(events: Iterable[LogEvent], spans: Mapping[str, float] | None = None) -> dict[str, Clock]:
    """Each page load's place on the post-edit's timeline: page loads one after another in order of their
    first event, each as long as its bounded span (spans, by page id; its whole span when not given)."""
    clocks: dict[str, Clock] = {}
    offset = 0.0
    for visit in split_visits(events):
        start = visit_start(visit)
        span = max(0.0, max(event.t_ms for event in visit) - start)
        if spans is not None:
            span = min(span, spans.get(visit[0].visit, span))
        clocks[visit[0].visit] = (offset, start, span)
        offset += span
    return clocks


@dataclass(frozen=True)
class VisitTimes:
    wall: float
    active: float
    reading: float
    clipped: float
    edited: bool
    pauses: tuple[float, ...]  # the active time between consecutive keydowns


def split_visits(events: Iterable[LogEvent]) -> list[list[LogEvent]]:
    """Events grouped by page load, visits in order of their first event (seq order inside)."""
    visits: dict[str, list[LogEvent]] = {}
    for event in events:
        visits.setdefault(event.visit, []).append(event)
    return list(visits.values())


def visit_start(visit: list[LogEvent]) -> float:
    for event in visit:
        if event.kind == "load":
            return event.t_ms
    return visit[0].t_ms


def visit_times(visit: list[LogEvent], *, idle_threshold_ms: float, limit_ms: float | None) -> VisitTimes:
    """wall/active/reading/pauses of one page load (events in seq order), its span cut to limit_ms."""
    start = visit_start(visit)
    end = max(event.t_ms for event in visit)
    span = max(0.0, end - start)
    wall = span if limit_ms is None else min(span, max(0.0, limit_ms))
    cutoff = start + wall

    active = 0.0
    hidden = False
    unfocused = False
    # The active time up to each keydown: a pause is the difference between two of them.
    active_at_keydowns = [0.0] if visit[0].kind == "keydown" else []
    for before, after in pairwise(visit):
        if before.kind in ("load", "visibility"):
            hidden = before.state == "hidden"
        elif before.kind in ("blur", "focus") and before.source != "textarea":
            unfocused = before.kind == "blur"
        elif before.kind in INTERACTION_KINDS:
            hidden = unfocused = False
        low, high = max(before.t_ms, start), min(after.t_ms, cutoff)
        if high > low and not hidden and not unfocused and after.t_ms - before.t_ms <= idle_threshold_ms:
            active += high - low
        if after.kind == "keydown":
            active_at_keydowns.append(active)

    first_input = next((event for event in visit if event.kind == "input"), None)
    if first_input is None:
        reading = wall
    else:
        reading = min(max(first_input.t_ms, start), cutoff) - start
    return VisitTimes(
        wall=wall,
        active=min(active, wall),  # the pieces of the span, summed in floating point, may exceed it by an ulp
        reading=reading,
        clipped=span - wall,
        edited=first_input is not None,
        pauses=tuple(later - earlier for earlier, later in pairwise(active_at_keydowns)),
    )


def count_pauses(pauses: Iterable[float]) -> dict[str, int]:
    totals = {f"pauses_{limit}_{what}": 0.0 for limit in PAUSE_THRESHOLDS_MS for what in ("count", "ms")}
    for pause in pauses:
        for limit in PAUSE_THRESHOLDS_MS:
            if pause >= limit:
                totals[f"pauses_{limit}_count"] += 1
                totals[f"pauses_{limit}_ms"] += pause
    return {name: whole_ms(value) for name, value in totals.items()}


def whole_ms(value: float) -> int:
    return int(math.floor(value + 0.5))
