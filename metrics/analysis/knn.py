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
Tie-averaged neighbours come from the sorted values, not a tree: one sort per metric, then for
every row a compiled walk outwards over the rows of the other folds (numba), all folds of a
repeat in one pass; exact.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numba import njit
from sklearn.metrics import r2_score as sklearn_r2_score
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsRegressor

from metrics.analysis.common import DEFAULT_SETTINGS, CVScore, Settings, cv_score
from metrics.analysis.folds import RANDOM_CV, fold_ids, split_mask


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


SHORT_RUN = 16  # runs of equal values up to this long are summed directly; longer ones once per fold split


@njit(cache=True)
def _fold_predictions(  # pragma: no cover - compiled; exercised through knn_scores and knn_predict
    xs: np.ndarray,
    ys: np.ndarray,
    run_start: np.ndarray,
    run_end: np.ndarray,
    fold: np.ndarray,
    n_folds: int,
    k: int,
    only_fold: int,
    keep: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tie-averaged K-nearest-neighbour means of every row, trained on the rows of the other folds.

    xs is sorted ascending; ys (n, targets), fold (n,) and the runs of equal values follow it.
    Rows of `only_fold` alone are predicted when it is >= 0 (the others stay NaN). For a row q of
    fold f, walking outwards from q over the rows of other folds takes the K nearest; d is the
    K-th distance. Rows closer than d count whole; the training rows at exactly d (the runs of
    equal values at q - d and q + d, which may extend far beyond the K taken) share the remaining
    K - inside slots equally. A long run's rows per fold are counted and summed once. Rows of one
    run in one fold get the same prediction, computed once.
    """
    n, n_targets = ys.shape
    fold_size = np.zeros(n_folds, np.int64)
    fold_mean = np.zeros((n_folds, n_targets))
    for i in range(n):
        fold_size[fold[i]] += 1
        for t in range(n_targets):
            fold_mean[fold[i], t] += ys[i, t]
    for g in range(n_folds):
        for t in range(n_targets):
            fold_mean[g, t] /= max(fold_size[g], 1)
    # Each fold's R² as sklearn's r2_score computes it: sums of squares about the fold's own mean.
    residual = np.zeros((n_folds, n_targets))
    total = np.zeros((n_folds, n_targets))
    # Per long run (indexed by its start), its rows and their sums per fold: filled when first needed.
    run_done = np.zeros(n, np.bool_)
    run_count = np.empty((n, n_folds), np.int64)
    run_sum = np.empty((n, n_folds, n_targets))

    # The predictions themselves are kept on request (knn_predict); the scores need only the sums.
    predictions = np.full((n if keep else 0, n_targets), np.nan)
    value_of = np.empty(n_targets)
    taken_distance = np.empty(k)
    taken_position = np.empty(k, np.int64)
    inside = np.empty(n_targets)
    tied = np.empty(n_targets)
    cache = np.empty((n_folds, n_targets))
    cached = np.zeros(n_folds, np.bool_)
    current_run = -1
    for i in range(n):
        f = fold[i]
        if only_fold >= 0 and f != only_fold:
            continue
        if run_start[i] != current_run:
            current_run = run_start[i]
            cached[:] = False
        if cached[f]:
            for t in range(n_targets):
                if keep:
                    predictions[i, t] = cache[f, t]
                residual[f, t] += (ys[i, t] - cache[f, t]) ** 2
                total[f, t] += (ys[i, t] - fold_mean[f, t]) ** 2
            continue
        kk = min(k, n - fold_size[f])
        if kk == 0:
            continue
        q = xs[i]
        left, right = i - 1, i + 1
        while left >= 0 and fold[left] == f:
            left -= 1
        while right < n and fold[right] == f:
            right += 1
        for j in range(kk):
            to_left = q - xs[left] if left >= 0 else np.inf
            to_right = xs[right] - q if right < n else np.inf
            if to_left <= to_right:
                taken_distance[j] = to_left
                taken_position[j] = left
                left -= 1
                while left >= 0 and fold[left] == f:
                    left -= 1
            else:
                taken_distance[j] = to_right
                taken_position[j] = right
                right += 1
                while right < n and fold[right] == f:
                    right += 1
        d = taken_distance[kk - 1]
        for t in range(n_targets):
            inside[t] = 0.0
            tied[t] = 0.0
        n_inside = 0
        left_tie, right_tie = -1, -1
        for j in range(kk):
            position = taken_position[j]
            if taken_distance[j] < d:
                n_inside += 1
                for t in range(n_targets):
                    inside[t] += ys[position, t]
            elif xs[position] <= q:
                left_tie = position
            else:
                right_tie = position
        if left >= 0 and q - xs[left] == d:
            left_tie = left
        if right < n and xs[right] - q == d:
            right_tie = right
        if d == 0:  # one run: q's own (right_tie, if any, is in it too)
            left_tie, right_tie = i, -1
        n_tied = 0
        for side in range(2):
            position = left_tie if side == 0 else right_tie
            if position < 0:
                continue
            a, b = run_start[position], run_end[position]
            if b - a <= SHORT_RUN:
                for j in range(a, b):
                    if fold[j] != f:
                        n_tied += 1
                        for t in range(n_targets):
                            tied[t] += ys[j, t]
                continue
            if not run_done[a]:
                run_count[a, :] = 0
                run_sum[a, :, :] = 0.0
                for j in range(a, b):
                    run_count[a, fold[j]] += 1
                    for t in range(n_targets):
                        run_sum[a, fold[j], t] += ys[j, t]
                run_done[a] = True
            for g in range(n_folds):
                if g != f:
                    n_tied += run_count[a, g]
                    for t in range(n_targets):
                        tied[t] += run_sum[a, g, t]
        for t in range(n_targets):
            value = inside[t]
            if n_tied > 0:
                value += (kk - n_inside) * tied[t] / n_tied
            value_of[t] = value / kk
            cache[f, t] = value_of[t]
            if keep:
                predictions[i, t] = value_of[t]
            residual[f, t] += (ys[i, t] - value_of[t]) ** 2
            total[f, t] += (ys[i, t] - fold_mean[f, t]) ** 2
        cached[f] = True
    return predictions, residual, total


def fold_predictions(
    xs: np.ndarray,
    ys: np.ndarray,
    runs: tuple[np.ndarray, np.ndarray],
    fold: np.ndarray,
    *,
    k: int,
    only: int = -1,
    keep: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """(predictions (n, targets), R² of each fold (folds, targets)): _fold_predictions with its arrays in
    the one layout it is compiled for. A fold whose truth is constant scores 1 if predicted exactly,
    else 0 (sklearn's convention)."""
    predictions, residual, total = _fold_predictions(
        np.ascontiguousarray(xs, dtype=np.float64),
        np.ascontiguousarray(ys.reshape(ys.shape[0], -1), dtype=np.float64),
        runs[0].astype(np.int64, copy=False),
        runs[1].astype(np.int64, copy=False),
        np.ascontiguousarray(fold, dtype=np.int8),  # a small array: the walk reads it most
        int(fold.max(initial=0)) + 1,
        int(k),
        int(only),
        bool(keep),
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.where(total > 0, 1.0 - residual / np.where(total > 0, total, 1.0), (residual == 0) * 1.0)
    return predictions, r2


def knn_predict(x_train: np.ndarray, y_train: np.ndarray, x_query: np.ndarray, k: int = 5) -> np.ndarray:
    """K-nearest-neighbour regression on one feature (ties shared), in the queries' order."""
    x = np.concatenate((x_train, x_query))
    fold = np.concatenate((np.zeros(x_train.size, np.int8), np.ones(x_query.size, np.int8)))
    y = np.concatenate((y_train, np.zeros(x_query.size)))
    order = np.argsort(x, kind="stable")
    xs = x[order]
    predicted = fold_predictions(xs, y[order], sorted_groups(xs), fold[order], k=k, only=1, keep=True)[0][:, 0]
    result = np.empty(x_query.size)
    result[order[fold[order] == 1] - x_train.size] = predicted[fold[order] == 1]
    return result


@njit(cache=True)
def _kd_query(  # pragma: no cover - compiled; exercised through knn_r2_published
    queries: np.ndarray,
    data: np.ndarray,
    idx_array: np.ndarray,
    idx_start: np.ndarray,
    idx_end: np.ndarray,
    is_leaf: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    k: int,
) -> np.ndarray:
    """scikit-learn's KDTree.query(queries, k) (single tree, depth first, results sorted) on one feature, for the
    tree's own arrays: the same visits in the same order, the same max-heap pushes, the same final sort (an
    insertion sort for k <= 15, stable), so the same neighbours in the same order. One difference, which changes
    no result: a node whose lower bound equals the heap's largest distance is skipped (scikit-learn skips it
    only when the bound is larger), since none of its points can enter the heap (a push of a distance equal to
    the largest is refused). With many equal values that is what makes a query cost log n instead of the
    number of rows tied with it."""
    n_queries = queries.size
    result = np.empty((n_queries, k), np.int64)
    distances = np.empty(k)
    indices = np.empty(k, np.int64)
    stack_node = np.empty(256, np.int64)
    stack_bound = np.empty(256)
    for q in range(n_queries):
        pt = queries[q]
        distances[:] = np.inf
        indices[:] = 0
        d_lo, d_hi = lower[0] - pt, pt - upper[0]
        half = 0.5 * ((d_lo + abs(d_lo)) + (d_hi + abs(d_hi)))
        stack_node[0], stack_bound[0], top = 0, half * half, 1
        while top > 0:
            top -= 1
            node, bound = stack_node[top], stack_bound[top]
            if bound >= distances[0]:
                continue
            if is_leaf[node]:
                for i in range(idx_start[node], idx_end[node]):
                    tmp = pt - data[idx_array[i]]
                    value = tmp * tmp
                    if value >= distances[0]:
                        continue
                    # heap_push (sklearn.utils._heap) of (value, idx_array[i]) onto the max-heap
                    current = 0
                    while True:
                        left = 2 * current + 1
                        right = left + 1
                        if left >= k:
                            break
                        elif right >= k:
                            if distances[left] > value:
                                swap = left
                            else:
                                break
                        elif distances[left] >= distances[right]:
                            if value < distances[left]:
                                swap = left
                            else:
                                break
                        else:
                            if value < distances[right]:
                                swap = right
                            else:
                                break
                        distances[current] = distances[swap]
                        indices[current] = indices[swap]
                        current = swap
                    distances[current] = value
                    indices[current] = idx_array[i]
                continue
            first, second = 2 * node + 1, 2 * node + 2
            d_lo, d_hi = lower[first] - pt, pt - upper[first]
            half = 0.5 * ((d_lo + abs(d_lo)) + (d_hi + abs(d_hi)))
            bound_first = half * half
            d_lo, d_hi = lower[second] - pt, pt - upper[second]
            half = 0.5 * ((d_lo + abs(d_lo)) + (d_hi + abs(d_hi)))
            bound_second = half * half
            # The closer child is visited first: pushed last.
            if bound_first <= bound_second:
                stack_node[top], stack_bound[top] = second, bound_second
                stack_node[top + 1], stack_bound[top + 1] = first, bound_first
            else:
                stack_node[top], stack_bound[top] = first, bound_first
                stack_node[top + 1], stack_bound[top + 1] = second, bound_second
            top += 2
        # NeighborsHeap._sort: sklearn.utils._sorting.simultaneous_sort, an insertion sort below 16 values
        for i in range(1, k):
            value, index = distances[i], indices[i]
            j = i
            while j > 0 and distances[j - 1] > value:
                distances[j] = distances[j - 1]
                indices[j] = indices[j - 1]
                j -= 1
            distances[j] = value
            indices[j] = index
        result[q] = indices
    return result


def published_predict(model: KNeighborsRegressor, x_test: np.ndarray) -> np.ndarray:
    """model.predict(x_test) of a fitted one-feature KNeighborsRegressor (uniform weights): its KD tree queried
    by _kd_query (the same neighbours, in the same order, as its own query gives), their targets averaged as
    predict averages them. Any other fit (another algorithm or metric, k above 15) is predicted by the model."""
    tree = getattr(model, "_tree", None)
    k = model.n_neighbors
    usual = (
        model._fit_method == "kd_tree"
        and model.effective_metric_ == "euclidean"
        and model.weights == "uniform"
        and x_test.ndim == 2
        and x_test.shape[1] == 1
        and 1 <= k <= 15
    )
    if not usual or tree is None:
        return model.predict(x_test)
    data, idx_array, node_data, node_bounds = tree.get_arrays()
    if data.shape[1] != 1 or k > data.shape[0]:
        return model.predict(x_test)
    neighbours = _kd_query(
        np.ascontiguousarray(x_test[:, 0], dtype=np.float64),
        np.ascontiguousarray(data[:, 0]),
        np.ascontiguousarray(idx_array, dtype=np.int64),
        np.ascontiguousarray(node_data["idx_start"], dtype=np.int64),
        np.ascontiguousarray(node_data["idx_end"], dtype=np.int64),
        np.ascontiguousarray(node_data["is_leaf"], dtype=np.int64),
        np.ascontiguousarray(node_bounds[0, :, 0]),
        np.ascontiguousarray(node_bounds[1, :, 0]),
        int(k),
    )
    y = model._y.reshape((-1, 1)) if model._y.ndim == 1 else model._y
    predicted = np.mean(y[neighbours], axis=1)
    return predicted.ravel() if model._y.ndim == 1 else predicted


def knn_r2_published(
    x: np.ndarray, y: np.ndarray, *, k: int = 5, test_size: float = 0.2, seed: int = 42
) -> float | np.ndarray:
    """The published protocol with scikit-learn's own objects, exactly as its code runs it:
    train_test_split(X, y, test_size, random_state=seed) on the rows in the order given,
    KNeighborsRegressor(n_neighbors=k) with its default algorithm (ties at the K-th distance
    broken as its tree returns them), r2_score on the test part. The prediction is
    published_predict's: the model's own tree, queried without visiting nodes that cannot change
    the neighbours (scikit-learn visits every node tied with the K-th distance: with many equal
    values, a query costs the number of rows tied with it); the same neighbours, the same figure.

    y may be 2-D (one column per target): the neighbours do not depend on y, so each column's
    R² is the one a fit on that column alone gives. K above the training rows is lowered to them.
    """
    x_train, x_test, y_train, y_test = train_test_split(x.reshape(-1, 1), y, test_size=test_size, random_state=seed)
    model = KNeighborsRegressor(n_neighbors=min(k, x_train.shape[0])).fit(x_train, y_train)
    scores = sklearn_r2_score(y_test, published_predict(model, x_test), multioutput="raw_values")
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
    runs = sorted_groups(xs)
    split = split_mask(x.size, test_size=settings.test_size, seed=settings.seed)[order].astype(np.int8)
    split_r2 = fold_predictions(xs, ys, runs, split, k=settings.k, only=1)[1][1]
    cv = {}
    for scheme, table in fold_tables.items():
        scores = np.empty((table.shape[0], ys2.shape[1]))
        for r, repeat in enumerate(table[:, order].astype(np.int8)):
            scores[r] = fold_predictions(xs, ys, runs, repeat, k=settings.k)[1].mean(axis=0)  # the mean of its folds'
        cv[scheme] = scores
    return split_r2, cv


def knn_r2_tie_averaged(x: np.ndarray, y: np.ndarray, *, k: int = 5, test_size: float = 0.2, seed: int = 42) -> float:
    """The published protocol's split, with the training points tied at the K-th distance sharing its
    weight (order-independent); equal to knn_r2_published when nothing ties."""
    settings = Settings(k=k, test_size=test_size, seed=seed, cv_repeats=1)
    split, _ = knn_scores(x, y, settings=settings, fold_tables={})
    return float(split[0])


def knn_r2_cv(
    x: np.ndarray, y: np.ndarray, *, k: int = 5, folds: int = 5, repeats: int = 10, seed: int = 42
) -> CVScore:
    """Repeated K-fold R² of tie-averaged single-feature KNN: mean and sd over repeats."""
    settings = Settings(k=k, cv_folds=folds, cv_repeats=repeats, seed=seed, min_edits=max(folds, 4))
    _, cv = knn_scores(x, y, settings=settings)
    return cv_score(cv[RANDOM_CV][:, 0].tolist())
