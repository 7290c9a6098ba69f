"""The whole analysis of a selection's frame: every metric against a target (correlations, KNN R²
with the published protocol and cross-validated three ways, a mixed model), then comparisons.py
(the best metric, Williams's tests and the bootstrap against it, the effort model); results.py holds
what comes out, tables.py flattens it. Pure: numpy and pandas (no Django); metrics.reports builds the frame.
Signs are oriented by each metric's direction: a "similarity" metric (higher = less work)
is negated for choosing the best metric and for Williams's test, so a good similarity
metric competes with its (positive) oriented r. `pearson` itself keeps the raw sign;
`pearson_oriented` is the oriented one. Williams's test runs on the rows where the target
and both metrics are present. Edge cases never raise: results are None and a message says why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
from scipy import stats
from threadpoolctl import threadpool_limits

from metrics.analysis.common import (
    ANNOTATOR,
    DEFAULT_SETTINGS,
    EFFORT,
    ITEM,
    Settings,
    cv_score,
    is_constant,
    orientation,
)
from metrics.analysis.comparisons import (
    best_metric,
    bootstrap_against_best,
    effort_model_fit,
    mixed_models_fit,
    williams_against_best,
)
from metrics.analysis.correlation import Correlation, correlate, correlation_matrix
from metrics.analysis.folds import (
    ANNOTATOR_CV,
    ITEM_CV,
    RANDOM_CV,
    FoldTables,
    fold_tables_for,
    group_codes,
    light_tables,
)
from metrics.analysis.knn import knn_r2_published, knn_scores
from metrics.analysis.outliers import flag_outliers
from metrics.analysis.results import Analysis, KnnScores, MetricResult


# What the coefficients are in (JSON `units`; the report and the command label them the same way).
def analyze(
    frame: pd.DataFrame,
    *,
    metrics: Sequence[str],
    target: str,
    directions: Mapping[str, str] | None = None,
    annotator: str = ANNOTATOR,
    item: str = ITEM,
    settings: Settings = DEFAULT_SETTINGS,
) -> Analysis:
    """Correlations, KNN R², Williams's tests, the metric matrix and the effort model.

    `frame` has one row per post-edit in import order (the published split depends on it),
    a float column per metric (NaN = missing), the target column, and optionally `annotator`,
    `item` (for the grouped cross-validation) and the texts `original`, `edited` (or their
    lengths as `original_length`, `edited_length`) for the effort model.
    """
    return analyze_targets(
        frame,
        metrics=metrics,
        targets=[target],
        directions=directions,
        annotator=annotator,
        item=item,
        settings=settings,
    )[target]


def analyze_targets(
    frame: pd.DataFrame,
    *,
    metrics: Sequence[str],
    targets: Sequence[str],
    directions: Mapping[str, str] | None = None,
    annotator: str = ANNOTATOR,
    item: str = ITEM,
    settings: Settings = DEFAULT_SETTINGS,
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
        groups = _group_codes(frame, annotator=annotator, item=item)
        shared = _shared_knn(frame, metrics, targets, settings, groups) if len(targets) > 1 else {}
        return {
            target: _analyze(
                frame,
                metrics=metrics,
                target=target,
                directions=directions,
                annotator=annotator,
                item=item,
                settings=settings,
                groups=groups,
                knn=shared.get(target, {}),
            )
            for target in targets
        }


def _without_outliers(
    frame: pd.DataFrame,
    analysis: Analysis,
    *,
    measured: np.ndarray,
    metrics: Sequence[str],
    directions: Mapping[str, str] | None,
    annotator: str,
    item: str,
    settings: Settings,
    groups: Mapping[str, np.ndarray | None],
) -> None:
    """Flag the target's outliers (outliers.py) and put the key figures without them beside."""
    target = analysis.target
    y = pd.to_numeric(frame.loc[measured, target], errors="coerce").to_numpy(float)
    outliers = flag_outliers(y)
    analysis.outliers = outliers
    if not outliers.flagged:
        return
    keep = np.ones(len(frame), dtype=bool)
    keep[np.flatnonzero(measured)[outliers.mask]] = False
    if int(keep.sum()) > LARGE:  # a second full CV would double the analysis; its sd over repeats is small there
        settings = replace(settings, cv_repeats=min(settings.cv_repeats, LARGE_REPEATS))
    outliers.cv_repeats_without = settings.cv_repeats
    light = _analyze(
        frame.loc[keep],
        metrics=metrics,
        target=target,
        directions=directions,
        annotator=annotator,
        item=item,
        settings=settings,
        groups={scheme: None if codes is None else codes[keep] for scheme, codes in groups.items()},
        knn={},
        light=True,
    )
    for name, m in light.metrics.items():
        outliers.without[name] = {
            "n": m.n,
            "pearson": m.pearson,
            "spearman": m.spearman,
            "knn_r2": m.knn_r2 if m.knn_r2 is not None and math.isfinite(m.knn_r2) else None,
            "knn_r2_tie_averaged": m.knn_r2_tie_averaged,
            "knn_r2_cv_mean": m.knn_r2_cv.mean if m.knn_r2_cv else None,
            "knn_r2_cv_item_mean": m.knn_r2_cv_item.mean if m.knn_r2_cv_item else None,
        }
    model = light.effort_model
    outliers.effort_model_r2_cv_without = model.r2_cv.mean if model is not None and model.r2_cv else None
    outliers.best_metric_without = light.best_metric
    largest = ", ".join(f"{value:g}" for value in outliers.largest)
    message = (
        f"{outliers.flagged} of {outliers.n} edits have an outlying {target} (above {outliers.upper_bound:.4g}; "
        f"largest: {largest}): they are included; the key figures without them are shown beside"
    )
    analysis.messages.append(message)


