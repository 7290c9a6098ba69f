"""A selection's data: its post-edits and metric values as one data frame, loaded once and cached.

Results are kept in a small per-process LRU under a key that includes a fingerprint of the
selection's data (post-edits and metric values: count and latest change), so a recomputed metric
or a new submission is never served stale, and the page's plots (one request each) reuse one
analysis. Per process, not Django's cache: the project's default cache is the database, and a
report holds a data frame (megabytes for 100,000 edits) that is not worth pickling into it;
another app process simply recomputes.
"""

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from django.db.models import Count, Max

from annotations.models import DEFINITION_VERSION
from metrics.analysis import EDITED_LENGTH, ORIGINAL_LENGTH
from metrics.analysis.conditions import CONDITION, WORDS
from metrics.analysis_options import Selection
from metrics.models import MetricValue
from metrics.selectors import (
    TARGETS,
    active_times,
    flagged_count,
    metric_column,
    post_edit_frame,
    post_edit_queryset,
    practice_count,
    stored_metric_names,
)
from metrics.selectors_process import process_target_columns

CACHE_ENTRIES = 8
# Columns kept beside the analysis for plots and downloads (texts are dropped: big).
KEPT_COLUMNS = ("post_edit_id", "external_id", "annotator")
# Kept for the per-document summary and the live-vs-imported comparison.
DESIGN_KEPT_COLUMNS = ("document", "practice", "origin")


def fingerprint(selection: Selection) -> str:
    post_edits = post_edit_queryset(**selection.filters)
    edits = post_edits.aggregate(n=Count("id"), changed=Max("updated"))
    values = MetricValue.objects.filter(post_edit__in=post_edits.values("id"), variant=selection.variant).aggregate(
        n=Count("id"), changed=Max("computed_at")
    )
    return json.dumps([edits["n"], str(edits["changed"]), values["n"], str(values["changed"])])


def cache_key(kind: str, *parts) -> str:
    raw = json.dumps([kind, *parts], sort_keys=True, default=str)
    return f"editlab:{kind}:" + hashlib.sha256(raw.encode()).hexdigest()


def _directions(metrics: Sequence[str]) -> dict[str, str]:
    from metrics.text import METRICS

    return {name: METRICS[name].direction for name in metrics if name in METRICS}


_cache: OrderedDict[str, object] = OrderedDict()
_cache_lock = threading.Lock()


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def cached(key: str, compute, use_cache: bool):
    if use_cache:
        with _cache_lock:
            if key in _cache:
                _cache.move_to_end(key)
                return _cache[key]
    value = compute()
    if use_cache:
        with _cache_lock:
            _cache[key] = value
            while len(_cache) > CACHE_ENTRIES:
                _cache.popitem(last=False)
    return value


@dataclass
class SelectionData:
    """The selection's rows, target-independent: ids, annotator, the four target fields,
    text lengths and one column per metric of the chosen variant (plain names)."""

    frame: pd.DataFrame
    metrics: list[str]
    directions: dict[str, str]
    messages: list[str]
    flagged: int = 0
    practice: int = 0  # practice post-edits in the selection, whether left out or not


def selection_data(
    *, selection: Selection, use_cache: bool = True, known_fingerprint: str | None = None
) -> SelectionData:
    """The selection's data frame, from the cache when its data has not changed. `known_fingerprint`: the
    selection's fingerprint, when the caller has just read it (a report's key holds it): not read twice."""
    where = {**selection.describe(), "target": None, "target_column": None, "pause_thresholds_ms": None}
    if selection.target_column not in TARGETS.values():  # a process measure: its columns are part of the data
        where.update(target=selection.target, pause_thresholds_ms=selection.pause_thresholds_ms)
    key = cache_key("selection", where, known_fingerprint or fingerprint(selection))
    return cached(key, lambda: _load(selection), use_cache)


STORED_ACTIVE = "stored_active_ms"  # the stored value, kept when the selection's active_ms is recomputed


def stored_current(rows: pd.DataFrame) -> pd.Series:
    """Rows whose stored active time was derived under the current effort definition."""
    return (rows["definition_version"] == DEFINITION_VERSION) & rows[STORED_ACTIVE].notna()


def _load(selection: Selection) -> SelectionData:
    filters = selection.filters
    names = stored_metric_names(post_edit_queryset(**filters))
    # The texts' lengths and words, not the texts: counted as the rows are read (analysis.word_counts' count).
    frame = post_edit_frame(**filters, metrics=names, variants=(selection.variant,), texts=False)
    frame = frame.rename(columns={metric_column(name, selection.variant): name for name in names})
    frame[CONDITION] = frame[CONDITION].fillna("").astype(str)
    messages = []
    empty = [name for name in names if frame[name].isna().all()]
    if empty:
        messages.append(f"no {selection.variant} values for {', '.join(empty)} in this selection: left out")
    if not names:
        messages.append("no metric values are stored for this selection yet: compute them on the Metrics page")
    metrics = [name for name in names if name not in empty]
    flagged = flagged_count(post_edit_queryset(**{**filters, "exclude_flagged": False}))
    if flagged and selection.exclude_flagged:
        messages.append(f"{flagged} flagged post-edit{'s' if flagged > 1 else ''} left out (exclude flagged)")
    elif flagged:
        messages.append(
            f"{flagged} of {len(frame)} post-edits in this selection are flagged (clipped time, replay mismatch, "
            "event gap, uncorroborated keys, keys beyond the human rate, ...): they are included; exclude flagged "
            "leaves them out"
        )
    practice = practice_count(post_edit_queryset(**{**filters, "include_practice": True}))
    if practice and not selection.include_practice:
        messages.append(
            f"{practice} post-edit{'s' if practice > 1 else ''} of practice items left out (include practice keeps them)"
        )
    frame[STORED_ACTIVE] = frame["active_ms"]
    if selection.idle_threshold_s is not None:
        messages += _recompute_active(frame, selection.idle_threshold_s)
    process_columns: list[str] = []
    if selection.target_column not in TARGETS.values():
        process_columns, process_messages = process_target_columns(
            frame, target=selection.target, thresholds_ms=selection.pause_thresholds_ms
        )
        messages += process_messages
    kept = frame[
        [
            *KEPT_COLUMNS,
            *DESIGN_KEPT_COLUMNS,
            *TARGETS.values(),
            STORED_ACTIVE,
            "definition_version",
            ORIGINAL_LENGTH,
            EDITED_LENGTH,
            CONDITION,
            WORDS,
            *process_columns,
            *metrics,
        ]
    ]
    return SelectionData(
        frame=kept.copy(),
        metrics=metrics,
        directions=_directions(metrics),
        messages=messages,
        flagged=flagged,
        practice=practice,
    )


def _recompute_active(frame: pd.DataFrame, seconds: float) -> list[str]:
    """Replace the stored active time by the one recomputed from each event log at `seconds`; post-edits
    without a log get none (they are counted, never given an invented value)."""
    times = active_times(post_edit_ids=frame["post_edit_id"].tolist(), thresholds_s=[seconds])[seconds]
    frame["active_ms"] = frame["post_edit_id"].map(times).astype(float).to_numpy()
    missing = int(frame["active_ms"].isna().sum())
    messages = [f"active time recomputed from the event logs with an idle threshold of {seconds:g} s"]
    if missing:
        messages.append(
            f"{missing} of {len(frame)} post-edits have no event log (imported from a finished study, or never "
            f"logged): no active time at {seconds:g} s, left out"
        )
    return messages
