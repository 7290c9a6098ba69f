"""What every part of the analysis shares: its settings, names, CV scores and JSON conversion.

Pure: numpy only (no Django).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

EFFORT = "effort"
SIMILARITY = "similarity"
ORIGINAL_LENGTH = "original_length"
EDITED_LENGTH = "edited_length"
ANNOTATOR = "annotator"
ITEM = "external_id"  # the item column: an item is post-edited by several people


@dataclass(frozen=True)
class Settings:
    k: int = 5
    test_size: float = 0.2
    seed: int = 42
    cv_folds: int = 5
    cv_repeats: int = 10
    confidence: float = 0.95
    alpha: float = 0.05
    min_edits: int = 10
    cv_gap_flag: float = 0.05  # flag a metric whose random-CV R² exceeds its item-grouped one by more
    bootstrap_resamples: int = 1000
    mixed_models: bool = True
    log_target: bool = False  # the mixed models explain log(target) (heavy-tailed times)
    mixed_engine: str = "reml"  # or "statsmodels" (the same model, much slower with shared items)

    def __post_init__(self) -> None:
        problems = []
        if self.k < 1:
            problems.append("k must be at least 1")
        if not 0 < self.test_size < 1:
            problems.append("test_size must be between 0 and 1")
        if not 2 <= self.cv_folds <= 100:
            problems.append("cv_folds must be between 2 and 100")
        if self.cv_repeats < 1:
            problems.append("cv_repeats must be at least 1")
        if not 0 < self.confidence < 1:
            problems.append("confidence must be between 0 and 1")
        if not 100 <= self.bootstrap_resamples <= 100_000:
            problems.append("bootstrap_resamples must be between 100 and 100000")
        if self.mixed_engine not in ("reml", "statsmodels"):
            problems.append("mixed_engine must be reml or statsmodels")
        if self.min_edits < max(self.cv_folds, 4):
            problems.append(f"min_edits must be at least {max(self.cv_folds, 4)}")
        if problems:
            raise ValueError("; ".join(problems))


DEFAULT_SETTINGS = Settings()


@dataclass
class CVScore:
    mean: float
    sd: float | None
    repeats: list[float]


def cv_score(per_repeat: list[float]) -> CVScore:
    """Mean and sample sd (ddof=1) over the repeats' R²; no sd for a single repeat (e.g. each of
    five annotators left out once: every repeat would hold the same folds)."""
    sd = float(np.std(per_repeat, ddof=1)) if len(per_repeat) > 1 else None
    return CVScore(mean=float(np.mean(per_repeat)), sd=sd, repeats=per_repeat)


def is_constant(values: np.ndarray) -> bool:
    return values.size == 0 or bool(np.all(values == values[0]))


def orientation(direction: str) -> float:
    """+1 for effort-like metrics (distances), -1 for similarities."""
    return -1.0 if direction == SIMILARITY else 1.0


def jsonable(value):
    """Plain JSON types: numpy scalars and arrays become Python ones, NaN and +-inf become None."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    return value