def _group_codes(frame: pd.DataFrame, *, annotator: str, item: str) -> dict[str, np.ndarray | None]:
    """One integer code per frame row for each grouped CV scheme (None without its column), coded as
    scikit-learn codes groups (folds.group_codes: sorted ids), so its GroupKFold gives the same folds."""
    codes: dict[str, np.ndarray | None] = {}
    for scheme, column in ((ITEM_CV, item), (ANNOTATOR_CV, annotator)):
        codes[scheme] = column_group_codes(frame[column]) if column in frame else None
    return codes


def column_group_codes(column: pd.Series) -> np.ndarray:
    """folds.group_codes of a column's values as strings (missing ones as ""), without an array of a million
    Python strings and its fixed-width copy: the column's sorted factorization, which orders strings by code
    point as np.unique does. Values holding a NUL go through group_codes itself (np.unique's fixed-width
    strings drop trailing NULs, so two such values could become one)."""
    texts = column.fillna("").astype(str)
    if texts.str.contains("\x00", regex=False).any():
        return group_codes(texts.to_numpy())
    return pd.factorize(texts, sort=True)[0].astype(np.intp)


def _knn(
    x: np.ndarray, y: np.ndarray, settings: Settings, tables: Mapping[str, np.ndarray], *, light: bool = False
) -> list[KnnScores]:
    """Every KNN figure of one metric, for each column of y (the neighbours are shared). `light` (the
    figures without outliers): no row orders, and above LARGE rows not scikit-learn's tree search either."""
    if light and x.size > LARGE:
        published = np.full(1 if y.ndim == 1 else y.shape[1], np.nan)
    else:
        published = np.atleast_1d(
            knn_r2_published(x, y, k=settings.k, test_size=settings.test_size, seed=settings.seed)
        )
    split, cv = knn_scores(x, y, settings=settings, fold_tables=tables)
    orders = _row_orders(x, y, settings) if ROW_ORDERS and not light and x.size <= LARGE else None
    return [
        KnnScores(
            published=float(published[j]),
            tie_averaged=float(split[j]),
            cv={scheme: cv_score(scores[:, j].tolist()) for scheme, scores in cv.items()},
            row_orders=None if orders is None else cv_score(orders[:, j].tolist()),
        )
        for j in range(split.size)
    ]


