"""KNN regression on one feature: the published protocol's R² and its repeated K-fold forms.

Pure: numpy and scikit-learn (no Django).
K nearest neighbours on the single raw metric value (a 1-D neighbour set does not change
under standardisation, so raw and standardised agree). Published protocol: one random
train/test split (80/20, seed 42, sklearn's train_test_split), R² on the test part.

Two estimators, side by side:
- `knn_r2_published` is the published code itself (scikit-learn's KNeighborsRegressor on
  the rows in import order). Metric values are often integers, so many training points tie
  at the K-th distance; scikit-learn keeps whichever its tree returns first, so the figure
  depends on the row order and on the tree.
- the tie-averaged estimator (`knn_r2_tie_averaged`, and every cross-validated figure):
  the tied points share the remaining weight equally, the average over every way of
  breaking the tie, so it depends on neither; without ties both are equal.
Repeated K-fold: a fold table per scheme (folds.py: random, by item, by annotator); a
repeat's R² is the mean of its folds' R² (as cross_val_score), and we report the mean and
the sample sd (ddof=1) over repeats.
Tie-averaged neighbours come from the sorted training values (prefix counts and a short
binary search, vectorised over the queries), not a tree: exact, one sort per metric.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from sklearn.metrics import r2_score as sklearn_r2_score
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsRegressor

from metrics.analysis.common import DEFAULT_SETTINGS, CVScore, Settings, cv_score
from metrics.analysis.folds import RANDOM_CV, fold_count, fold_ids, split_mask


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


def knn_r2_published(
    x: np.ndarray, y: np.ndarray, *, k: int = 5, test_size: float = 0.2, seed: int = 42
) -> float | np.ndarray:
    """The published protocol with scikit-learn's own objects, exactly as its code runs it:
    train_test_split(X, y, test_size, random_state=seed) on the rows in the order given,
    KNeighborsRegressor(n_neighbors=k) with its default algorithm (ties at the K-th distance
    broken as its tree returns them), r2_score on the test part.

    y may be 2-D (one column per target): the neighbours do not depend on y, so each column's
    R² is the one a fit on that column alone gives. K above the training rows is lowered to them.
    """
    x_train, x_test, y_train, y_test = train_test_split(x.reshape(-1, 1), y, test_size=test_size, random_state=seed)
    model = KNeighborsRegressor(n_neighbors=min(k, x_train.shape[0])).fit(x_train, y_train)
    scores = sklearn_r2_score(y_test, model.predict(x_test), multioutput="raw_values")
    return float(scores[0]) if y.ndim == 1 else scores


def knn_scores(
    x: np.ndarray,
    y: np.ndarray,
    *,
    settings: Settings = DEFAULT_SETTINGS,
    fold_tables: Mapping[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Tie-averaged single-feature KNN R², for one target (y 1-D) or several sharing the
    neighbours (y 2-D).

    Returns (the published split's R² per target, {scheme: (repeats, targets) repeated-CV
    R²}) where a repeat's R² is the mean of its folds'; `fold_tables` default to the random
    scheme alone.
    """
    ys2 = y.reshape(y.shape[0], -1)
    if fold_tables is None:
        fold_tables = {
            RANDOM_CV: fold_ids(x.size, folds=settings.cv_folds, repeats=settings.cv_repeats, seed=settings.seed)
        }
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], ys2[order]
    if ys.shape[1] == 1:
        ys = ys[:, 0]  # one target: 1-D arrays are faster throughout
    groups = sorted_groups(xs)
    split = split_mask(x.size, test_size=settings.test_size, seed=settings.seed)[order]
    split_r2 = np.atleast_1d(_knn_r2_masked(xs, ys, groups, split, settings.k))
    cv = {}
    for scheme, table in fold_tables.items():
        folds = fold_count(table)
        scores = np.empty((table.shape[0], ys2.shape[1]))
        for r, repeat in enumerate(table[:, order]):
            scores[r] = np.mean(
                [_knn_r2_masked(xs, ys, groups, repeat == fold, settings.k) for fold in range(folds)], axis=0
            )
        cv[scheme] = scores
    return split_r2, cv


def knn_r2_tie_averaged(x: np.ndarray, y: np.ndarray, *, k: int = 5, test_size: float = 0.2, seed: int = 42) -> float:
    """The published protocol's split, with the training points tied at the K-th distance
    sharing its weight (order-independent); equal to knn_r2_published when nothing ties."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    test = split_mask(x.size, test_size=test_size, seed=seed)[order]
    return float(_knn_r2_masked(xs, y[order], sorted_groups(xs), test, k))


def knn_r2_cv(
    x: np.ndarray, y: np.ndarray, *, k: int = 5, folds: int = 5, repeats: int = 10, seed: int = 42
) -> CVScore:
    """Repeated K-fold R² of tie-averaged single-feature KNN: mean and sd over repeats."""
    settings = Settings(k=k, cv_folds=folds, cv_repeats=repeats, seed=seed, min_edits=max(folds, 4))
    _, cv = knn_scores(x, y, settings=settings)
    return cv_score(cv[RANDOM_CV][:, 0].tolist())
