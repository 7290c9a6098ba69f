"""Output agreement: how far editors' post-edits of the same item are from each other.

Pure (numpy; no Django). Input: flat arrays, one entry per post-edit (unit = item, editor, text), and
distance functions f(a, b) -> float (metrics.text's METRICS[name].func, or a batch form of them).

- Every unordered pair of post-edits of one item by two different editors gets the symmetric distance
  d(a, b) = (f(a, b) + f(b, a)) / 2 (compression distance, TER and chrF are not symmetric).
- Per item: the mean over its pairs. Per editor: the mean distance of their post-edits to the other
  editors' post-edits of the same items (every pair they are in, equally weighted).
- z: (editor mean - mean over editors) / sd over editors (ddof=1). With k editors no z can exceed
  (k - 1)/sqrt(k) (1.79 for 5), so a z cut-off cannot flag; the flag uses the modified z-score of
  Iglewicz & Hoaglin (1993): M = 0.6745 (x - median) / MAD, flagged when M > 3.5 in the "far" direction
  (far for a distance, low for a similarity such as chrF). When MAD is 0 the mean absolute deviation
  stands in (M = (x - median) / (1.253314 MeanAD)); with under 3 editors nothing is flagged. When all
  the others' means are equal, the far one's M is (k)/1.253314: flagged from k = 5 editors on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

MODIFIED_Z_CUTOFF = 3.5
MIN_EDITORS_TO_FLAG = 3

BatchDistance = Callable[[Sequence[tuple[str, str]]], Sequence[float]]


@dataclass
class EditorDistance:
    editor: str
    pairs: int
    mean: float
    z: float | None
    modified_z: float | None
    flagged: bool


@dataclass
class OutputDistance:
    metric: str
    direction: str  # "effort" (a distance: higher = further apart) or "similarity" (chrF)
    pairs: int
    items: int
    mean: float | None
    item_means: dict[str, float] = field(default_factory=dict)
    editors: list[EditorDistance] = field(default_factory=list)


def overlap_pairs(units: Sequence | np.ndarray, editors: Sequence | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j), i < j, of entries in the same unit by different editors, grouped by unit."""
    units_a = np.asarray(units)
    editors_a = np.asarray(editors)
    order = np.argsort(units_a, kind="stable")
    starts = np.flatnonzero(np.r_[True, units_a[order][1:] != units_a[order][:-1]])
    ends = np.r_[starts[1:], order.size]
    left: list[np.ndarray] = []
    right: list[np.ndarray] = []
    for size in np.unique(ends - starts):
        if size < 2:
            continue
        rows = np.flatnonzero(ends - starts == size)
        block = order[starts[rows][:, None] + np.arange(size)]  # units of this size x their entries
        a, b = np.triu_indices(size, k=1)
        left.append(block[:, a].ravel())
        right.append(block[:, b].ravel())
    if not left:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    i, j = np.concatenate(left), np.concatenate(right)
    keep = editors_a[i] != editors_a[j]
    i, j = i[keep], j[keep]
    by_unit = np.argsort(units_a[i], kind="stable")
    return i[by_unit], j[by_unit]


def modified_z(values: np.ndarray) -> np.ndarray | None:
    """Iglewicz & Hoaglin's modified z-scores (MeanAD stand-in when MAD is 0); None when all are equal."""
    median = float(np.median(values))
    deviations = np.abs(values - median)
    mad = float(np.median(deviations))
    if mad > 0:
        return 0.6745 * (values - median) / mad
    mean_ad = float(np.mean(deviations))
    if mean_ad > 0:
        return (values - median) / (1.253314 * mean_ad)
    return None


def output_distances(
    units: Sequence | np.ndarray,
    editors: Sequence | np.ndarray,
    texts: Sequence[str],
    *,
    distances: Mapping[str, BatchDistance],
    directions: Mapping[str, str],
) -> list[OutputDistance]:
    """One OutputDistance per distance function (see module doc)."""
    units_a = np.asarray(units).astype(str)
    editors_a = np.asarray(editors).astype(str)
    i, j = overlap_pairs(units_a, editors_a)
    forward = [(texts[a], texts[b]) for a, b in zip(i.tolist(), j.tolist(), strict=True)]
    backward = [(b, a) for a, b in forward]
    results = []
    for name, batch in distances.items():
        direction = directions.get(name, "effort")
        if not forward:
            results.append(OutputDistance(name, direction, 0, 0, None))
            continue
        value = (np.asarray(batch(forward), dtype=float) + np.asarray(batch(backward), dtype=float)) / 2.0
        results.append(_summarise(name, direction, units_a, editors_a, i, j, value))
    return results


def _summarise(
    name: str, direction: str, units: np.ndarray, editors: np.ndarray, i: np.ndarray, j: np.ndarray, value: np.ndarray
) -> OutputDistance:
    item_codes, item_of = np.unique(units[i], return_inverse=True)
    item_means = np.bincount(item_of, weights=value) / np.bincount(item_of)
    names, codes = np.unique(np.concatenate([editors[i], editors[j]]), return_inverse=True)
    both = np.concatenate([value, value])
    counts = np.bincount(codes, minlength=names.size)
    means = np.bincount(codes, weights=both, minlength=names.size) / counts
    z = (means - means.mean()) / means.std(ddof=1) if names.size >= 2 and means.std(ddof=1) > 0 else None
    mz = modified_z(means) if names.size >= MIN_EDITORS_TO_FLAG else None
    far = mz if direction == "effort" else (-mz if mz is not None else None)
    editors_out = [
        EditorDistance(
            editor=str(editor),
            pairs=int(counts[k]),
            mean=float(means[k]),
            z=None if z is None else float(z[k]),
            modified_z=None if mz is None else float(mz[k]),
            flagged=bool(far is not None and far[k] > MODIFIED_Z_CUTOFF),
        )
        for k, editor in enumerate(names)
    ]
    return OutputDistance(
        metric=name,
        direction=direction,
        pairs=int(value.size),
        items=int(item_codes.size),
        mean=float(value.mean()),
        item_means={str(u): float(m) for u, m in zip(item_codes, item_means, strict=True)},
        editors=editors_out,
    )
