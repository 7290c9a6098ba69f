"""The effort model: least squares on every usable metric, the text lengths and the annotator.

Pure: numpy and pandas (no Django).
Ordinary least squares on the usable metrics (standardised), the length in characters of
the original and of the edited text, and one-hot annotators (first dropped). Scored by
repeated K-fold; the contribution of an input is its drop-column importance: CV R² of the
full model minus CV R² refitted without it (the annotator one-hot columns count as one
input), on the same folds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from metrics.analysis.common import (
    ANNOTATOR,
    DEFAULT_SETTINGS,
    EDITED_LENGTH,
    ORIGINAL_LENGTH,
    CVScore,
    Settings,
    cv_score,
    is_constant,
)
from metrics.analysis.folds import ANNOTATOR_CV, ITEM_CV, RANDOM_CV, fold_count, fold_ids


@dataclass
class EffortModel:
    inputs: list[str]
    n: int
    dropped: int
    r2_cv: CVScore | None = None
    r2_cv_item: CVScore | None = None
    r2_cv_annotator: CVScore | None = None
    contributions: dict[str, float] = field(default_factory=dict)
    coefficients: dict[str, float] = field(default_factory=dict)
    excluded_metrics: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    method: str = (
        "ordinary least squares on standardised inputs; R² by repeated K-fold CV (random, grouped by item, "
        "grouped by annotator without the annotator input); contribution = drop-column importance (random-CV R² "
        "of the full model minus random-CV R² without the input)"
    )
    # Out-of-fold predictions of the first repeat, for the predicted-vs-measured plot;
    # not part of the JSON (one value per edit).
    predicted: np.ndarray | None = field(default=None, repr=False)
    measured: np.ndarray | None = field(default=None, repr=False)
    index: np.ndarray | None = field(default=None, repr=False)  # the input frame's index labels of those rows


def _standardise(column: np.ndarray) -> np.ndarray:
    sd = column.std()
    return (column - column.mean()) / sd if sd > 0 else column - column.mean()


def effort_model(
    frame: pd.DataFrame,
    *,
    metrics: Sequence[str],
    target: str,
    annotator: str | None = ANNOTATOR,
    settings: Settings = DEFAULT_SETTINGS,
    fold_tables: Mapping[str, np.ndarray] | None = None,
    contributions: bool = True,
) -> EffortModel:
    """Repeated-CV R² of OLS on metrics + text lengths + annotator, with drop-column contributions.

    The frame must already be restricted to complete rows; lengths come from the
    `original_length` / `edited_length` columns, or else the `original` / `edited` texts.
    `fold_tables` (scheme -> fold table, folds.py) default to the random scheme alone; the
    item-grouped CV scores the full model, the annotator-grouped one the model without the
    annotator input (an unseen person has no coefficient of their own). Without `contributions` the
    drop-column refits are left out (contributions stay empty).
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
    # One-hot annotators, the first (in sorted order) dropped, as pd.get_dummies(drop_first=True) codes them;
    # written straight into the design matrix (a frame of dummies first was a second copy of it).
    annotator_codes = None
    if annotator and annotator in frame and frame[annotator].nunique() > 1:
        annotator_codes = pd.Categorical(frame[annotator].astype(str)).codes
        groups[ANNOTATOR] = [np.empty(0)] * (int(annotator_codes.max()))
    names = list(groups)
    model = EffortModel(inputs=names, n=len(frame), dropped=0)
    if not names:
        model.messages.append("no usable input for the effort model")
        return model

    slices: dict[str, list[int]] = {}
    width = 1
    for name in names:
        slices[name] = list(range(width, width + len(groups[name])))
        width += len(groups[name])
    design = np.empty((len(frame), width))  # as np.column_stack lays it out: the same Gram matrices
    design[:, 0] = 1.0
    for name in names:
        if name == ANNOTATOR:
            assert annotator_codes is not None  # the annotator input is there only with its codes
            for level, position in enumerate(slices[name], start=1):
                np.equal(annotator_codes, level, out=design[:, position], casting="unsafe")
        else:
            design[:, slices[name][0]] = groups[name][0]
    del groups
    y = frame[target].to_numpy(float)
    tables = dict(fold_tables or {})
    if RANDOM_CV not in tables:
        tables[RANDOM_CV] = fold_ids(len(y), folds=settings.cv_folds, repeats=settings.cv_repeats, seed=settings.seed)

    everything = list(range(design.shape[1]))
    column_sets = [everything]
    if contributions:
        column_sets += [[c for c in everything if c not in slices[name]] for name in names]
    cv_scores, predicted = _ols_cv(design, y, tables[RANDOM_CV], column_sets)
    model.r2_cv = cv_scores[0]
    if ITEM_CV in tables:
        model.r2_cv_item = _ols_cv(design, y, tables[ITEM_CV], [everything])[0][0]
    if ANNOTATOR_CV in tables:
        without = [c for c in everything if c not in slices.get(ANNOTATOR, [])]
        model.r2_cv_annotator = _ols_cv(design, y, tables[ANNOTATOR_CV], [without])[0][0]
    model.predicted, model.measured = predicted, y
    for name, reduced in zip(names if contributions else [], cv_scores[1:], strict=True):
        model.contributions[name] = model.r2_cv.mean - reduced.mean
    beta = np.linalg.lstsq(design, y, rcond=None)[0]
    for name in names:
        if name == ANNOTATOR:
            continue
        model.coefficients[name] = float(beta[slices[name][0]])
    return model


def _ols_cv(
    design: np.ndarray, y: np.ndarray, fold_table: np.ndarray, column_sets: list[list[int]]
) -> tuple[list[CVScore], np.ndarray]:
    """OLS on each column set, scored on the fold table; out-of-fold predictions of set 0, repeat 0.

    Each fold's training Gram matrix is the total minus the test part's, so a fold costs
    one pass over its test rows for every column set together.
    """
    folds = fold_count(fold_table)
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
    return [cv_score(per_set[:, j].tolist()) for j in range(n_sets)], first_predictions
