"""The steps of an analysis that compare the metrics: the best metric, Williams's tests and the
item bootstrap against it, each metric's mixed model, and the effort model on them all.

Pure (no Django); pipeline.py calls them on the rows it has checked.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from metrics.analysis.bootstrap import BootstrapDifference, Pair, paired_differences
from metrics.analysis.common import Settings, is_constant, orientation
from metrics.analysis.correlation import WilliamsTest, williams_test
from metrics.analysis.effort_model import EffortModel, effort_model
from metrics.analysis.folds import RANDOM_CV, FoldTables
from metrics.analysis.mixed import mixed_model
from metrics.analysis.results import MetricResult


def best_metric(results: Mapping[str, MetricResult]) -> str | None:
    scored = [(r.pearson_oriented, name) for name, r in results.items() if r.pearson_oriented is not None]
    return max(scored, key=lambda pair: pair[0])[1] if scored else None


def williams_against_best(
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


def bootstrap_against_best(
    data: pd.DataFrame, results: Mapping[str, MetricResult], best: str, target: str, item: str, settings: Settings
) -> None:
    """Paired bootstrap over items of (oriented r of the best metric - this metric's), beside Williams's test."""
    compared = [name for name, result in results.items() if result.williams_vs_best is not None]
    if not compared:
        return
    unit = "item" if item in data else "row"
    codes = pd.factorize(data[item].fillna("").astype(str))[0] if item in data else np.arange(len(data))
    y = data[target].to_numpy(float)
    best_values = orientation(results[best].direction) * data[best].to_numpy(float)
    pairs = []
    for name in compared:
        values = orientation(results[name].direction) * data[name].to_numpy(float)
        rows = np.isfinite(best_values) & np.isfinite(values)
        pairs.append(Pair(y=y, a=best_values, b=values, rows=rows))
    outcomes = paired_differences(
        codes, pairs, resamples=settings.bootstrap_resamples, seed=settings.seed, confidence=settings.confidence
    )
    for name, pair, (difference, ci, units) in zip(compared, pairs, outcomes, strict=True):
        results[name].bootstrap_vs_best = BootstrapDifference(
            best=best,
            n=int(pair.rows.sum()),
            units=units,
            unit=unit,
            difference=difference,
            ci=ci,
            resamples=settings.bootstrap_resamples,
            seed=settings.seed,
            excludes_zero=bool(ci[0] > 0),
        )


def mixed_models_fit(
    data: pd.DataFrame,
    results: Mapping[str, MetricResult],
    *,
    target: str,
    annotator: str,
    item: str,
    settings: Settings,
) -> None:
    """target (or log(target)) ~ metric + (1 | annotator) [+ (1 | item) when items are shared], per metric."""
    y_all = data[target].to_numpy(float)
    usable = np.ones(len(data), dtype=bool)
    label = target
    if settings.log_target:
        usable = y_all > 0
        label = f"log({target})"
        y_all = np.log(np.where(usable, y_all, 1.0))
    columns = {"annotator": annotator, "item": item}
    codes = {
        factor: pd.factorize(data[column].fillna("").astype(str))[0]
        for factor, column in columns.items()
        if column in data
    }
    for name, result in results.items():
        if result.pearson is None:
            continue
        x_all = data[name].to_numpy(float)
        rows = np.isfinite(x_all) & usable
        factors = {factor: values[rows] for factor, values in codes.items()}
        if "item" in factors and np.bincount(factors["item"]).max(initial=0) < 2:
            del factors["item"]  # no item is shared: an item intercept would be the residual
        result.mixed = mixed_model(
            x_all[rows],
            y_all[rows],
            factors,
            metric=name,
            target=label,
            confidence=settings.confidence,
            engine=settings.mixed_engine,
        )
        left_out = int((np.isfinite(x_all) & ~usable).sum())
        if left_out:
            result.mixed.messages.append(f"{left_out} rows with {target} <= 0 have no logarithm and were left out")


def effort_model_fit(
    data: pd.DataFrame,
    results: Mapping[str, MetricResult],
    *,
    target: str,
    annotator: str,
    settings: Settings,
    tables: FoldTables,
    light: bool = False,
) -> EffortModel:
    """Usable metrics (not constant, at most half missing), complete rows only; `light`: the random-CV R²
    alone (no contributions, no grouped CV)."""
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
    rows = data if complete.all() else data.loc[complete]  # not a copy of every column when nothing is dropped
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
        fold_tables={RANDOM_CV: tables.tables(complete)[RANDOM_CV]} if light else tables.tables(complete),
        contributions=not light,
    )
    model.dropped, model.excluded_metrics = dropped, excluded
    model.index = rows.index.to_numpy()
    model.messages = notes + model.messages
    if annotator in rows and rows[annotator].nunique() == 1:
        model.messages.append("one annotator only: no annotator effect in the model")
    return model
