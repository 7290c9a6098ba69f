"""Live against imported effort on the same items: a published study re-run in editlab.

Pure: numpy and pandas (no Django). The ORM side (metrics.reports) builds the frame: one row per
post-edit with its origin (`live` or `imported`), item, effort fields, target and metric values; for a
copied project, the copy's live post-edits beside its source's imported ones, matched by external id.

Only the shared items count: those with at least one post-edit of each origin. For each effort field,
on the shared items with a value under both origins:
- n items, the mean effort of each origin (the mean over items of the item's mean, so an item edited by
  three live annotators weighs as much as one edited by one);
- the paired difference (live minus imported, per item), its mean and a percentile bootstrap CI from
  resampling items with replacement (settings' resamples, seed and confidence).
Per metric, Pearson r with the target computed separately on each origin's post-edits of the shared
items (metrics.analysis.correlation.correlate: p and Fisher CI). Practice items are left out unless
asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from metrics.analysis.common import DEFAULT_SETTINGS, ITEM, Settings, jsonable
from metrics.analysis.correlation import correlate
from metrics.analysis.documents import EFFORT_COLUMNS, PRACTICE, note_practice

LIVE = "live"
IMPORTED = "imported"
ORIGIN = "origin"


@dataclass
class OriginEffort:
    n_items: int  # shared items with a value under both origins
    live_mean: float | None
    imported_mean: float | None
    difference: float | None  # mean over items of (live item mean - imported item mean)
    ci: tuple[float, float] | None  # percentile bootstrap over items


@dataclass
class OriginCorrelation:
    n: int
    pearson: float | None
    pearson_p: float | None
    pearson_ci: tuple[float, float] | None


@dataclass
class OriginComparison:
    target: str
    shared_items: int
    live_items: int  # items with a live post-edit (shared or not)
    imported_items: int
    live_post_edits: int  # on the shared items
    imported_post_edits: int
    efforts: dict[str, OriginEffort]
    correlations: dict[str, dict[str, OriginCorrelation]]  # metric -> origin -> r with the target
    resamples: int
    seed: int
    confidence: float
    practice_left_out: int = 0
    source_project: str | None = None  # for a copy: the project whose imported post-edits are compared
    messages: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return jsonable(asdict(self))

    def note_practice_left_out(self, n: int) -> None:
        """Practice post-edits left out before the frame was built (the ORM side's filter)."""
        self.practice_left_out = n
        note_practice(self.messages, n)


def compare_origins(
    frame: pd.DataFrame,
    *,
    target: str,
    metrics: Sequence[str] = (),
    efforts: Sequence[str] = EFFORT_COLUMNS,
    include_practice: bool = False,
    settings: Settings = DEFAULT_SETTINGS,
    item: str = ITEM,
    origin: str = ORIGIN,
) -> OriginComparison:
    """Live against imported on the shared items; see the module's docstring."""
    missing = [c for c in (origin, item, target, *efforts, *metrics) if c not in frame]
    if missing:
        raise ValueError(f"the frame has no column {missing[0]!r}")
    rows, left_out = _without_practice(frame) if not include_practice else (frame, 0)
    rows = rows[rows[origin].isin([LIVE, IMPORTED])]
    items = {name: set(rows.loc[rows[origin] == name, item].astype(str)) for name in (LIVE, IMPORTED)}
    shared = items[LIVE] & items[IMPORTED]
    on_shared = rows[rows[item].astype(str).isin(shared)]
    by_origin = {name: on_shared[on_shared[origin] == name] for name in (LIVE, IMPORTED)}
    comparison = OriginComparison(
        target=target,
        shared_items=len(shared),
        live_items=len(items[LIVE]),
        imported_items=len(items[IMPORTED]),
        live_post_edits=len(by_origin[LIVE]),
        imported_post_edits=len(by_origin[IMPORTED]),
        efforts={},
        correlations={},
        resamples=settings.bootstrap_resamples,
        seed=settings.seed,
        confidence=settings.confidence,
        practice_left_out=left_out,
    )
    note_practice(comparison.messages, left_out)
    if not shared:
        comparison.messages.append("no item has both a live and an imported post-edit: nothing to compare")
        return comparison
    for column in dict.fromkeys([*efforts, target]):
        comparison.efforts[column] = _paired_effort(on_shared, column, item=item, origin=origin, settings=settings)
    for name in metrics:
        comparison.correlations[name] = {
            key: _correlation(part, name, target, settings.confidence) for key, part in by_origin.items()
        }
    small = min(len(part) for part in by_origin.values())
    if metrics and small < settings.min_edits:
        comparison.messages.append(
            f"one origin has only {small} post-edits on the shared items: its Pearson r is unreliable"
        )
    return comparison


def _without_practice(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    if PRACTICE not in frame:
        return frame, 0
    flags = frame[PRACTICE].fillna(False).astype(bool).to_numpy()
    return frame[~flags], int(flags.sum())


def _item_means(rows: pd.DataFrame, column: str, *, item: str, origin: str) -> pd.DataFrame:
    """Items (index) x origins (columns): the mean of the item's post-edits with a value."""
    values = pd.to_numeric(rows[column], errors="coerce").astype(float).replace([np.inf, -np.inf], np.nan)
    data = pd.DataFrame({"item": rows[item].astype(str), "origin": rows[origin], "value": values}).dropna()
    means = data.groupby(["item", "origin"])["value"].mean().unstack("origin")
    return means.reindex(columns=[LIVE, IMPORTED]).dropna()


def _paired_effort(rows: pd.DataFrame, column: str, *, item: str, origin: str, settings: Settings) -> OriginEffort:
    means = _item_means(rows, column, item=item, origin=origin)
    if means.empty:
        return OriginEffort(n_items=0, live_mean=None, imported_mean=None, difference=None, ci=None)
    live, imported = means[LIVE].to_numpy(float), means[IMPORTED].to_numpy(float)
    differences = live - imported
    return OriginEffort(
        n_items=len(means),
        live_mean=float(live.mean()),
        imported_mean=float(imported.mean()),
        difference=float(differences.mean()),
        ci=bootstrap_mean_ci(differences, settings=settings),
    )


def bootstrap_mean_ci(values: np.ndarray, *, settings: Settings = DEFAULT_SETTINGS) -> tuple[float, float] | None:
    """Percentile CI of the mean from resampling the values with replacement; None for fewer than two."""
    if values.size < 2:
        return None
    rng = np.random.default_rng(settings.seed)
    draws = rng.integers(0, values.size, size=(settings.bootstrap_resamples, values.size))
    means = values[draws].mean(axis=1)
    tail = (1 - settings.confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def _correlation(rows: pd.DataFrame, metric: str, target: str, confidence: float) -> OriginCorrelation:
    x = pd.to_numeric(rows[metric], errors="coerce").astype(float).to_numpy()
    y = pd.to_numeric(rows[target], errors="coerce").astype(float).to_numpy()
    present = np.isfinite(x) & np.isfinite(y)
    result = correlate(x[present], y[present], confidence)
    return OriginCorrelation(
        n=result.n, pearson=result.pearson, pearson_p=result.pearson_p, pearson_ci=result.pearson_ci
    )


def origin_rows(comparison: OriginComparison) -> list[dict]:
    """One flat row per effort field (for the analyze command's CSV and table)."""
    return [
        jsonable(
            {
                "effort": column,
                "n_items": effort.n_items,
                "live_mean": effort.live_mean,
                "imported_mean": effort.imported_mean,
                "difference": effort.difference,
                "ci_low": effort.ci[0] if effort.ci else None,
                "ci_high": effort.ci[1] if effort.ci else None,
            }
        )
        for column, effort in comparison.efforts.items()
    ]
