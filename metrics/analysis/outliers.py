"""Which edits have an implausibly large effort, and what the key figures are without them.

Pure: numpy (no Django). The rule (README, "Outliers"): the modified z-score of Iglewicz and Hoaglin
(1993, "How to Detect and Handle Outliers", ASQC), on the log scale,

    z = 0.6745 · (log(1 + y) − median) / MAD,    MAD = median |log(1 + y) − median|,

and an edit is flagged when z > 3.5 (their recommended cut-off; 0.6745 · MAD⁻¹ is 1 / (1.4826 · MAD),
the MAD scaled to a normal sd). Upper side only: an effort is bounded below by 0, and an edit left
unchanged legitimately costs no keys, while one forgotten open window (hours of wall time) dominates
every sum of squares. log(1 + y), not log(y), so a 0 has a logarithm. When the MAD is 0 (more than half
the values equal) nothing is flagged and a message says so.

Flagged edits are not removed: the analysis is computed on every edit, and the key figures are
computed again without the flagged ones and shown beside (pipeline.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

THRESHOLD = 3.5
CONSISTENCY = 0.6745  # the 0.75 quantile of the standard normal: MAD / 0.6745 estimates the sd
RULE = (
    "modified z-score (Iglewicz & Hoaglin 1993) of log(1 + target) above 3.5: "
    "0.6745 · (log(1 + y) − median) / MAD > 3.5, upper side only"
)
LARGEST_SHOWN = 5


@dataclass
class Outliers:
    """The rule's outcome on one target's values, and the key figures without the flagged edits."""

    rule: str
    threshold: float
    n: int  # edits checked (those with a target value)
    flagged: int
    upper_bound: float | None  # in the target's units: values above it are flagged
    median: float | None  # of the target, in its units
    largest: list[float] = field(default_factory=list)  # the largest flagged values, largest first
    # metric -> {pearson, spearman, knn_r2, knn_r2_tie_averaged, knn_r2_cv_mean, knn_r2_cv_item_mean}
    without: dict[str, dict[str, float | None]] = field(default_factory=dict)
    effort_model_r2_cv_without: float | None = None
    cv_repeats_without: int | None = None  # the CV repeats of the figures without (fewer on large selections)
    best_metric_without: str | None = None
    messages: list[str] = field(default_factory=list)
    mask: np.ndarray | None = field(default=None, repr=False)  # per checked edit: flagged (not in the JSON)


def flag_outliers(y: np.ndarray, *, threshold: float = THRESHOLD) -> Outliers:
    """The rule applied to finite, non-negative target values y (a negative value is never flagged)."""
    y = np.asarray(y, dtype=float)
    outliers = Outliers(rule=RULE, threshold=threshold, n=int(y.size), flagged=0, upper_bound=None, median=None)
    if y.size == 0:
        outliers.mask = np.zeros(0, dtype=bool)
        return outliers
    logs = np.log1p(np.clip(y, 0.0, None))
    centre = float(np.median(logs))
    mad = float(np.median(np.abs(logs - centre)))
    outliers.median = float(np.median(y))
    if mad == 0:
        outliers.mask = np.zeros(y.size, dtype=bool)
        outliers.messages.append("more than half the target values are equal (MAD 0): no outlier rule applies")
        return outliers
    z = CONSISTENCY * (logs - centre) / mad
    mask = z > threshold
    outliers.mask = mask
    outliers.flagged = int(mask.sum())
    outliers.upper_bound = float(np.expm1(centre + threshold * mad / CONSISTENCY))
    outliers.largest = [float(v) for v in np.sort(y[mask])[::-1][:LARGEST_SHOWN]]
    return outliers