def _shared_knn(
    frame: pd.DataFrame,
    metrics: Sequence[str],
    targets: Sequence[str],
    settings: Settings,
    groups: Mapping[str, np.ndarray | None],
) -> dict[str, dict[str, KnnScores]]:
    values = frame[list(targets)].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    measured = np.isfinite(values)
    if not (measured.all(axis=1) == measured.any(axis=1)).all():
        return {}  # targets missing on different rows: no common neighbours
    rows = measured.all(axis=1)
    y = values[rows]
    tables = fold_tables_for(settings, groups, rows)
    shared: dict[str, dict[str, KnnScores]] = {t: {} for t in targets}
    for name in metrics:
        x_all = pd.to_numeric(frame[name], errors="coerce").to_numpy(float)[rows]
        present = np.isfinite(x_all)
        x = x_all[present]
        if x.size < settings.min_edits or is_constant(x):
            continue
        for target, scores in zip(targets, _knn(x, y[present], settings, tables.tables(present)), strict=True):
            shared[target][name] = scores
    return shared


def _analyze(
    frame: pd.DataFrame,
    *,
    metrics: Sequence[str],
    target: str,
    directions: Mapping[str, str] | None,
    annotator: str,
    item: str,
    settings: Settings,
    groups: Mapping[str, np.ndarray | None],
    knn: Mapping[str, KnnScores],
    light: bool = False,
) -> Analysis:
    """`light`: the key figures only (correlations, KNN, effort model), for the figures without outliers."""
    directions = directions or {}
    messages: list[str] = []
    n_rows = len(frame)

    target_values = _finite(frame[target])
    measured = target_values.notna().to_numpy()
    # Copy-on-write (pandas 3): the columns assigned below never reach `frame`; a shallow copy when every row is
    # measured (a boolean .loc would copy every column, and a .copy() of it once more).
    data = frame.copy(deep=False) if measured.all() else frame.loc[measured]
    data[target] = target_values[measured]
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
        items=int(data[item].nunique()) if item in data else 0,
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
            "the effort model has no annotator effect, and there is no annotator-grouped cross-validation"
        )
    if item not in data:
        messages.append(f"no item column ({item}): no item-grouped cross-validation")
    elif analysis.items == len(data):
        messages.append("every item has one edit here: the item-grouped cross-validation is one more random one")

    tables = fold_tables_for(settings, groups, measured)
    target_ranks: dict[tuple[bytes, int], np.ndarray] = {}
    for name in metrics:
        _analyze_metric(
            data,
            results[name],
            target=target,
            annotator_codes=annotator_codes,
            annotator_names=annotator_names,
            settings=settings,
            tables=tables,
            knn=knn.get(name),
            target_ranks=target_ranks,
            light=light,
        )

    analysis.best_metric = best_metric(results)
    if light:
        analysis.effort_model = effort_model_fit(
            data, results, target=target, annotator=annotator, settings=settings, tables=tables, light=True
        )
        return analysis
    if analysis.best_metric:
        williams_against_best(data, results, analysis.best_metric, target, settings)
        bootstrap_against_best(data, results, analysis.best_metric, target, item, settings)
    if settings.mixed_models:
        mixed_models_fit(data, results, target=target, annotator=annotator, item=item, settings=settings)
    analysis.effort_model = effort_model_fit(
        data, results, target=target, annotator=annotator, settings=settings, tables=tables
    )
    _without_outliers(
        frame,
        analysis,
        measured=measured,
        metrics=metrics,
        directions=directions,
        annotator=annotator,
        item=item,
        settings=settings,
        groups=groups,
    )
    return analysis


def _finite(column: pd.Series) -> pd.Series:
    """Floats; anything else (text, None, +-inf) becomes NaN."""
    return pd.to_numeric(column, errors="coerce").astype(float).replace([np.inf, -np.inf], np.nan)


