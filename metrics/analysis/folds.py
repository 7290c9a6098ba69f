"""Which rows are test rows: the published protocol's split and the repeated K-fold tables.

Pure: numpy and scikit-learn's splitters (no Django). A fold table is a (repeats, n)
array giving every row's test fold in every repeat, so every estimator (KNN, the effort
model) is scored on the very same folds.
"""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import RepeatedKFold, train_test_split


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
