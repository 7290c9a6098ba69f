"""Which text metric predicts post-editing effort: correlations, KNN regression, an effort model.

Pure: numpy, scipy, pandas and scikit-learn only (no Django). The ORM side
(metrics.reports, the analyze command, the API) builds the frame and calls `analyze`.

Conventions (documented in the README, "Analysis"):
- Pearson r with a two-sided p-value and a 95% confidence interval from Fisher's z
  (tanh(atanh(r) +- z_0.975 / sqrt(n - 3))); Spearman rho with its two-sided p-value.
- Signs are oriented by each metric's direction: a "similarity" metric (higher = less
  work) is negated for choosing the best metric and for Williams's test, so a good
  similarity metric competes with its (positive) oriented r. `pearson` itself keeps
  the raw sign; `pearson_oriented` is the oriented one.
- KNN regression: K nearest neighbours on the single raw metric value (a 1-D neighbour
  set does not change under standardisation, so raw and standardised agree). Published
  protocol: one random train/test split (80/20, seed 42, sklearn's train_test_split),
  R² on the test part. Repeated K-fold: sklearn's RepeatedKFold(5 folds, 10 repeats,
  seed 42); a repeat's R² is the mean of its folds' R² (as cross_val_score), and we
  report the mean and the sample sd (ddof=1) over repeats.
  Neighbours come from the sorted training values (prefix counts and a short binary
  search, vectorised over the queries), not a tree: exact, one sort per metric. When several training points tie at the K-th distance, they
  share the remaining weight equally -- the average over every way of breaking the tie
  -- so the prediction does not depend on row order; without ties it is exactly
  sklearn's KNeighborsRegressor(K).
- Williams's test (Steiger 1980, eq. 7) for two dependent correlations sharing the
  target, on the rows where the target and both metrics are present; one-sided p for
  "the best metric's oriented r is higher".
- Effort model: ordinary least squares on the usable metrics (standardised), the length
  in characters of the original and of the edited text, and one-hot annotators (first
  dropped). Scored by the same repeated K-fold as above; the contribution of an input
  is its drop-column importance: CV R² of the full model minus CV R² refitted without
  it (the annotator one-hot columns count as one input), on the same folds.
Edge cases never raise: results are None and a message says why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.model_selection import RepeatedKFold, train_test_split
from threadpoolctl import threadpool_limits

EFFORT = "effort"
SIMILARITY = "similarity"
ORIGINAL_LENGTH = "original_length"
EDITED_LENGTH = "edited_length"
ANNOTATOR = "annotator"


@dataclass(frozen=True)
class Settings:
    k: int = 5
    test_size: float = 0.2
    seed: int = 42
    cv_folds: int = 5
    cv_repeats: int = 10
    confidence: float = 0.95
    alpha: float = 0.05
    min_edits: int = 10

    def __post_init__(self) -> None:
        problems = []
        if self.k < 1:
            problems.append("k must be at least 1")
        if not 0 < self.test_size < 1:
            problems.append("test_size must be between 0 and 1")
        if self.cv_folds < 2:
            problems.append("cv_folds must be at least 2")
        if self.cv_repeats < 1:
            problems.append("cv_repeats must be at least 1")
        if not 0 < self.confidence < 1:
            problems.append("confidence must be between 0 and 1")
        if self.min_edits < max(self.cv_folds, 4):
            problems.append(f"min_edits must be at least {max(self.cv_folds, 4)}")
        if problems:
            raise ValueError("; ".join(problems))


@dataclass
class Correlation:
    n: int
    pearson: float | None = None
    pearson_p: float | None = None
    pearson_ci: tuple[float, float] | None = None
    spearman: float | None = None
    spearman_p: float | None = None


@dataclass
class CVScore:
    mean: float
    sd: float
    repeats: list[float]


@dataclass
class WilliamsTest:
    best: str
    n: int
    r_best: float
    r_metric: float
    r_between: float
    t: float
    df: int
    p: float
    significant: bool


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
    pearson_per_annotator: dict[str, float | None] = field(default_factory=dict)
    per_annotator: dict[str, Correlation] = field(default_factory=dict)
    knn_r2: float | None = None
    knn_r2_cv: CVScore | None = None
    williams_vs_best: WilliamsTest | None = None
    messages: list[str] = field(default_factory=list)


@dataclass
class EffortModel:
    inputs: list[str]
    n: int
    dropped: int
    r2_cv: CVScore | None = None
    contributions: dict[str, float] = field(default_factory=dict)
    coefficients: dict[str, float] = field(default_factory=dict)
    excluded_metrics: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    method: str = (
        "ordinary least squares on standardised inputs; R² by repeated K-fold CV; "
        "contribution = drop-column importance (CV R² of the full model minus CV R² without the input)"
    )
    # Out-of-fold predictions of the first repeat, for the predicted-vs-measured plot;
    # not part of the JSON (one value per edit).
    predicted: np.ndarray | None = field(default=None, repr=False)
    measured: np.ndarray | None = field(default=None, repr=False)
    index: np.ndarray | None = field(default=None, repr=False)  # the input frame's index labels of those rows


@dataclass
class Analysis:
    target: str
    settings: Settings
    n_rows: int
    n_used: int
    dropped_target: int
    annotators: list[str]
    metrics: dict[str, MetricResult]
    best_metric: str | None
    matrix: dict
    effort_model: EffortModel | None
    messages: list[str]
    best_by: str = "highest oriented pooled Pearson r; similarity metrics negated"

    def to_dict(self) -> dict:
        """Plain JSON types: NaN/inf become None, arrays are left out."""
        data = asdict(self)
        if data["effort_model"] is not None:
            for key in ("predicted", "measured", "index"):
                data["effort_model"].pop(key, None)
        return _plain(data)


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


# --- correlations -------------------------------------------------------------------


def fisher_ci(r: float, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Confidence interval of Pearson's r from Fisher's z transform; None below 4 pairs."""
    if n < 4 or not math.isfinite(r):
        return None
    if abs(r) >= 1.0:
        return (r, r)
    z = math.atanh(r)
    half = stats.norm.ppf(0.5 + confidence / 2) / math.sqrt(n - 3)
    return (math.tanh(z - half), math.tanh(z + half))


