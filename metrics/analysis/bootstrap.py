"""Paired bootstrap over items of the difference between two correlations with the target.

Pure: numpy (no Django). Williams's test assumes normal data and independent rows; in a pooled
study the edits of one item are not independent. This resamples items (all of an item's edits
together) with replacement, recomputes both correlations on every resample from the same rows
(paired), and reports the percentile interval of their difference.

Each resample is a vector of counts per item; every statistic a Pearson r needs (sums, squares
and cross products, per item) is summed once, so a resample costs one matrix product instead of
a pass over the rows. Values are centred and scaled first (r does not change), so the sums do
not lose precision. Resamples are drawn in chunks from numpy's default_rng(seed): the same seed
gives the same interval, and every metric is compared on the same resamples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CHUNK = 100  # resamples per matrix product: bounds memory at CHUNK x items counts


@dataclass
class BootstrapDifference:
    best: str
    n: int  # rows where the target and both metrics are present
    units: int  # items resampled (rows, when the selection has no item column)
    unit: str  # "item" or "row"
    difference: float  # oriented r of the best metric minus this metric's, on the rows as they are
    ci: tuple[float, float]
    resamples: int
    seed: int
    excludes_zero: bool  # the interval lies above zero: the best metric is better on these items


def resample_counts(units: int, resamples: int, seed: int):
    """Chunks of a (resamples, units) array: how often each unit is drawn in each resample. A chunk's
    resamples are drawn one after the other from the one stream (the draws a (chunk, units) call gives) and
    counted into the chunk as they come: no (chunk, units) array of draws beside the counts."""
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        counts = np.empty((size, units))
        for row in range(size):
            counts[row] = np.bincount(rng.integers(0, units, size=units), minlength=units)
        yield counts


def _scaled(values: np.ndarray) -> np.ndarray:
    sd = values.std()
    return (values - values.mean()) / (sd if sd > 0 else 1.0)


def _unit_sums(codes: np.ndarray, units: int, y: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(units, 9): count, the three sums, the three squares and the two cross products with y, per unit."""
    y, a, b = _scaled(y), _scaled(a), _scaled(b)
    columns = (np.ones_like(y), y, a, b, y * y, a * a, b * b, y * a, y * b)
    return np.column_stack([np.bincount(codes, weights=c, minlength=units) for c in columns])


def _differences(totals: np.ndarray) -> np.ndarray:
    """r(y, a) - r(y, b) from summed statistics (last axis: the 9 sums of _unit_sums)."""
    n, sy, sa, sb, syy, saa, sbb, sya, syb = np.moveaxis(totals, -1, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r_a = (sya - sy * sa / n) / np.sqrt((syy - sy * sy / n) * (saa - sa * sa / n))
        r_b = (syb - sy * sb / n) / np.sqrt((syy - sy * sy / n) * (sbb - sb * sb / n))
    return r_a - r_b


@dataclass
class Pair:
    """One comparison: the target y and two (oriented) metrics a and b, on the rows `rows` keeps."""

    y: np.ndarray
    a: np.ndarray
    b: np.ndarray
    rows: np.ndarray  # mask over the units' rows


def paired_differences(
    codes: np.ndarray, pairs: list[Pair], *, resamples: int = 1000, seed: int = 42, confidence: float = 0.95
) -> list[tuple[float, tuple[float, float], int]]:
    """For every pair: r(y, a) - r(y, b) on its rows, the percentile interval of that difference
    over resamples of the units (codes: one unit per row), and the number of units resampled.

    Pairs whose rows cover the same units are resampled together, on the same draws. A resample
    in which a correlation is undefined (a constant column drawn) is left out of the interval.
    """
    results: dict[int, tuple[float, tuple[float, float], int]] = {}  # by pair index
    by_units: dict[bytes, list[int]] = {}
    for i, pair in enumerate(pairs):
        present = np.zeros(int(codes.max(initial=-1)) + 1, dtype=bool)
        present[codes[pair.rows]] = True
        by_units.setdefault(np.packbits(present).tobytes() + present.size.to_bytes(8, "little"), []).append(i)
    tail = (1 - confidence) / 2 * 100
    for members in by_units.values():
        relabel: dict[bytes, np.ndarray] = {}  # pairs on the same rows (the usual case) share their unit codes
        relabelled = [relabel.setdefault(pairs[i].rows.tobytes(), _dense_codes(codes[pairs[i].rows])) for i in members]
        units = int(relabelled[0].max()) + 1
        stacked = np.stack(
            [
                _unit_sums(
                    local, units, pairs[i].y[pairs[i].rows], pairs[i].a[pairs[i].rows], pairs[i].b[pairs[i].rows]
                )
                for i, local in zip(members, relabelled, strict=True)
            ]
        )  # (pairs, units, 9)
        flat = stacked.transpose(1, 0, 2).reshape(units, -1)
        # The target's and the best metric's sums are the same in every pair on the same rows: each
        # distinct column is drawn once (the product with the counts is most of the work).
        distinct: dict[bytes, int] = {}
        inverse = np.array([distinct.setdefault(flat[:, c].tobytes(), len(distinct)) for c in range(flat.shape[1])])
        columns = np.ascontiguousarray(flat[:, np.unique(inverse, return_index=True)[1]])  # first of each, in id order
        drawn = np.vstack([counts @ columns for counts in resample_counts(units, resamples, seed)])[:, inverse]
        differences = _differences(drawn.reshape(resamples, len(members), 9))
        observed = _differences(stacked.sum(axis=1))
        for j, i in enumerate(members):
            finite = differences[:, j][np.isfinite(differences[:, j])]
            low, high = np.percentile(finite, [tail, 100 - tail]) if finite.size else (np.nan, np.nan)
            results[i] = (float(observed[j]), (float(low), float(high)), units)
    return [results[i] for i in range(len(pairs))]


def _dense_codes(values: np.ndarray) -> np.ndarray:
    """Codes 0 .. k-1 in order of the values (the same units get the same codes in every pair)."""
    return np.unique(values, return_inverse=True)[1]
