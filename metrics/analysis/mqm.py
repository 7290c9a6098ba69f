"""MQM and ESA scores as WMT publishes them (docs/quality.md). Pure: no Django.

A *rating* is one rater's evaluation of one system's output of one segment: its errors as
(category, severity) pairs, none for a "No-error" rating. Its MQM score is the sum of its errors'
weights (annotations.typology.Weights: WMT's major 5, minor 1, minor Fluency/Punctuation 0.1,
Non-translation 25), a penalty: 0 is perfect, more is worse.

- segment: the mean over the segment's raters of their ratings' scores;
- system: the mean over the system's segments of the segment scores;
- rater: the mean over the rater's ratings;
- WMT's ``*.avg_seg_scores.tsv`` files store the segment score negated (``-2.333333``: higher is better),
  ``published()`` gives that sign.

ESA: the mean of the 0-100 scores with a 95% confidence interval from Student's t.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scipy import stats

from annotations.typology import Weights


@dataclass(frozen=True)
class Rating:
    system: str
    segment: str
    rater: str
    errors: tuple[tuple[str, str], ...] = ()  # (category, severity)


@dataclass(frozen=True)
class Mean:
    n: int
    mean: float | None
    low: float | None = None  # 95% CI (None below two values)
    high: float | None = None


def rating_score(errors: Iterable[tuple[str, str]], weights: Weights) -> float:
    """The MQM penalty of one rating: the sum of its errors' weights."""
    return math.fsum(weights.weight(category, severity) for category, severity in errors)


def segment_scores(ratings: Iterable[Rating], weights: Weights) -> dict[tuple[str, str], float]:
    """(system, segment) -> the mean over its raters of each rater's score (a rater's ratings summed)."""
    per_rater: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for rating in ratings:
        key = (rating.system, rating.segment)
        per_rater[key][rating.rater] = per_rater[key].get(rating.rater, 0.0) + rating_score(rating.errors, weights)
    return {key: math.fsum(scores.values()) / len(scores) for key, scores in per_rater.items()}


def system_scores(segments: dict[tuple[str, str], float]) -> dict[str, Mean]:
    """system -> the mean of its segment scores, with a 95% CI over segments."""
    by_system: dict[str, list[float]] = defaultdict(list)
    for (system, _), score in segments.items():
        by_system[system].append(score)
    return {system: mean_ci(scores) for system, scores in sorted(by_system.items())}


def rater_scores(ratings: Iterable[Rating], weights: Weights) -> dict[str, Mean]:
    """rater -> the mean MQM score of the ratings they gave."""
    by_rater: dict[str, list[float]] = defaultdict(list)
    for rating in ratings:
        by_rater[rating.rater].append(rating_score(rating.errors, weights))
    return {rater: mean_ci(scores) for rater, scores in sorted(by_rater.items())}


def published(score: float) -> float:
    """A score in the sign of WMT's avg_seg_scores files (the penalty negated)."""
    return -score


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> Mean:
    """The mean of `values` with a Student-t confidence interval (none for fewer than two values)."""
    n = len(values)
    if n == 0:
        return Mean(0, None)
    mean = math.fsum(values) / n
    if n < 2:
        return Mean(n, mean)
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * math.sqrt(variance / n)
    return Mean(n, mean, mean - half, mean + half)


def esa_means(scores: Iterable[tuple[str, float]]) -> dict[str, Mean]:
    """(group, ESA score) pairs -> each group's mean with its 95% CI (group: a system, a rater, ...)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for group, score in scores:
        groups[group].append(score)
    return {group: mean_ci(values) for group, values in sorted(groups.items())}


def format_score(score: float) -> str:
    """A score as WMT's avg_seg_scores files write it: six decimals (``-0.000000`` for a perfect one)."""
    return f"{score:.6f}"
