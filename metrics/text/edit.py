"""Edit-distance metrics: Levenshtein (rapidfuzz), TER/HTER (sacrebleu), CharacTER (cer).

Convention shared with the n-gram metrics: the model output (original) is the hypothesis and the post-edit
(edited) the reference, except `ter`, which measures the post-edit against the original (normalized by the
original's length) so that it differs from `hter`.
"""

from __future__ import annotations

from functools import cache

from rapidfuzz.distance import Levenshtein


def levenshtein(original: str, edited: str, **_: object) -> float:
    return float(Levenshtein.distance(original, edited))


def levenshtein_words(original: str, edited: str, **_: object) -> float:
    return float(Levenshtein.distance(original.split(), edited.split()))


@cache
def _ter():
    from sacrebleu.metrics import TER

    # sacrebleu's TER lower-cases by default; a case fix is an edit the annotator had to make.
    return TER(case_sensitive=True)


def ter(original: str, edited: str, **_: object) -> float:
    """TER (%) of the post-edit against the original: edits with shifts per original word."""
    return float(_ter().sentence_score(edited, [original]).score)


def hter(original: str, edited: str, **_: object) -> float:
    """HTER (%): TER of the original with the post-edit as the (targeted) reference."""
    return float(_ter().sentence_score(original, [edited]).score)


def charac_ter(original: str, edited: str, **_: object) -> float:
    """CharacTER (Wang et al. 2016) of the original against the post-edit, in [0, 1]."""
    from cer import calculate_cer

    hypothesis, reference = original.split(), edited.split()
    if not reference:
        # cer divides by the reference length; with nothing to reach, any remaining text is all edit.
        return 0.0 if not hypothesis else 1.0
    return float(calculate_cer(hypothesis, reference))