def is_constant(values: np.ndarray) -> bool:
    return values.size == 0 or bool(np.all(values == values[0]))


def correlate(x: np.ndarray, y: np.ndarray, confidence: float = 0.95) -> Correlation:
    """Pearson (p, CI) and Spearman on complete pairs; None where undefined (n < 3, constant).

    Same values as scipy.stats.pearsonr / spearmanr (two-sided p from Student's t with
    n - 2 df, average ranks for ties), computed directly to stay fast on 100,000 rows.
    """
    n = int(x.size)
    result = Correlation(n=n)
    if n < 3 or is_constant(x) or is_constant(y):
        return result
    pearson, spearman = _pearson(x, y), _pearson(stats.rankdata(x), stats.rankdata(y))
    if pearson is None or spearman is None:  # variation lost to rounding (e.g. subnormal values)
        return result
    result.pearson, result.pearson_p = pearson
    result.pearson_ci = fisher_ci(result.pearson, n, confidence)
    result.spearman, result.spearman_p = spearman
    return result


def _pearson(x: np.ndarray, y: np.ndarray) -> tuple[float, float] | None:
    dx, dy = x - x.mean(), y - y.mean()
    # Scaled to [-1, 1] first (as scipy does), so neither huge nor tiny values over/underflow.
    scale_x, scale_y = float(np.abs(dx).max()), float(np.abs(dy).max())
    if not (scale_x > 0 and scale_y > 0):
        return None
    dx, dy = dx / scale_x, dy / scale_y
    denominator = math.sqrt(np.einsum("i,i->", dx, dx) * np.einsum("i,i->", dy, dy))
    if not denominator > 0:
        return None
    r = max(-1.0, min(1.0, float(np.einsum("i,i->", dx, dy) / denominator)))
    n = x.size
    if abs(r) == 1.0:
        return r, 0.0
    t = r * math.sqrt((n - 2) / (1 - r * r))
    return r, float(2 * stats.t.sf(abs(t), n - 2))


def williams_test(r12: float, r13: float, r23: float, n: int) -> tuple[float, int, float]:
    """Williams's t for H1: r12 > r13, where 1 is the shared variable (the target).

    t = (r12 - r13) sqrt((n-1)(1+r23) / (2 (n-1)/(n-3) |R| + rbar² (1-r23)³)),
    |R| = 1 - r12² - r13² - r23² + 2 r12 r13 r23, rbar = (r12 + r13)/2, df = n - 3.
    Returns (t, df, one-sided p).
    """
    if n < 4:
        raise ValueError("Williams's test needs at least 4 rows")
    det = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    rbar = (r12 + r13) / 2
    denominator = 2 * (n - 1) / (n - 3) * det + rbar**2 * (1 - r23) ** 3
    if denominator <= 0:  # perfectly collinear metrics: no evidence either way
        return 0.0, n - 3, 0.5
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23) / denominator)
    return t, n - 3, float(stats.t.sf(t, n - 3))


def correlation_matrix(frame: pd.DataFrame, columns: Sequence[str]) -> dict:
    """Pearson r between every pair of metrics (pairwise-complete rows)."""
    matrix = frame[list(columns)].astype(float).corr(method="pearson") if columns else pd.DataFrame()
    return {"metrics": list(columns), "values": [[_plain(v) for v in row] for row in matrix.to_numpy()]}


# --- line fit (for scatter plots) -----------------------------------------------------


