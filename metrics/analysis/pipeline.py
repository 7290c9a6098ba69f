"""The whole analysis of a selection's frame: every metric against a target, the best metric,
Williams's tests, the metric matrix and the effort model; and its flat table.

Pure: numpy and pandas (no Django). The ORM side (metrics.reports) builds the frame.
Signs are oriented by each metric's direction: a "similarity" metric (higher = less work)
is negated for choosing the best metric and for Williams's test, so a good similarity
metric competes with its (positive) oriented r. `pearson` itself keeps the raw sign;
`pearson_oriented` is the oriented one. Williams's test runs on the rows where the target
and both metrics are present. Edge cases never raise: results are None and a message says why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from metrics.analysis.common import (
    ANNOTATOR,
    DEFAULT_SETTINGS,
    EFFORT,
    CVScore,
    Settings,
    cv_score,
    is_constant,
    orientation,
    plain,
)
from metrics.analysis.correlation import Correlation, WilliamsTest, correlate, correlation_matrix, williams_test
from metrics.analysis.effort_model import EffortModel, effort_model
from metrics.analysis.folds import fold_ids
from metrics.analysis.knn import knn_scores


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
        return plain(data)


def analyze(
    frame: pd.DataFrame,
    *,
    metrics: Sequence[str],
    target: str,
    directions: Mapping[str, str] | None = None,
    annotator: str = ANNOTATOR,
    settings: Settings = DEFAULT_SETTINGS,
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
            shared[target][name] = (float(split[j]), cv_score(cv[:, j].tolist()))
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
        knn = (float(split[0]), cv_score(cv[:, 0].tolist()))
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
        rows.append(plain(row))
    return rows
