"""Which rows are test rows: the published protocol's split and the repeated K-fold tables.

Pure: numpy and scikit-learn's splitters (no Django). A fold table is a (repeats, n)
array giving every row's test fold in every repeat, so every estimator (KNN, the effort
model) is scored on the very same folds.

Three schemes, each repeated with the same seed:
- `random`: RepeatedKFold(folds, repeats, seed), rows shuffled regardless of who or what;
- `item`: GroupKFold(shuffle=True) by item: all edits of an item fall in one fold, so no
  item is on both sides of a split (a segment post-edited by several people cannot leak);
- `annotator`: leave one annotator out (LeaveOneGroupOut, each annotator a fold of their own) when
  there are at most 20 annotators, else GroupKFold(shuffle=True) by annotator: the test edits come
  from people the model has not seen.
The grouped repeats draw their shuffles from one RandomState(seed), as RepeatedKFold does.
Groups are coded as scikit-learn codes them (`group_codes`: np.unique of the ids as strings, so in
sorted order), so that on the rows analysed, in the same order,

    rng = np.random.RandomState(seed)
    for repeat in range(repeats):
        GroupKFold(n_splits=folds, shuffle=True, random_state=rng).split(X, y, groups=ids)

gives the very same test folds, repeat by repeat and fold by fold (README: "Rerunning a figure").
Leaving one group out is the same partition in every repeat, so it is computed once (one repeat,
no sd); that is also what GroupKFold gives whenever there are no more groups than folds.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from sklearn.model_selection import LeaveOneGroupOut, RepeatedKFold, train_test_split

from metrics.analysis.common import Settings

RANDOM_CV = "random"
ITEM_CV = "item"
ANNOTATOR_CV = "annotator"
SCHEMES = (RANDOM_CV, ITEM_CV, ANNOTATOR_CV)
LEAVE_ONE_ANNOTATOR_OUT_UP_TO = 20


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


def group_fold_ids(
    groups: np.ndarray, *, folds: int, repeats: int, seed: int, leave_one_out_up_to: int = 0
) -> np.ndarray | None:
    """(repeats, n) array of test folds from repeated, shuffled GroupKFold; None below 2 groups.

    `groups` holds one group code per row. With no more groups than `folds` or than
    `leave_one_out_up_to`, each group is a fold of its own (LeaveOneGroupOut), in one repeat.
    """
    n_groups = np.unique(groups).size
    if n_groups < 2:
        return None
    if n_groups <= max(folds, leave_one_out_up_to):
        ids = np.empty((1, groups.size), dtype=np.int16)
        for fold, (_, test) in enumerate(LeaveOneGroupOut().split(groups, groups=groups)):
            ids[0, test] = fold
        return ids
    # GroupKFold(shuffle=True) permutes the distinct groups once per split() and cuts the permutation
    # with np.array_split; np.isin then finds each part's rows. The same partition, read off the
    # permutation directly (tests compare it with GroupKFold): np.isin on 100,000 rows was most of the time.
    distinct, codes = np.unique(groups, return_inverse=True)
    rng = np.random.RandomState(seed)
    ids = np.empty((repeats, groups.size), dtype=np.int16)
    part_of = np.empty(distinct.size, dtype=np.int16)
    for r in range(repeats):
        order = rng.permutation(distinct.size)
        for part, members in enumerate(np.array_split(order, folds)):
            part_of[members] = part
        ids[r] = part_of[codes]
    return ids


def group_codes(ids) -> np.ndarray:
    """One integer code per row, as GroupKFold and LeaveOneGroupOut code groups: the index of the
    row's id (as a string) among the sorted distinct ids (np.unique)."""
    return np.unique(np.asarray(ids).astype(str), return_inverse=True)[1].reshape(-1)


def fold_count(table: np.ndarray) -> int:
    return int(table.max()) + 1 if table.size else 0


class FoldTables:
    """The fold tables of the rows a mask keeps, for every scheme, made once per mask.

    `groups` maps a grouped scheme to one integer code per row of the full frame (None
    when the frame has no such column); the random scheme needs none.
    """

    def __init__(self, *, folds: int, repeats: int, seed: int, groups: Mapping[str, np.ndarray | None]):
        self.folds, self.repeats, self.seed = folds, repeats, seed
        self.groups = dict(groups)
        self._cache: dict[tuple[str, bytes], np.ndarray | None] = {}

    def table(self, scheme: str, mask: np.ndarray) -> np.ndarray | None:
        key = (scheme, np.packbits(mask).tobytes())
        if key not in self._cache:
            self._cache[key] = self._make(scheme, mask)
        return self._cache[key]

    def tables(self, mask: np.ndarray) -> dict[str, np.ndarray]:
        """Every scheme that can be formed on these rows."""
        made = {scheme: self.table(scheme, mask) for scheme in SCHEMES}
        return {scheme: table for scheme, table in made.items() if table is not None}

    def _make(self, scheme: str, mask: np.ndarray) -> np.ndarray | None:
        n = int(mask.sum())
        if scheme == RANDOM_CV:
            return fold_ids(n, folds=self.folds, repeats=self.repeats, seed=self.seed)
        codes = self.groups.get(scheme)
        if codes is None:
            return None
        one_out = LEAVE_ONE_ANNOTATOR_OUT_UP_TO if scheme == ANNOTATOR_CV else 0
        return group_fold_ids(
            codes[mask], folds=self.folds, repeats=self.repeats, seed=self.seed, leave_one_out_up_to=one_out
        )


def light_tables(tables: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The fold tables the figures without outliers use: random and item-grouped (not by annotator)."""
    return {scheme: table for scheme, table in tables.items() if scheme != ANNOTATOR_CV}


def fold_tables_for(settings: Settings, groups: Mapping[str, np.ndarray | None], rows: np.ndarray) -> FoldTables:
    """Fold tables for masks over the frame rows `rows` keeps."""
    return FoldTables(
        folds=settings.cv_folds,
        repeats=settings.cv_repeats,
        seed=settings.seed,
        groups={scheme: None if codes is None else codes[rows] for scheme, codes in groups.items()},
    )
