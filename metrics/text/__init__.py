"""editlab's text metrics: pure functions (no Django), a registry, and a parallel scorer.

    from metrics.text import METRICS, score_pairs, Pair
    METRICS["compression"]("model output", "post-edit")              # one value
    score_pairs([Pair("model output", "post-edit")], ["ter", "bleu"])  # {"ter": [...], "bleu": [...]}

Every metric is f(original, edited, *, references=(), gold=()) -> float, where original is the model output
and edited the post-edit (for gold-based metrics: the system output judged against `gold`).
"""

from __future__ import annotations

from . import catalog as _catalog  # noqa: F401  (fills METRICS)
from .compression import compression_distance
from .config import configure
from .parallel import REFERENCE_SEPARATOR, VARIANTS, Pair, score_pairs, variant_original
from .registry import METRICS, Metric, MetricFailed, MetricUnavailable, get_metric

EFFORT_SUITE: tuple[str, ...] = (
    "compression",
    "levenshtein",
    "levenshtein_words",
    "ter",
    "bleu",
    "chrf",
    "rouge_l",
    "charac_ter",
)

__all__ = [
    "EFFORT_SUITE",
    "METRICS",
    "REFERENCE_SEPARATOR",
    "VARIANTS",
    "Metric",
    "MetricFailed",
    "MetricUnavailable",
    "Pair",
    "compression_distance",
    "configure",
    "get_metric",
    "score_pairs",
    "variant_original",
]
