"""Process measures of a selection's post-edits, computed from their stored event logs
(annotations.process; docs/process.md), one post-edit's log at a time.

Every post-edit with a stored log counts, live or imported (an imported study that carries its
log); post-edits without one have no process measures (they are never given invented values).
Logs are read a chunk of post-edits at a time (two queries a chunk), so memory holds one chunk's
logs, never the whole selection's.
"""

import math
from collections.abc import Iterable, Iterator, Sequence

import pandas as pd

from annotations.editing.logs import stored_logs
from annotations.models import PostEdit, start_text_of_post_edit
from annotations.process import (
    DEFAULT_PAUSE_THRESHOLDS_MS,
    ProcessMeasures,
    measure_name,
    parse_measure,
    process_measures,
)

CHUNK = 100  # post-edits whose logs are read together (a chunk's logs are in memory at once)


def process_measures_stream(
    *, post_edit_ids: Iterable[int], thresholds_ms: Sequence[float] = DEFAULT_PAUSE_THRESHOLDS_MS
) -> Iterator[tuple[int, ProcessMeasures]]:
    """(post_edit_id, its process measures) of every post-edit with a stored log, by id, a chunk of logs
    at a time."""
    ids = sorted(set(post_edit_ids))
    for low in range(0, len(ids), CHUNK):
        chunk = ids[low : low + CHUNK]
        starts = dict(
            PostEdit.objects.filter(id__in=chunk).annotate(start=start_text_of_post_edit()).values_list("id", "start")
        )
        logs = stored_logs(chunk)
        for post_edit_id in chunk:
            log = logs.pop(post_edit_id, None)
            if log:
                yield post_edit_id, process_measures(starts[post_edit_id], log, thresholds_ms=thresholds_ms)


def process_frame(
    *,
    post_edit_ids: Iterable[int],
    names: Sequence[str] | None = None,
    thresholds_ms: Sequence[float] = DEFAULT_PAUSE_THRESHOLDS_MS,
) -> pd.DataFrame:
    """One row per post-edit with a stored log (indexed by post_edit_id), one float column per measure
    name (annotations.process.measure_name; all of them at `thresholds_ms` when names is None); NaN
    where a measure is undefined (a median without intervals, a mean without bursts)."""
    rows: dict[int, dict[str, float | None]] = {}
    for post_edit_id, measures in process_measures_stream(post_edit_ids=post_edit_ids, thresholds_ms=thresholds_ms):
        values = measures.flat()
        rows[post_edit_id] = values if names is None else {name: values[name] for name in names}
    columns = list(names) if names is not None else None
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=columns, dtype=float)
    frame.index.name = "post_edit_id"
    return frame


def target_family(target: str, thresholds_ms: Sequence[float]) -> list[str]:
    """A process target's columns: the target, then (a measure at a threshold) the same measure at every
    pause threshold of the selection that is not the target's."""
    measure, threshold = parse_measure(target)
    if threshold is None:
        return [target]
    others = [measure_name(measure, other) for other in thresholds_ms if other != threshold]
    return [target, *others]


def process_target_columns(
    frame: pd.DataFrame, *, target: str, thresholds_ms: Sequence[float]
) -> tuple[list[str], list[str]]:
    """Add a process target's columns (target_family) to a selection's frame (by its post_edit_id); the
    columns and the messages for the report: how many post-edits have no log, or a log that does not replay."""
    names = target_family(target, thresholds_ms)
    thresholds = sorted({parse_measure(name)[1] or 0.0 for name in names} - {0.0})
    values: dict[int, dict[str, float | None]] = {}
    diverged = 0
    for post_edit_id, measures in process_measures_stream(
        post_edit_ids=frame["post_edit_id"].tolist(), thresholds_ms=thresholds or DEFAULT_PAUSE_THRESHOLDS_MS
    ):
        flat = measures.flat()
        values[post_edit_id] = {name: flat[name] for name in names}
        diverged += not measures.replay_ok
    table = pd.DataFrame.from_dict(values, orient="index", columns=names, dtype=float)
    for name in names:
        frame[name] = frame["post_edit_id"].map(table[name]).astype(float).to_numpy()
    messages = [f"{target} computed from the event logs (docs/process.md)"]
    missing = len(frame) - len(values)
    if missing:
        messages.append(
            f"{missing} of {len(frame)} post-edits have no event log (imported without one, or never logged): "
            f"no {target}, left out"
        )
    if diverged:
        messages.append(f"{diverged} event logs do not replay exactly (flagged): their {target} is kept")
    return names, messages


def by_threshold(frame: pd.DataFrame, *, target: str, thresholds_ms: Sequence[float]) -> list[dict]:
    """A threshold target's measure at every pause threshold, per condition (all post-edits first, as
    condition ""): one row per condition with n and the mean at each threshold; empty for a target
    without a threshold."""
    if parse_measure(target)[1] is None:
        return []
    names = target_family(target, thresholds_ms)
    columns = sorted(names, key=lambda name: parse_measure(name)[1] or 0.0)
    groups = [("", frame)]
    if "condition" in frame:
        conditioned = frame[frame["condition"] != ""]
        groups += [(str(name), rows) for name, rows in conditioned.groupby("condition", sort=True)]
    rows = []
    for condition, rows_of in groups:
        measured = rows_of.dropna(subset=[target])
        row: dict = {"condition": condition, "n": len(measured)}
        for name in columns:
            mean = float(measured[name].mean())
            row[name] = mean if math.isfinite(mean) else None
        rows.append(row)
    return rows
