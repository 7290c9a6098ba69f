"""The metric registry: every text metric with the facts reports need to orient and explain it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

FAMILIES = ("compression", "edit distance", "n-gram overlap", "semantic", "gold-based")
DIRECTIONS = ("effort", "similarity")
NEEDS = frozenset({"references", "gold", "semantic"})


class MetricUnavailable(RuntimeError):
    """The metric's optional extra is not installed (or its model is missing)."""


class MetricFailed(RuntimeError):
    """A metric's library raised on a pair: which metric, which pair (0-based index in the input), what."""

    def __init__(self, metric: str, pair_index: int, detail: str) -> None:
        super().__init__(metric, pair_index, detail)  # args only: it must survive pickling between processes
        self.metric, self.pair_index, self.detail = metric, pair_index, detail

    def __str__(self) -> str:
        return f"{self.metric} failed on pair {self.pair_index + 1}: {self.detail}"


@dataclass(frozen=True)
class Metric:
    name: str
    func: Callable[..., float]
    family: str
    direction: str
    needs: frozenset[str]
    library: str
    version: str
    description: str
    # Returns None when usable, else the reason; kept private so `available()` stays the public question.
    _check: Callable[[], str | None] | None = field(default=None, repr=False, compare=False)
    # Optional: the values of many (original, edited) pairs in one call, equal to func's, for a metric that
    # needs nothing else and whose per-call overhead dominates (score_pairs uses it).
    batch: Callable[[Sequence[tuple[str, str]]], Sequence[float]] | None = field(
        default=None, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"metric {self.name}: unknown family {self.family!r}")
        if self.direction not in DIRECTIONS:
            raise ValueError(f"metric {self.name}: unknown direction {self.direction!r}")
        if not self.needs <= NEEDS:
            raise ValueError(f"metric {self.name}: unknown needs {sorted(self.needs - NEEDS)}")
        if self.batch is not None and self.needs:
            raise ValueError(f"metric {self.name}: a batch function gets only (original, edited) pairs")

    def unavailable_reason(self) -> str | None:
        return self._check() if self._check is not None else None

    def available(self) -> bool:
        return self.unavailable_reason() is None

    def applies_to(self, *, references: Sequence[str] = (), gold: Sequence[str] = ()) -> bool:
        """Whether a pair carries what this metric needs (the optional extra is checked by `available`)."""
        if "gold" in self.needs and not gold:
            return False
        if "references" in self.needs and not references:
            return False
        return True

    def __call__(
        self, original: str, edited: str, *, references: Sequence[str] = (), gold: Sequence[str] = ()
    ) -> float:
        reason = self.unavailable_reason()
        if reason is not None:
            raise MetricUnavailable(reason)
        if "gold" in self.needs and not gold:
            raise ValueError(f"{self.name} needs at least one gold edit (gold=[...]); none was given")
        if "references" in self.needs and not references:
            raise ValueError(f"{self.name} needs at least one reference document; none was given")
        return self.func(original, edited, references=tuple(references), gold=tuple(gold))


METRICS: dict[str, Metric] = {}


def register(metric: Metric) -> Metric:
    if metric.name in METRICS:
        raise ValueError(f"metric {metric.name} is registered twice")
    METRICS[metric.name] = metric
    return metric


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; known metrics: {', '.join(METRICS)}") from None
