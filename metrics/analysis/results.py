"""What an analysis holds: each metric's figures and the whole analysis, with its JSON.

Pure (no Django); pipeline.py fills them in.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from metrics.analysis.bootstrap import BootstrapDifference
from metrics.analysis.common import CVScore, Settings, jsonable
from metrics.analysis.correlation import Correlation, WilliamsTest
from metrics.analysis.effort_model import EffortModel
from metrics.analysis.mixed import MixedModel
from metrics.analysis.outliers import Outliers


@dataclass
class KnnScores:
    """One metric's KNN figures for one target."""

    published: float
    tie_averaged: float
    cv: dict[str, CVScore]
    row_orders: CVScore | None = None


UNITS = {
    "metrics.*.mixed.coefficient": "standardised slope: target sds per metric sd (both standardised)",
    "effort_model.coefficients": "target units per input sd (inputs standardised, target not)",
    "metrics.*.knn_r2_row_orders": "published-protocol 5-NN R² over shuffled row orders (mean, sd, each order)",
}


@dataclass
class MetricResult:
    name: str
    direction: str
    n: int
    dropped: int
    pearson: float | None = None
    pearson_p: float | None = None
    pearson_ci: tuple[float, float] | None = None
    pearson_oriented: float | None = None
    spearman: float | None = None
    spearman_p: float | None = None
    kendall: float | None = None
    kendall_p: float | None = None
    pearson_per_annotator: dict[str, float | None] = field(default_factory=dict)
    per_annotator: dict[str, Correlation] = field(default_factory=dict)
    knn_r2: float | None = None  # the published protocol, scikit-learn's own objects
    knn_r2_tie_averaged: float | None = None  # the same split, ties at the K-th distance averaged
    knn_r2_row_orders: CVScore | None = None  # the published protocol on ROW_ORDERS shuffled row orders
    knn_r2_cv: CVScore | None = None  # tie-averaged, repeated K-fold: random
    knn_r2_cv_item: CVScore | None = None  # grouped by item
    knn_r2_cv_annotator: CVScore | None = None  # grouped by annotator
    cv_item_gap: float | None = None  # knn_r2_cv minus knn_r2_cv_item (means)
    cv_optimistic: bool | None = None  # that gap above settings.cv_gap_flag
    williams_vs_best: WilliamsTest | None = None
    bootstrap_vs_best: BootstrapDifference | None = None
    mixed: MixedModel | None = None
    messages: list[str] = field(default_factory=list)


@dataclass
class Analysis:
    target: str
    settings: Settings
    n_rows: int
    n_used: int
    dropped_target: int
    annotators: list[str]
    items: int  # distinct items among the rows used (0 without an item column)
    metrics: dict[str, MetricResult]
    best_metric: str | None
    matrix: dict
    effort_model: EffortModel | None
    messages: list[str]
    best_by: str = "highest oriented pooled Pearson r; similarity metrics negated"
    outliers: Outliers | None = None  # the outlier rule on the target, and the key figures without them
    units: dict[str, str] = field(default_factory=lambda: dict(UNITS))

    def to_dict(self) -> dict:
        """Plain JSON types: NaN/inf become None, arrays are left out."""
        data = asdict(self)
        if data["effort_model"] is not None:
            for key in ("predicted", "measured", "index"):
                data["effort_model"].pop(key, None)
        if data["outliers"] is not None:
            data["outliers"].pop("mask", None)
        return jsonable(data)