@dataclass
class LineFit:
    slope: float
    intercept: float
    n: int
    residual_sd: float
    x_mean: float
    sxx: float
    t_crit: float

    def predict(self, xs: np.ndarray) -> np.ndarray:
        return self.intercept + self.slope * xs

    def band(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Confidence band of the fitted mean at xs."""
        half = self.t_crit * self.residual_sd * np.sqrt(1 / self.n + (xs - self.x_mean) ** 2 / self.sxx)
        fitted = self.predict(xs)
        return fitted - half, fitted + half


def fit_line(x: np.ndarray, y: np.ndarray, confidence: float = 0.95) -> LineFit | None:
    """Least-squares line y = a + b x with its confidence band; None if undefined."""
    n = x.size
    if n < 3 or is_constant(x):
        return None
    x_mean = float(x.mean())
    sxx = float(((x - x_mean) ** 2).sum())
    slope = float(((x - x_mean) * (y - y.mean())).sum() / sxx)
    intercept = float(y.mean() - slope * x_mean)
    residuals = y - (intercept + slope * x)
    residual_sd = float(math.sqrt((residuals**2).sum() / (n - 2)))
    t_crit = float(stats.t.ppf(0.5 + confidence / 2, n - 2))
    return LineFit(slope, intercept, int(n), residual_sd, x_mean, sxx, t_crit)


# --- KNN regression on one feature ----------------------------------------------------


def r2_score(y: np.ndarray, predicted: np.ndarray) -> float | np.ndarray:
    """Coefficient of determination (sklearn's r2_score); per column when y is 2-D."""
    total = ((y - y.mean(axis=0)) ** 2).sum(axis=0)
    residual = ((y - predicted) ** 2).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        # sklearn's convention for a constant truth: 1 if predicted exactly, else 0.
        score = np.where(total > 0, 1.0 - residual / np.where(total > 0, total, 1.0), (residual == 0) * 1.0)
    return float(score) if np.ndim(score) == 0 else score


def sorted_groups(xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For sorted xs: per position, where its run of equal values starts and ends (exclusive)."""
    n = xs.size
    new = np.empty(n, dtype=bool)
    new[:1] = True
    np.not_equal(xs[1:], xs[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], n)
    run = np.cumsum(new) - 1
    return starts[run], ends[run]


def knn_predictions(
    xs: np.ndarray, ys: np.ndarray, groups: tuple[np.ndarray, np.ndarray], test: np.ndarray, k: int
) -> np.ndarray:
    """K-nearest-neighbour means for the `test` rows, trained on the other rows.

    xs is sorted ascending, ys and test (a mask) follow it, groups = sorted_groups(xs);
    returns one prediction per test row, in that order. Ys may be 2-D (one column per
    target): the neighbours are found once.

    The K nearest training values form a contiguous run [s, s+K) of the sorted training
    values, found by a binary search (ceil(log2(K+1)) steps) over the K+1 runs touching the query's
    insertion point. Training points tied at the K-th distance (they may extend beyond
    the run) share the run's tied slots equally. Everything is a gather or a prefix sum:
    no per-query loop, no tree.
    """
    group_start, group_end = groups
    train = ~test
    train_pos = np.flatnonzero(train)
    test_pos = np.flatnonzero(test)
    n_train = train_pos.size
    k = min(k, n_train)
    # Training rows before each sorted position, as an index into the padded training arrays.
    before = np.empty(xs.size + 1, dtype=np.int32)
    before[0] = k
    np.cumsum(train.view(np.int8), dtype=np.int32, out=before[1:])
    before[1:] += k
    # k infinities on the left, k + 1 on the right: no window ever needs clipping.
    x_train = np.empty(n_train + 2 * k + 1)
    x_train[:k], x_train[k + n_train :] = -np.inf, np.inf
    x_train[k : k + n_train] = xs[train_pos]
    pos_train = np.zeros(n_train + 2 * k + 1, dtype=np.int64)
    pos_train[k : k + n_train] = train_pos
    q = xs[test_pos]
    low = before[group_start[test_pos]] - k  # run starts to try: [p - k, p] for insertion point p
    high = low + k
    while np.any(low < high):  # smallest s whose run is no worse than the next one
        mid = (low + high) // 2
        good = x_train[mid + k] - q >= q - x_train[mid]
        high = np.where(good, mid, high)
        low = np.where(good, low, mid + 1)
    s, end = low, low + k
    kth = np.maximum(q - x_train[s], x_train[end - 1] - q)

    # The tied values: at most one left of q (the run's first value, or the one before it)
    # and one right of it; each is a run of equal training values [a, b) in padded space.
    left_here = q - x_train[s] == kth
    has_left = left_here | (q - x_train[s - 1] == kth)
    left = pos_train[np.where(left_here, s, s - 1)]
    left_a, left_b = before[group_start[left]], before[group_end[left]]
    right_here = x_train[end - 1] - q == kth
    has_right = right_here | (x_train[end] - q == kth)
    right = pos_train[np.where(right_here, end - 1, end)]
    right_a, right_b = before[group_start[right]], before[group_end[right]]
    has_right &= ~(has_left & (left_a == right_a))  # a single tied value (kth == 0, or a one-value run)

    # Inside the run, strictly closer than kth: between the left tied run's end and the right one's start.
    inside_from = np.where(has_left, np.minimum(left_b, end), s)
    inside_to = np.where(has_right, np.maximum(right_a, s), end)
    slots = k - (inside_to - inside_from)  # places of the run taken by tied values
    tied_count = np.where(has_left, left_b - left_a, 0) + np.where(has_right, right_b - right_a, 0)
    share = slots / tied_count
    left_a, left_b = np.where(has_left, left_a, 0), np.where(has_left, left_b, 0)  # absent: an empty range
    right_a, right_b = np.where(has_right, right_a, 0), np.where(has_right, right_b, 0)

    def predict(y: np.ndarray) -> np.ndarray:
        csum = np.zeros(n_train + 2 * k + 2)  # csum[t] = sum of y over padded indices < t
        np.cumsum(y[train_pos], out=csum[k + 1 : k + 1 + n_train])
        csum[k + 1 + n_train :] = csum[k + n_train]
        tied_sum = csum[left_b] - csum[left_a] + csum[right_b] - csum[right_a]
        return (csum[inside_to] - csum[inside_from] + share * tied_sum) / k

    if ys.ndim == 1:
        return predict(ys)
    return np.column_stack([predict(ys[:, j]) for j in range(ys.shape[1])])  # neighbours shared


def knn_predict(x_train: np.ndarray, y_train: np.ndarray, x_query: np.ndarray, k: int = 5) -> np.ndarray:
    """K-nearest-neighbour regression on one feature (ties shared), in the queries' order."""
    x = np.concatenate((x_train, x_query))
    test = np.concatenate((np.zeros(x_train.size, bool), np.ones(x_query.size, bool)))
    y = np.concatenate((y_train, np.zeros(x_query.size)))
    order = np.argsort(x, kind="stable")
    xs = x[order]
    predicted = knn_predictions(xs, y[order], sorted_groups(xs), test[order], k)
    result = np.empty(x_query.size)
    result[order[test[order]] - x_train.size] = predicted
    return result


def _knn_r2_masked(
    xs: np.ndarray, ys: np.ndarray, groups: tuple[np.ndarray, np.ndarray], test: np.ndarray, k: int
) -> float | np.ndarray:
    return r2_score(ys[np.flatnonzero(test)], knn_predictions(xs, ys, groups, test, k))  # (a gather beats a mask)


def split_mask(n: int, *, test_size: float = 0.2, seed: int = 42) -> np.ndarray:
    """The published protocol's test rows (sklearn's train_test_split) as a mask."""
    _, test = train_test_split(np.arange(n), test_size=test_size, random_state=seed)
    mask = np.zeros(n, dtype=bool)
    mask[test] = True
    return mask


def fold_ids(n: int, *, folds: int, repeats: int, seed: int) -> np.ndarray:
    """(repeats, n) array: the test fold of every row in every repeat of RepeatedKFold."""
    ids = np.empty((repeats, n), dtype=np.int16)
    splitter = RepeatedKFold(n_splits=folds, n_repeats=repeats, random_state=seed)
    for i, (_, test) in enumerate(splitter.split(np.empty((n, 1)))):
        ids[i // folds, test] = i % folds
    return ids


def knn_scores(
    x: np.ndarray, y: np.ndarray, *, settings: Settings = Settings(), fold_table: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Single-feature KNN R², for one target (y 1-D) or several sharing the neighbours (y 2-D).

    Returns (published-protocol R² per target, (repeats, targets) repeated-CV R²
    where a repeat's R² is the mean of its folds').
    """
    ys2 = y.reshape(y.shape[0], -1)
    if fold_table is None:
        fold_table = fold_ids(x.size, folds=settings.cv_folds, repeats=settings.cv_repeats, seed=settings.seed)
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], ys2[order]
    if ys.shape[1] == 1:
        ys = ys[:, 0]  # one target: 1-D arrays are faster throughout
    groups = sorted_groups(xs)
    split = split_mask(x.size, test_size=settings.test_size, seed=settings.seed)[order]
    split_r2 = np.atleast_1d(_knn_r2_masked(xs, ys, groups, split, settings.k))
    cv = np.empty((fold_table.shape[0], ys2.shape[1]))
    for r, repeat in enumerate(fold_table[:, order]):
        cv[r] = np.mean(
            [_knn_r2_masked(xs, ys, groups, repeat == fold, settings.k) for fold in range(settings.cv_folds)], axis=0
        )
    return split_r2, cv


def knn_r2_split(x: np.ndarray, y: np.ndarray, *, k: int = 5, test_size: float = 0.2, seed: int = 42) -> float:
    """The published protocol: one random split (sklearn's train_test_split), R² on the test part."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    test = split_mask(x.size, test_size=test_size, seed=seed)[order]
    return float(_knn_r2_masked(xs, y[order], sorted_groups(xs), test, k))


def knn_r2_cv(
    x: np.ndarray, y: np.ndarray, *, k: int = 5, folds: int = 5, repeats: int = 10, seed: int = 42
) -> CVScore:
    """Repeated K-fold R² of single-feature KNN: mean and sd over repeats."""
    settings = Settings(k=k, cv_folds=folds, cv_repeats=repeats, seed=seed, min_edits=max(folds, 4))
    _, cv = knn_scores(x, y, settings=settings)
    return _cv_score(cv[:, 0].tolist())


def _cv_score(per_repeat: list[float]) -> CVScore:
    sd = float(np.std(per_repeat, ddof=1)) if len(per_repeat) > 1 else 0.0
    return CVScore(mean=float(np.mean(per_repeat)), sd=sd, repeats=per_repeat)


# --- effort model -------------------------------------------------------------------


def _standardise(column: np.ndarray) -> np.ndarray:
    sd = column.std()
    return (column - column.mean()) / sd if sd > 0 else column - column.mean()


def effort_model(
    frame: pd.DataFrame,
    *,
    metrics: Sequence[str],
    target: str,
    annotator: str | None = ANNOTATOR,
    settings: Settings = Settings(),
    fold_table: np.ndarray | None = None,
) -> EffortModel:
    """Repeated-CV R² of OLS on metrics + text lengths + annotator, with drop-column contributions.

    The frame must already be restricted to complete rows; lengths come from the
    `original_length` / `edited_length` columns, or else the `original` / `edited` texts.
    """
    groups: dict[str, list[np.ndarray]] = {m: [_standardise(frame[m].to_numpy(float))] for m in metrics}
    for name, column in ((ORIGINAL_LENGTH, "original"), (EDITED_LENGTH, "edited")):
        if name in frame:  # lengths given by the caller
            lengths = frame[name].to_numpy(float)
        elif column in frame:
            lengths = frame[column].fillna("").astype(str).str.len().to_numpy(float)
        else:
            continue
        if not is_constant(lengths):
            groups[name] = [_standardise(lengths)]
    if annotator and annotator in frame and frame[annotator].nunique() > 1:
        dummies = pd.get_dummies(frame[annotator].astype(str), drop_first=True, dtype=float)
        groups[ANNOTATOR] = [dummies[c].to_numpy() for c in dummies.columns]
    names = list(groups)
    model = EffortModel(inputs=names, n=len(frame), dropped=0)
    if not names:
        model.messages.append("no usable input for the effort model")
        return model

    columns = [np.ones(len(frame))]
    slices: dict[str, list[int]] = {}
    for name in names:
        start = len(columns)
        columns.extend(groups[name])
        slices[name] = list(range(start, len(columns)))
    design = np.column_stack(columns)
    y = frame[target].to_numpy(float)
    if fold_table is None:
        fold_table = fold_ids(len(y), folds=settings.cv_folds, repeats=settings.cv_repeats, seed=settings.seed)

    everything = list(range(design.shape[1]))
    column_sets = [everything] + [[c for c in everything if c not in slices[name]] for name in names]
    cv_scores, predicted = _ols_cv(design, y, fold_table, settings.cv_folds, column_sets)
    model.r2_cv = cv_scores[0]
    model.predicted, model.measured = predicted, y
    for name, without in zip(names, cv_scores[1:], strict=True):
        model.contributions[name] = model.r2_cv.mean - without.mean
    beta = np.linalg.lstsq(design, y, rcond=None)[0]
    for name in names:
        if name == ANNOTATOR:
            continue
        model.coefficients[name] = float(beta[slices[name][0]])
    return model


def _ols_cv(
    design: np.ndarray, y: np.ndarray, fold_table: np.ndarray, folds: int, column_sets: list[list[int]]
) -> tuple[list[CVScore], np.ndarray]:
    """OLS on each column set, scored on the fold table; out-of-fold predictions of set 0, repeat 0.

    Each fold's training Gram matrix is the total minus the test part's, so a fold costs
    one pass over its test rows for every column set together.
    """
    gram, moment = design.T @ design, design.T @ y
    n_sets = len(column_sets)
    scores = np.empty((fold_table.shape[0], folds, n_sets))
    first_predictions = np.empty_like(y)
    for r, repeat in enumerate(fold_table):
        for fold in range(folds):
            test = np.flatnonzero(repeat == fold)
            xt, yt = design[test], y[test]
            train_gram, train_moment = gram - xt.T @ xt, moment - xt.T @ yt
            betas = np.zeros((design.shape[1], n_sets))
            for j, cols in enumerate(column_sets):
                betas[cols, j] = np.linalg.lstsq(train_gram[np.ix_(cols, cols)], train_moment[cols], rcond=None)[0]
            predictions = xt @ betas
            residual = ((yt[:, None] - predictions) ** 2).sum(axis=0)
            total = float(((yt - yt.mean()) ** 2).sum())
            scores[r, fold] = 1 - residual / total if total > 0 else (residual == 0).astype(float)
            if r == 0:
                first_predictions[test] = predictions[:, 0]
    per_set = scores.mean(axis=1)  # (repeats, sets): a repeat's R² is the mean of its folds'
    return [_cv_score(per_set[:, j].tolist()) for j in range(n_sets)], first_predictions


# --- the whole analysis ---------------------------------------------------------------


def orientation(direction: str) -> float:
    """+1 for effort-like metrics (distances), -1 for similarities."""
    return -1.0 if direction == SIMILARITY else 1.0


def analyze(
    frame: pd.DataFrame,
    *,
    metrics: Sequence[str],
    target: str,
    directions: Mapping[str, str] | None = None,
    annotator: str = ANNOTATOR,
    settings: Settings = Settings(),
) -> Analysis:
    """Correlations, KNN R², Williams's tests, the metric matrix and the effort model.

    `frame` has one row per post-edit, a float column per metric (NaN = missing), the
    target column, and optionally `annotator` and the texts `original`, `edited` (or
    their lengths as `original_length`, `edited_length`) for the effort model.
    """
    return analyze_targets(
        frame, metrics=metrics, targets=[target], directions=directions, annotator=annotator, settings=settings
    )[target]


def analyze_targets(
    frame: pd.DataFrame,
    *,
    metrics: Sequence[str],
    targets: Sequence[str],
    directions: Mapping[str, str] | None = None,
    annotator: str = ANNOTATOR,
    settings: Settings = Settings(),
) -> dict[str, Analysis]:
    """`analyze` for several targets; when they are measured on the same rows, each metric's
    KNN neighbours are searched once for all of them (the results are identical)."""
    missing = [t for t in targets if t not in frame]
    if missing:
        raise ValueError(f"the frame has no target column {missing[0]!r}")
    missing = [m for m in metrics if m not in frame]
    if missing:
        raise ValueError(f"the frame has no column for metric(s): {', '.join(missing)}")
    # The arrays are long and thin: BLAS threads only contend (badly on a busy machine).
    # Degenerate data (e.g. a fold with no variance) gives inf/NaN, reported as null: no warnings.
    with threadpool_limits(limits=1, user_api="blas"), np.errstate(all="ignore"):
        shared = _shared_knn(frame, metrics, targets, settings) if len(targets) > 1 else {}
        return {
            target: _analyze(
                frame,
                metrics=metrics,
                target=target,
                directions=directions,
                annotator=annotator,
                settings=settings,
                knn=shared.get(target, {}),
            )
            for target in targets
        }


def _shared_knn(
    frame: pd.DataFrame, metrics: Sequence[str], targets: Sequence[str], settings: Settings
) -> dict[str, dict[str, tuple[float, CVScore]]]:
    values = frame[list(targets)].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    measured = np.isfinite(values)
    if not (measured.all(axis=1) == measured.any(axis=1)).all():
        return {}  # targets missing on different rows: no common neighbours
    rows = measured.all(axis=1)
    y = values[rows]
    shared: dict[str, dict[str, tuple[float, CVScore]]] = {t: {} for t in targets}
    fold_cache: dict[bytes, np.ndarray] = {}
    for name in metrics:
        x_all = pd.to_numeric(frame[name], errors="coerce").to_numpy(float)[rows]
        present = np.isfinite(x_all)
        x = x_all[present]
        if x.size < settings.min_edits or is_constant(x):
            continue
        split, cv = knn_scores(x, y[present], settings=settings, fold_table=_folds_for(present, settings, fold_cache))
        for j, target in enumerate(targets):
            shared[target][name] = (float(split[j]), _cv_score(cv[:, j].tolist()))
    return shared


def _analyze(
    frame: pd.DataFrame,
    *,
    metrics: Sequence[str],
    target: str,
    directions: Mapping[str, str] | None,
    annotator: str,
    settings: Settings,
    knn: Mapping[str, tuple[float, CVScore]],
) -> Analysis:
    directions = directions or {}
    messages: list[str] = []
    n_rows = len(frame)

    target_values = _finite(frame[target])
    data = frame.loc[target_values.notna()].copy()
    data[target] = target_values[target_values.notna()]
    for name in metrics:  # from here on, NaN is the one way of being missing
        data[name] = _finite(data[name])
    dropped_target = n_rows - len(data)
    if dropped_target:
        messages.append(f"{dropped_target} of {n_rows} rows have no {target} and were left out")
    if annotator in data:
        data[annotator] = data[annotator].fillna("").astype(str)
        annotator_codes, names = pd.factorize(data[annotator], sort=True)
        annotator_names = [str(name) for name in names]
    else:
        annotator_codes, annotator_names = None, []
    results = {m: MetricResult(name=m, direction=directions.get(m, EFFORT), n=0, dropped=0) for m in metrics}
    analysis = Analysis(
        target=target,
        settings=settings,
        n_rows=n_rows,
        n_used=len(data),
        dropped_target=dropped_target,
        annotators=annotator_names,
        metrics=results,
        best_metric=None,
        matrix=correlation_matrix(data, list(metrics)),
        effort_model=None,
        messages=messages,
    )
    if len(data) < settings.min_edits:
        messages.append(
            f"only {len(data)} edits with a {target} value: at least {settings.min_edits} are needed for an analysis"
        )
        return analysis
    y_all = data[target].to_numpy(float)
    if is_constant(y_all):
        messages.append(f"the target {target} is constant ({y_all[0]:g}) on this selection: nothing to explain")
        return analysis
    if len(annotator_names) == 1:
        messages.append(
            f"only one annotator ({annotator_names[0]}): per-annotator results equal the pooled ones, "
            "and the effort model has no annotator effect"
        )

    fold_cache: dict[bytes, np.ndarray] = {}
    for name in metrics:
        _analyze_metric(
            data,
            results[name],
            target=target,
            annotator_codes=annotator_codes,
            annotator_names=annotator_names,
            settings=settings,
            fold_cache=fold_cache,
            knn=knn.get(name),
        )

    analysis.best_metric = _best_metric(results)
    if analysis.best_metric:
        _williams_against_best(data, results, analysis.best_metric, target, settings)
    analysis.effort_model = _effort_model(
        data, results, target=target, annotator=annotator, settings=settings, fold_cache=fold_cache
    )
    return analysis


def _finite(column: pd.Series) -> pd.Series:
    """Floats; anything else (text, None, +-inf) becomes NaN."""
    return pd.to_numeric(column, errors="coerce").astype(float).replace([np.inf, -np.inf], np.nan)


def _folds_for(mask: np.ndarray, settings: Settings, cache: dict[bytes, np.ndarray]) -> np.ndarray:
    """Rows kept by the same mask share the same folds (and the splitter runs once)."""
    key = np.packbits(mask).tobytes()
    if key not in cache:
        cache[key] = fold_ids(int(mask.sum()), folds=settings.cv_folds, repeats=settings.cv_repeats, seed=settings.seed)
    return cache[key]


def _analyze_metric(
    data: pd.DataFrame,
    result: MetricResult,
    *,
    target: str,
    annotator_codes: np.ndarray | None,
    annotator_names: Sequence[str],
    settings: Settings,
    fold_cache: dict[bytes, np.ndarray],
    knn: tuple[float, CVScore] | None,
) -> None:
    values = data[result.name].to_numpy(float)
    present = np.isfinite(values)
    x, y = values[present], data[target].to_numpy(float)[present]
    result.n, result.dropped = int(present.sum()), int((~present).sum())
    if result.dropped:
        result.messages.append(f"{result.dropped} rows without a {result.name} value were left out")
    if result.n < settings.min_edits:
        result.messages.append(f"only {result.n} edits have a value: at least {settings.min_edits} are needed")
        return
    if is_constant(x):
        result.messages.append(f"{result.name} is constant ({x[0]:g}) on this selection: no correlation")
        return
    pooled = correlate(x, y, settings.confidence)
    result.pearson, result.pearson_p, result.pearson_ci = pooled.pearson, pooled.pearson_p, pooled.pearson_ci
    result.spearman, result.spearman_p = pooled.spearman, pooled.spearman_p
    result.pearson_oriented = orientation(result.direction) * pooled.pearson

    if annotator_codes is not None:
        codes = annotator_codes[present]
        for code in np.unique(codes):
            name = annotator_names[code]
            mine = codes == code
            if mine.sum() < settings.min_edits:
                result.per_annotator[name] = Correlation(n=int(mine.sum()))
                result.messages.append(f"{name}: only {int(mine.sum())} edits, no per-annotator correlation")
            else:
                result.per_annotator[name] = correlate(x[mine], y[mine], settings.confidence)
                if result.per_annotator[name].pearson is None:
                    result.messages.append(f"{name}: {result.name} or the target is constant, no correlation")
            result.pearson_per_annotator[name] = result.per_annotator[name].pearson

    if settings.k > result.n - math.ceil(result.n / settings.cv_folds):
        result.messages.append(f"k={settings.k} is more than the training rows of a fold; using all of them")
    if knn is None:
        split, cv = knn_scores(x, y, settings=settings, fold_table=_folds_for(present, settings, fold_cache))
        knn = (float(split[0]), _cv_score(cv[:, 0].tolist()))
    result.knn_r2, result.knn_r2_cv = knn


def _best_metric(results: Mapping[str, MetricResult]) -> str | None:
    scored = [(r.pearson_oriented, name) for name, r in results.items() if r.pearson_oriented is not None]
    return max(scored, key=lambda pair: pair[0])[1] if scored else None


def _williams_against_best(
    data: pd.DataFrame, results: Mapping[str, MetricResult], best: str, target: str, settings: Settings
) -> None:
    sign_best = orientation(results[best].direction)
    for name, result in results.items():
        if name == best or result.pearson is None:
            continue
        rows = data[[target, best, name]].dropna()
        n = len(rows)
        y = rows[target].to_numpy(float)
        a = sign_best * rows[best].to_numpy(float)
        b = orientation(result.direction) * rows[name].to_numpy(float)
        if n < settings.min_edits or is_constant(a) or is_constant(b):
            result.messages.append(f"too few common rows with {best} for Williams's test")
            continue
        r12, r13, r23 = (float(np.corrcoef(u, v)[0, 1]) for u, v in ((y, a), (y, b), (a, b)))
        t, df, p = williams_test(r12, r13, r23, n)
        result.williams_vs_best = WilliamsTest(
            best=best, n=n, r_best=r12, r_metric=r13, r_between=r23, t=t, df=df, p=p, significant=p < settings.alpha
        )


def _effort_model(
    data: pd.DataFrame,
    results: Mapping[str, MetricResult],
    *,
    target: str,
    annotator: str,
    settings: Settings,
    fold_cache: dict[bytes, np.ndarray],
) -> EffortModel:
    """Usable metrics (not constant, at most half missing), complete rows only."""
    usable, excluded, notes = [], [], []
    for name, result in results.items():
        if result.pearson is None:
            excluded.append(name)
            notes.append(f"{name} left out of the effort model: no correlation on this selection")
        elif result.dropped > len(data) / 2:
            excluded.append(name)
            notes.append(f"{name} left out of the effort model: more than half its values are missing")
        else:
            usable.append(name)
    complete = data[usable].notna().all(axis=1).to_numpy() if usable else np.ones(len(data), dtype=bool)
    rows = data.loc[complete]
    dropped = int((~complete).sum())
    if dropped:
        notes.append(f"{dropped} rows with a missing metric value were left out of the effort model")
    if len(rows) < settings.min_edits:
        model = EffortModel(inputs=[], n=len(rows), dropped=dropped, excluded_metrics=excluded, messages=notes)
        model.messages.append(f"only {len(rows)} complete rows: at least {settings.min_edits} are needed")
        return model
    model = effort_model(
        rows,
        metrics=usable,
        target=target,
        annotator=annotator,
        settings=settings,
        fold_table=_folds_for(complete, settings, fold_cache),
    )
    model.dropped, model.excluded_metrics = dropped, excluded
    model.index = rows.index.to_numpy()
    model.messages = notes + model.messages
    if annotator in rows and rows[annotator].nunique() == 1:
        model.messages.append("one annotator only: no annotator effect in the model")
    return model


# --- flat views (tables, CSV) -------------------------------------------------------


def summary_rows(analysis: Analysis) -> list[dict]:
    """One flat row per metric: the table of the report, the analyze command and the CSV.

    Per-annotator Pearson r comes as `pearson[<annotator>]` columns, in annotator order.
    """
    rows = []
    for name, m in analysis.metrics.items():
        williams = m.williams_vs_best
        cv = m.knn_r2_cv
        row = {
            "metric": name,
            "direction": m.direction,
            "n": m.n,
            "dropped": m.dropped,
            "pearson": m.pearson,
            "pearson_p": m.pearson_p,
            "pearson_ci_low": m.pearson_ci[0] if m.pearson_ci else None,
            "pearson_ci_high": m.pearson_ci[1] if m.pearson_ci else None,
            "pearson_oriented": m.pearson_oriented,
            "spearman": m.spearman,
            "spearman_p": m.spearman_p,
            "knn_r2": m.knn_r2,
            "knn_r2_cv_mean": cv.mean if cv else None,
            "knn_r2_cv_sd": cv.sd if cv else None,
            "best": name == analysis.best_metric,
            "williams_t": williams.t if williams else None,
            "williams_p": williams.p if williams else None,
            "williams_significant": williams.significant if williams else None,
        }
        for annotator in analysis.annotators:
            row[f"pearson[{annotator}]"] = m.pearson_per_annotator.get(annotator)
        rows.append(_plain(row))
    return rows


def format_p(p: float | None) -> str:
    """A p-value for people: 2 significant digits; an underflowed 0 shows as < 1e-300."""
    if p is None:
        return "-"
    return "< 1e-300" if p == 0 else f"{p:.2g}"
