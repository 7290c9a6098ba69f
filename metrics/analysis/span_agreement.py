"""Agreement between raters of the same text: alpha on ESA and MQM scores, character-level agreement on
MQM error spans (docs/quality.md, "Agreement"). Pure: numpy (no Django).

A *judgement* is one rater's evaluation of one unit (a system's output of a segment, or a post-edit):
its ESA score, its MQM score, and its target-side spans over a text of a known length. Only units judged
by two or more raters count.

- ESA alpha, MQM alpha: Krippendorff's alpha (interval) over the units' scores
  (metrics.analysis.agreement.krippendorff_alpha).
- Character-level F1: for each pair of raters of a unit, A and B the sets of characters each marked (the
  union of their spans); F1 = 2|A ∩ B| / (|A| + |B|), micro-averaged over all pairs of all units (the sums
  of numerators and denominators; a pair where neither marked anything adds nothing).
- Character-level alpha: Krippendorff's alpha (nominal) with one unit per character of a unit's text
  and one value per rater: marked or not (`binary`), or the most severe severity marking it (`severity`:
  none, neutral, minor, major; critical counts as major).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from metrics.analysis.agreement import Alpha, krippendorff_alpha

SEVERITY_RANK = {"neutral": 1, "minor": 2, "major": 3, "critical": 3}
# A unit's text longer than this is cut for the character-level figures (memory stays bounded).
MAX_CHARACTERS = 100_000


@dataclass(frozen=True)
class Judgement:
    unit: Hashable
    rater: str
    length: int  # characters of the evaluated text
    spans: Sequence[tuple[int | None, int | None, str]] = ()  # (start, end, severity), target side
    esa: float | None = None
    mqm: float | None = None


@dataclass
class SpanAgreement:
    units: int  # units with two or more raters
    pairs: int
    char_f1: float | None
    char_alpha: Alpha | None
    char_alpha_severity: Alpha | None
    esa_alpha: Alpha | None
    mqm_alpha: Alpha | None
    notes: list[str] = field(default_factory=list)


def _marks(judgement: Judgement, length: int) -> np.ndarray:
    """Per character: 0 unmarked, else the highest severity rank of a span covering it."""
    marks = np.zeros(length, dtype=np.int8)
    for start, end, severity in judgement.spans:
        if start is None or end is None:
            continue
        low, high = max(0, start), min(length, end)
        if low < high:
            marks[low:high] = np.maximum(marks[low:high], SEVERITY_RANK.get(severity, 2))
    return marks


def span_agreement(judgements: Iterable[Judgement]) -> SpanAgreement:
    by_unit: dict[Hashable, dict[str, Judgement]] = defaultdict(dict)
    for judgement in judgements:
        by_unit[judgement.unit][judgement.rater] = judgement
    shared = {unit: raters for unit, raters in by_unit.items() if len(raters) >= 2}
    numerator = denominator = 0
    pairs = 0
    char_units: list[np.ndarray] = []
    char_binary: list[np.ndarray] = []
    char_severity: list[np.ndarray] = []
    score_units: list[int] = []
    esa: list[float] = []
    mqm: list[float] = []
    mqm_units: list[int] = []
    offset = 0
    cut = 0
    for n, raters in enumerate(shared.values()):
        length = min(max(j.length for j in raters.values()), MAX_CHARACTERS)
        cut += any(j.length > MAX_CHARACTERS for j in raters.values())
        marks = [_marks(j, length) for j in raters.values()]
        for a in range(len(marks)):
            for b in range(a + 1, len(marks)):
                left, right = marks[a] > 0, marks[b] > 0
                numerator += 2 * int(np.count_nonzero(left & right))
                denominator += int(np.count_nonzero(left)) + int(np.count_nonzero(right))
                pairs += 1
        for mark in marks:
            char_units.append(np.arange(offset, offset + length))
            char_binary.append((mark > 0).astype(np.int8))
            char_severity.append(mark)
        offset += length
        for judgement in raters.values():
            if judgement.esa is not None:
                score_units.append(n)
                esa.append(judgement.esa)
            if judgement.mqm is not None:
                mqm_units.append(n)
                mqm.append(judgement.mqm)
    notes = [f"{cut} unit(s) longer than {MAX_CHARACTERS:,} characters: their first {MAX_CHARACTERS:,} counted"] * (
        cut > 0
    )
    binary: Alpha | None = None
    severity: Alpha | None = None
    if char_units:
        units = np.concatenate(char_units)
        binary = krippendorff_alpha(units, np.concatenate(char_binary), level="nominal")
        severity = krippendorff_alpha(units, np.concatenate(char_severity), level="nominal")
    return SpanAgreement(
        units=len(shared),
        pairs=pairs,
        char_f1=numerator / denominator if denominator else None,
        char_alpha=binary,
        char_alpha_severity=severity,
        esa_alpha=krippendorff_alpha(np.array(score_units), np.array(esa, dtype=float)) if esa else None,
        mqm_alpha=krippendorff_alpha(np.array(mqm_units), np.array(mqm, dtype=float)) if mqm else None,
        notes=notes,
    )
