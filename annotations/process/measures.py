"""Process measures of one post-edit from its trace (pure; definitions and sources in docs/process.md).

- Inter-key intervals (IKI): the time between consecutive actions of a page load (annotations/process/
  trace.py: keydowns, and text changes no keydown produced); never across page loads; a clock that
  runs backwards gives 0. Median and interquartile range (linear interpolation between order
  statistics, numpy's default).
- Pauses at a threshold T: the intervals >= T (count, total ms), each located where the first text
  change at or after it (in its page load) lies: within a word, between words, between sentences,
  before a revision, after a revision, or other (a run of deletions, a page load's last moves).
- Bursts at T: the characters produced between two pauses >= T (P-burst), or up to a revision
  (R-burst: a new revision episode ends the burst, whether a pause precedes it or not); a page load
  ends its last burst, a P-burst; a burst that produced no character is none. Count, and mean length
  in characters and in ms (first to last producing action).
- Revisions: the revision episodes (deletions; insertions away from the leading edge), their count
  and size in characters.
- Product/process ratio: characters of the final text over the characters the process produced
  (the start text, there before any action, plus the characters produced).
"""

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from annotations.effort import LogEvent
from annotations.process.trace import LOCATIONS, OTHER, Trace, trace_log

DEFAULT_PAUSE_THRESHOLDS_MS = (200.0, 500.0, 1000.0, 2000.0)
MAX_PAUSE_THRESHOLD_MS = 3_600_000.0  # an hour: a pause threshold above it is no pause threshold
MAX_PAUSE_THRESHOLDS = 20

# The measures of a post-edit, by name: those without a threshold, then those at a threshold T
# (named `<measure>@<T>`, T in ms).
MEASURES = (
    "actions",
    "iki_median",
    "iki_iqr",
    "iki_mean",
    "produced_chars",
    "product_process_ratio",
    "revisions",
    "revision_deletions",
    "revision_insertions",
    "revision_chars",
)
THRESHOLD_MEASURES = (
    "pause_count",
    "pause_ms",
    *(f"pause_count_{location}" for location in LOCATIONS),
    *(f"pause_ms_{location}" for location in LOCATIONS),
    "p_bursts",
    "r_bursts",
    "burst_chars",
    "burst_ms",
    "p_burst_chars",
    "p_burst_ms",
    "r_burst_chars",
    "r_burst_ms",
)


class MeasureNameError(ValueError):
    """A process measure's name (or its threshold) is not one this module computes."""


def threshold_text(threshold_ms: float) -> str:
    return f"{threshold_ms:g}"


def measure_name(measure: str, threshold_ms: float | None = None) -> str:
    return measure if threshold_ms is None else f"{measure}@{threshold_text(threshold_ms)}"


def pause_threshold(value: object, *, what: str = "pause threshold") -> float:
    """A pause threshold in ms: a finite number more than 0 and at most MAX_PAUSE_THRESHOLD_MS."""
    text = str(value).strip()
    try:
        threshold = float(text)
    except ValueError:
        raise MeasureNameError(f"{what} {text[:40]!r} is not a number of milliseconds") from None
    if not math.isfinite(threshold) or not 0 < threshold <= MAX_PAUSE_THRESHOLD_MS:
        raise MeasureNameError(
            f"{what} {text[:40]!r} must be a number of milliseconds more than 0 and at most {MAX_PAUSE_THRESHOLD_MS:.0f}"
        )
    return threshold


