"""Agreement on evaluations: character-level F1 by hand, the alphas against the krippendorff package."""

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.analysis.span_agreement import Judgement, span_agreement

JUDGEMENTS = [
    Judgement("u1", "a", 10, [(0, 4, "minor")], esa=80, mqm=1),
    Judgement("u1", "b", 10, [(2, 6, "major")], esa=60, mqm=5),
    Judgement("u2", "a", 5, [], esa=100, mqm=0),
    Judgement("u2", "b", 5, [(None, None, "major")], esa=90, mqm=5),
    Judgement("u3", "a", 4, [(0, 4, "minor")], esa=70, mqm=1),
    Judgement("u3", "b", 4, [(0, 2, "minor"), (1, 4, "minor")], esa=75, mqm=2),
    Judgement("u3", "c", 4, [(0, 2, "critical")], esa=40, mqm=5),
    Judgement("u4", "a", 3, [(0, 1, "minor")], esa=50, mqm=1),  # one rater: no agreement
]


def _package(units, raters, values, level):
    unit_codes = {u: n for n, u in enumerate(dict.fromkeys(units))}
    rater_codes = {r: n for n, r in enumerate(dict.fromkeys(raters))}
    matrix = np.full((len(rater_codes), len(unit_codes)), np.nan)
    for u, r, v in zip(units, raters, values, strict=True):
        matrix[rater_codes[r], unit_codes[u]] = v
    return krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)


def test_character_f1_by_hand():
    agreement = span_agreement(JUDGEMENTS)
    assert (agreement.units, agreement.pairs) == (3, 1 + 1 + 3)
    # u1: A={0..3}, B={2..5}: 2*2 / (4+4); u2 marks nothing; u3: ab 2*4/(4+4), ac 2*2/(4+2), bc 2*2/(4+2)
    assert agreement.char_f1 == pytest.approx((4 + 8 + 4 + 4) / (8 + 8 + 6 + 6))


def test_alphas_equal_the_package():
    agreement = span_agreement(JUDGEMENTS)
    shared = [j for j in JUDGEMENTS if j.unit != "u4"]
    esa = _package([j.unit for j in shared], [j.rater for j in shared], [j.esa for j in shared], "interval")
    mqm = _package([j.unit for j in shared], [j.rater for j in shared], [j.mqm for j in shared], "interval")
    assert agreement.esa_alpha.alpha == pytest.approx(esa)
    assert agreement.mqm_alpha.alpha == pytest.approx(mqm)
    units, raters, marked, severity = [], [], [], []
    rank = {"minor": 2, "major": 3, "critical": 3}
    for j in shared:
        for c in range(j.length):
            covering = [rank[s] for start, end, s in j.spans if start is not None and start <= c < end]
            units.append((j.unit, c))
            raters.append(j.rater)
            marked.append(1 if covering else 0)
            severity.append(max(covering, default=0))
    assert agreement.char_alpha.alpha == pytest.approx(_package(units, raters, marked, "nominal"))
    assert agreement.char_alpha_severity.alpha == pytest.approx(_package(units, raters, severity, "nominal"))


def test_nothing_shared_gives_no_figures():
    agreement = span_agreement([JUDGEMENTS[-1]])
    assert (agreement.units, agreement.char_f1, agreement.char_alpha, agreement.esa_alpha) == (0, None, None, None)


SPAN = st.tuples(st.integers(-3, 12), st.integers(-3, 12), st.sampled_from(["minor", "major", "neutral"]))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("xyz"), st.sampled_from("abc"), st.lists(SPAN, max_size=3)), max_size=12))
def test_f1_is_a_proportion_whatever_the_spans(rows):
    agreement = span_agreement([Judgement(u, r, 8, spans) for u, r, spans in rows])
    assert agreement.char_f1 is None or 0.0 <= agreement.char_f1 <= 1.0