def _analyze_metric(
    data: pd.DataFrame,
    result: MetricResult,
    *,
    target: str,
    annotator_codes: np.ndarray | None,
    annotator_names: Sequence[str],
    settings: Settings,
    tables: FoldTables,
    knn: KnnScores | None,
    target_ranks: dict[tuple[bytes, int], np.ndarray],
    light: bool = False,
) -> None:
    values = data[result.name].to_numpy(float)
    present = np.isfinite(values)
    rows_key = np.packbits(present).tobytes()

    def ranks(values: np.ndarray, who: int) -> np.ndarray:
        """The target's ranks on these rows, computed once for every metric with the same rows."""
        key = (rows_key, who)
        if key not in target_ranks:
            target_ranks[key] = stats.rankdata(values)
        return target_ranks[key]

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
    pooled = correlate(x, y, settings.confidence, y_ranks=ranks(y, -1))
    result.pearson, result.pearson_p, result.pearson_ci = pooled.pearson, pooled.pearson_p, pooled.pearson_ci
    result.spearman, result.spearman_p = pooled.spearman, pooled.spearman_p
    result.kendall, result.kendall_p = pooled.kendall, pooled.kendall_p
    if pooled.pearson is not None:  # None: the variation was lost to rounding
        result.pearson_oriented = orientation(result.direction) * pooled.pearson

    if annotator_codes is not None and not light:
        codes = annotator_codes[present]
        for code in np.unique(codes):
            name = annotator_names[code]
            mine = codes == code
            if mine.sum() < settings.min_edits:
                result.per_annotator[name] = Correlation(n=int(mine.sum()))
                result.messages.append(f"{name}: only {int(mine.sum())} edits, no per-annotator correlation")
            else:
                result.per_annotator[name] = correlate(
                    x[mine], y[mine], settings.confidence, y_ranks=ranks(y[mine], int(code))
                )
                if result.per_annotator[name].pearson is None:
                    result.messages.append(f"{name}: {result.name} or the target is constant, no correlation")
            result.pearson_per_annotator[name] = result.per_annotator[name].pearson

    if settings.k > result.n - math.ceil(result.n / settings.cv_folds):
        result.messages.append(f"k={settings.k} is more than the training rows of a fold; using all of them")
    if knn is None:
        knn = _knn(
            x, y, settings, light_tables(tables.tables(present)) if light else tables.tables(present), light=light
        )[0]
    result.knn_r2, result.knn_r2_tie_averaged = knn.published, knn.tie_averaged
    result.knn_r2_row_orders = None if light else knn.row_orders
    result.knn_r2_cv = knn.cv.get(RANDOM_CV)
    result.knn_r2_cv_item = knn.cv.get(ITEM_CV)
    result.knn_r2_cv_annotator = knn.cv.get(ANNOTATOR_CV)
    if result.knn_r2_cv is not None and result.knn_r2_cv_item is not None:
        result.cv_item_gap = result.knn_r2_cv.mean - result.knn_r2_cv_item.mean
        result.cv_optimistic = result.cv_item_gap > settings.cv_gap_flag
        if result.cv_optimistic:
            result.messages.append(
                f"random-CV R² exceeds item-grouped CV R² by {result.cv_item_gap:.3f} (> {settings.cv_gap_flag:g}): "
                "edits of the same item on both sides of a split make the random CV optimistic"
            )


ROW_ORDERS = 5  # shuffled row orders the published protocol is rerun on (knn_r2_row_orders; 0: none)
# Rows above which the extra scikit-learn tree searches are left out (5 per metric would cost seconds):
# knn_r2_row_orders, and the published protocol's R² without outliers.
LARGE = 20_000
LARGE_REPEATS = 2  # CV repeats of the figures without outliers above LARGE rows


def _row_orders(x: np.ndarray, y: np.ndarray, settings: Settings) -> np.ndarray:
    """(ROW_ORDERS, targets): the published protocol (scikit-learn's split and KNeighborsRegressor) on
    the rows in ROW_ORDERS orders drawn by RandomState(settings.seed).permutation: how much its figure
    owes to the order the rows happen to be in (both the split and the tie-breaking depend on it)."""
    rng = np.random.RandomState(settings.seed)
    scores = np.empty((ROW_ORDERS, 1 if y.ndim == 1 else y.shape[1]))
    for i in range(ROW_ORDERS):
        order = rng.permutation(x.size)
        scores[i] = knn_r2_published(x[order], y[order], k=settings.k, test_size=settings.test_size, seed=settings.seed)
    return scores