def pause_thresholds(text: str | Sequence[object] | None) -> tuple[float, ...]:
    """Comma-separated pause thresholds in ms (None or empty: the defaults), in increasing order; a
    MeasureNameError names the bad one (not a number, not finite, out of range, repeated, too many)."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return DEFAULT_PAUSE_THRESHOLDS_MS
    items = text.split(",") if isinstance(text, str) else list(text)
    if len(items) > MAX_PAUSE_THRESHOLDS:
        raise MeasureNameError(f"at most {MAX_PAUSE_THRESHOLDS} pause thresholds, not {len(items)}")
    values: list[float] = []
    for item in items:
        if isinstance(item, str) and not item.strip():
            raise MeasureNameError("a pause threshold is empty (two commas, or one at an end)")
        threshold = pause_threshold(item)
        if threshold in values:
            raise MeasureNameError(f"pause threshold {threshold_text(threshold)} is given twice")
        values.append(threshold)
    return tuple(sorted(values))


def parse_measure(name: str) -> tuple[str, float | None]:
    """(measure, threshold in ms or None) of a measure's name; a MeasureNameError says what is wrong."""
    measure, at, threshold = name.strip().partition("@")
    if measure in MEASURES:
        if at:
            raise MeasureNameError(f"{measure} takes no pause threshold (no @)")
        return measure, None
    if measure in THRESHOLD_MEASURES:
        if not at:
            raise MeasureNameError(f"{measure} needs a pause threshold in ms: {measure}@1000, for one")
        return measure, pause_threshold(threshold, what=f"the pause threshold of {measure}")
    raise MeasureNameError(
        f"{measure[:60]!r} is not a process measure: {', '.join(MEASURES)}, or at a threshold T (ms): "
        + ", ".join(f"{name}@T" for name in THRESHOLD_MEASURES)
    )


@dataclass(frozen=True)
class PauseMeasures:
    threshold_ms: float
    count: int
    total_ms: float
    by_location: dict[str, tuple[int, float]]  # location -> (count, total ms), every location
    p_bursts: int
    r_bursts: int
    p_burst_chars: float | None  # means over the bursts of each kind (None: no such burst)
    p_burst_ms: float | None
    r_burst_chars: float | None
    r_burst_ms: float | None
    burst_chars: float | None  # means over all bursts
    burst_ms: float | None


@dataclass(frozen=True)
class ProcessMeasures:
    actions: int
    intervals: tuple[float, ...]  # every inter-key interval, in log order
    iki_median: float | None
    iki_q1: float | None
    iki_q3: float | None
    iki_mean: float | None
    start_chars: int
    final_chars: int
    produced_chars: int
    revision_deletions: int
    revision_insertions: int
    deleted_chars: int  # by the revisions' deletions
    inserted_chars: int  # by the revisions' insertions
    pauses: tuple[PauseMeasures, ...]  # one per threshold, increasing
    replay_ok: bool

    @property
    def iki_iqr(self) -> float | None:
        return None if self.iki_q1 is None or self.iki_q3 is None else self.iki_q3 - self.iki_q1

    @property
    def revisions(self) -> int:
        return self.revision_deletions + self.revision_insertions

    @property
    def product_process_ratio(self) -> float | None:
        process = self.start_chars + self.produced_chars
        return self.final_chars / process if process else None

    def at(self, threshold_ms: float) -> PauseMeasures:
        for pauses in self.pauses:
            if pauses.threshold_ms == threshold_ms:
                return pauses
        raise KeyError(f"no pause measures at {threshold_text(threshold_ms)} ms")

    def flat(self) -> dict[str, float | None]:
        """Every measure by its name (measure_name), thresholds included."""
        values: dict[str, float | None] = {
            "actions": float(self.actions),
            "iki_median": self.iki_median,
            "iki_iqr": self.iki_iqr,
            "iki_mean": self.iki_mean,
            "produced_chars": float(self.produced_chars),
            "product_process_ratio": self.product_process_ratio,
            "revisions": float(self.revisions),
            "revision_deletions": float(self.revision_deletions),
            "revision_insertions": float(self.revision_insertions),
            "revision_chars": float(self.deleted_chars + self.inserted_chars),
        }
        for pauses in self.pauses:
            at = threshold_text(pauses.threshold_ms)
            values[f"pause_count@{at}"] = float(pauses.count)
            values[f"pause_ms@{at}"] = pauses.total_ms
            for location, (count, total) in pauses.by_location.items():
                values[f"pause_count_{location}@{at}"] = float(count)
                values[f"pause_ms_{location}@{at}"] = total
            values[f"p_bursts@{at}"] = float(pauses.p_bursts)
            values[f"r_bursts@{at}"] = float(pauses.r_bursts)
            for name in ("burst_chars", "burst_ms", "p_burst_chars", "p_burst_ms", "r_burst_chars", "r_burst_ms"):
                values[f"{name}@{at}"] = getattr(pauses, name)
        return values


