"""Pure: whether a submitted text passes an attention check (docs/quality.md, "Attention checks").

- planted error: the span [start, end) of the model output holds an error planted on purpose; the
  check passes when the edit changed it: an alignment of the model output with the submitted text
  (difflib, no junk heuristic) has a replaced or deleted character inside the span, or an insertion
  strictly inside it.
- gold edit: the check passes when the submitted text is within `max_distance` characters
  (Levenshtein, code points) of the gold text, both with their whitespace runs made one space and
  their ends stripped.
- An attention item that was skipped fails; one still open is pending.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein

PLANTED, GOLD = "planted", "gold"
PASSED, FAILED, PENDING = "passed", "failed", "pending"
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Check:
    kind: str  # PLANTED or GOLD
    start: int | None = None
    end: int | None = None
    gold: str = ""
    max_distance: int = 0


def span_changed(original: str, edited: str, start: int, end: int) -> bool:
    """Whether `edited` changes original[start:end] (see the module doc)."""
    if original == edited:
        return False
    matcher = difflib.SequenceMatcher(None, original, edited, autojunk=False)
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i1 == i2:  # an insertion before original[i1]
            if start < i1 < end:
                return True
        elif i1 < end and i2 > start:
            return True
    return False


def normalised(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def gold_distance(edited: str, gold: str, *, limit: int) -> int:
    """The Levenshtein distance of the normalised texts, or limit + 1 when it is over `limit`."""
    return int(Levenshtein.distance(normalised(edited), normalised(gold), score_cutoff=limit))


def check_result(check: Check, *, original: str, edited: str | None) -> str:
    """PASSED or FAILED for a submitted text, FAILED for a skipped item (`edited` None)."""
    if edited is None:
        return FAILED
    if check.kind == PLANTED:
        if check.start is None or check.end is None:
            return FAILED
        return PASSED if span_changed(original, edited, check.start, check.end) else FAILED
    return PASSED if gold_distance(edited, check.gold, limit=check.max_distance) <= check.max_distance else FAILED
