"""What the quality page shows beside the MQM scores: a system's score taken apart by category and severity,
two systems compared over the segments both were rated on, and a rated text cut into highlighted pieces.
Pure: no Django (docs/quality.md, "The quality page").

- contribution of (category, severity) to a system's score: the system score computed from that pair's
  errors only (the mean over the system's segments of the mean over each segment's raters of the weights of
  those errors). A score is linear in its errors, so a system's contributions add up to its score.
- comparison of systems A and B: over the n segments both have a score for (in segment order), d the
  differences score(A) - score(B), their mean, and the two-sided p-value of a paired permutation test:
  each segment's two scores swapped or not (d's sign flipped) at random, R = COMPARISON_RESAMPLES times,
  p = (1 + #{r: |mean(flips_r * d)| >= |mean(d)|}) / (1 + R), the flips drawn in one call,
  ``flips = 1 - 2 * np.random.default_rng(COMPARISON_SEED).integers(0, 2, size=(R, n), dtype=np.int8)``
  (COMPARISON_REPRODUCE). Not computed over more than COMPARISON_MAX_SEGMENTS shared segments.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from annotations.typology import Weights
from metrics.analysis.mqm import Rating

COMPARISON_SEED = 12345
COMPARISON_RESAMPLES = 1000
COMPARISON_MAX_SEGMENTS = 20_000
COMPARISON_TOLERANCE = 1e-9  # a resampled mean this close to the observed one counts as reaching it
COMPARISON_REPRODUCE = (
    "d = a - b (shared segments in segment order); flips = 1 - 2 * np.random.default_rng(seed).integers(0, 2, "
    "size=(R, d.size), dtype=np.int8); null = (flips * d).mean(axis=1); "
    "p = (1 + np.sum(np.abs(null) >= abs(d.mean()) - 1e-9)) / (1 + R)"
)
SEVERITY_RANK = {"neutral": 0, "minor": 1, "major": 2, "critical": 3}


@dataclass(frozen=True)
class Contribution:
    system: str
    category: str
    severity: str
    errors: int  # how many errors of this pair the system's ratings hold
    score: float  # its part of the system's MQM score


@dataclass(frozen=True)
class Comparison:
    a: str
    b: str
    segments: int  # rated for both
    mean_a: float | None
    mean_b: float | None
    difference: float | None  # mean of score(a) - score(b): below 0, a has the lower penalty
    p: float | None  # None below two shared segments


@dataclass(frozen=True)
class Piece:
    """A stretch of a text and the errors covering all of it (none: plain text)."""

    text: str
    severity: str | None  # the most severe covering error's severity
    labels: tuple[str, ...] = ()  # "category (severity)" of each covering error, in span order

    @property
    def depth(self) -> int:
        return len(self.labels)


def breakdown(ratings: Iterable[Rating], weights: Weights) -> list[Contribution]:
    """Each system's contributions, by system, then the largest first (then category, severity)."""
    raters: dict[tuple[str, str], set[str]] = defaultdict(set)
    sums: dict[tuple[str, str, str, str], float] = defaultdict(float)  # (system, segment, category, severity)
    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    for rating in ratings:
        raters[(rating.system, rating.segment)].add(rating.rater)
        for category, severity in rating.errors:
            sums[(rating.system, rating.segment, category, severity)] += weights.weight(category, severity)
            counts[(rating.system, category, severity)] += 1
    segments: dict[str, int] = defaultdict(int)
    for system, _ in raters:
        segments[system] += 1
    parts: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for (system, segment, category, severity), total in sums.items():
        parts[(system, category, severity)].append(total / len(raters[(system, segment)]))
    rows = [
        Contribution(
            system, category, severity, counts[(system, category, severity)], math.fsum(values) / segments[system]
        )
        for (system, category, severity), values in parts.items()
    ]
    rows.sort(key=lambda row: (row.system, -row.score, row.category, row.severity))
    return rows


def segment_order(seg_id: str) -> tuple[int, int | str]:
    """Segments by number, then those whose id is no number, by id (the avg_seg_scores files' order)."""
    return (0, int(seg_id)) if seg_id.isdigit() else (1, seg_id)


def paired_permutation_p(d: np.ndarray, *, seed: int = COMPARISON_SEED, resamples: int = COMPARISON_RESAMPLES) -> float:
    """The two-sided p-value of the paired (sign-flip) permutation test of mean(d) = 0 (module doc)."""
    flips = 1 - 2 * np.random.default_rng(seed).integers(0, 2, size=(resamples, d.size), dtype=np.int8)
    null = (flips * d).mean(axis=1)
    reached = int(np.sum(np.abs(null) >= abs(float(d.mean())) - COMPARISON_TOLERANCE))
    return (1 + reached) / (1 + resamples)


def compare_systems(
    segments: dict[tuple[str, str], float],
    *,
    seed: int = COMPARISON_SEED,
    resamples: int = COMPARISON_RESAMPLES,
) -> list[Comparison]:
    """Every pair of systems (in name order), compared over their shared segments (see module doc)."""
    by_system: dict[str, dict[str, float]] = defaultdict(dict)
    for (system, segment), score in segments.items():
        by_system[system][segment] = score
    comparisons = []
    for a, b in combinations(sorted(by_system), 2):
        shared = sorted(set(by_system[a]) & set(by_system[b]), key=segment_order)
        x = np.array([by_system[a][s] for s in shared], dtype=float)
        y = np.array([by_system[b][s] for s in shared], dtype=float)
        if not shared:
            comparisons.append(Comparison(a, b, 0, None, None, None, None))
            continue
        p = None
        if 2 <= len(shared) <= COMPARISON_MAX_SEGMENTS:
            p = paired_permutation_p(x - y, seed=seed, resamples=resamples)
        comparisons.append(Comparison(a, b, len(shared), float(x.mean()), float(y.mean()), float(np.mean(x - y)), p))
    return comparisons


def highlight(text: str, spans: Sequence[tuple[int | None, int | None, str, str]]) -> list[Piece]:
    """`text` cut at every span boundary; spans are (start, end, category, severity) character offsets, in
    any order, overlapping or not. Offsets outside the text are clamped to it, an inverted span is read
    from its smaller offset, a span without offsets or of no length covers nothing."""
    length = len(text)
    marked: list[tuple[int, int, str, str]] = []
    for start, end, category, severity in spans:
        if start is None or end is None:
            continue
        low, high = sorted((max(0, min(int(start), length)), max(0, min(int(end), length))))
        if low < high:
            marked.append((low, high, category, severity))
    if not marked:
        return [Piece(text, None)] if text else []
    cuts = sorted({0, length, *(s for s, _, _, _ in marked), *(e for _, e, _, _ in marked)})
    pieces = []
    for left, right in zip(cuts, cuts[1:], strict=False):
        covering = [(c, s) for start, end, c, s in marked if start <= left and end >= right]
        if not covering:
            pieces.append(Piece(text[left:right], None))
            continue
        worst = max((s for _, s in covering), key=lambda s: SEVERITY_RANK.get(s, -1))
        pieces.append(Piece(text[left:right], worst, tuple(f"{c} ({s})" for c, s in covering)))
    return pieces