def quantile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values, interpolated linearly between order statistics (numpy's default)."""
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


Step = tuple[float, str, bool, float, tuple[tuple[bool, int], ...]]


def _steps(trace: Trace) -> list[Step]:
    """Per action: (its gap, -1.0 for a page load's first action; where the pause before it lies;
    whether that change starts a revision; its time; its changes as (new revision, produced))."""
    steps: list[list] = []
    pending: list[list] = []  # actions waiting for their page load's next change
    for action in trace.actions:
        if action.gap_ms is None:  # a new page load: the earlier ones' last moves lead to no change
            pending = []
        changes = tuple((change.new_episode, change.produced) for change in action.changes)
        step = [-1.0 if action.gap_ms is None else action.gap_ms, OTHER, False, action.t_ms, changes]
        steps.append(step)
        pending.append(step)
        if changes:
            first = action.changes[0]
            for waiting in pending:
                waiting[1], waiting[2] = first.location, first.new_episode
            pending = []
    return [tuple(step) for step in steps]


def _pauses_at(steps: list[Step], threshold: float) -> PauseMeasures:
    by_location = {location: [0, 0.0] for location in LOCATIONS}
    count, total = 0, 0.0
    bursts: list[tuple[bool, int, float]] = []  # (ended by a revision, characters, ms)
    chars, first_t, last_t = 0, 0.0, 0.0
    for gap, location, starts_revision, t_ms, changes in steps:
        if gap < 0.0 or gap >= threshold:
            revision = False
            if gap >= 0.0:
                count += 1
                total += gap
                cell = by_location[location]
                cell[0] += 1
                cell[1] += gap
                revision = starts_revision
            if chars > 0:
                bursts.append((revision, chars, last_t - first_t))
            chars = 0
        for new_revision, produced in changes:
            if new_revision:
                if chars > 0:
                    bursts.append((True, chars, last_t - first_t))
                chars = 0
            if produced:
                if chars <= 0:
                    chars, first_t = 0, t_ms
                chars += produced
                last_t = t_ms
    if chars > 0:
        bursts.append((False, chars, last_t - first_t))
    p = [(n, ms) for revision, n, ms in bursts if not revision]
    r = [(n, ms) for revision, n, ms in bursts if revision]
    return PauseMeasures(
        threshold_ms=threshold,
        count=count,
        total_ms=total,
        by_location={location: (int(cell[0]), float(cell[1])) for location, cell in by_location.items()},
        p_bursts=len(p),
        r_bursts=len(r),
        p_burst_chars=_mean([n for n, _ in p]),
        p_burst_ms=_mean([ms for _, ms in p]),
        r_burst_chars=_mean([n for n, _ in r]),
        r_burst_ms=_mean([ms for _, ms in r]),
        burst_chars=_mean([n for _, n, _ in bursts]),
        burst_ms=_mean([ms for _, _, ms in bursts]),
    )


def measures_of_trace(trace: Trace, *, thresholds_ms: Iterable[float] = DEFAULT_PAUSE_THRESHOLDS_MS) -> ProcessMeasures:
    intervals = tuple(action.gap_ms for action in trace.actions if action.gap_ms is not None)
    ordered = sorted(intervals)
    steps = _steps(trace)
    deletions = [change for change in trace.changes if change.deletion and change.new_episode]
    insertions = [change for change in trace.changes if not change.deletion and change.new_episode]
    return ProcessMeasures(
        actions=len(trace.actions),
        intervals=intervals,
        iki_median=quantile(ordered, 0.5) if ordered else None,
        iki_q1=quantile(ordered, 0.25) if ordered else None,
        iki_q3=quantile(ordered, 0.75) if ordered else None,
        iki_mean=_mean(intervals),
        start_chars=len(trace.start_text),
        final_chars=len(trace.final_text),
        produced_chars=sum(change.produced for change in trace.changes),
        revision_deletions=len(deletions),
        revision_insertions=len(insertions),
        deleted_chars=sum(change.size for change in trace.changes if change.deletion),
        inserted_chars=sum(change.size for change in trace.changes if not change.deletion and change.revision),
        pauses=tuple(_pauses_at(steps, threshold) for threshold in sorted(set(thresholds_ms))),
        replay_ok=trace.replay_ok,
    )


def process_measures(
    start_text: str, events: Iterable[LogEvent], *, thresholds_ms: Iterable[float] = DEFAULT_PAUSE_THRESHOLDS_MS
) -> ProcessMeasures:
    """The process measures of one post-edit's log (any order) started from `start_text`."""
    return measures_of_trace(trace_log(start_text, events), thresholds_ms=thresholds_ms)
