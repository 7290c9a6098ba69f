"""The pure MQM/ESA scores and the typology's checks (metrics.analysis.mqm, annotations.typology)."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from annotations.typology import (
    TypologyError,
    Weights,
    check_esa,
    check_span,
    mark,
    parse_marks,
    parse_typology,
)
from metrics.analysis.mqm import Rating, esa_means, mean_ci, rater_scores, segment_scores, system_scores


def test_wmt_weights():
    w = Weights()
    assert w.weight("Accuracy/Mistranslation", "major") == 5
    assert w.weight("Accuracy/Mistranslation", "minor") == 1
    assert w.weight("Fluency/Punctuation", "minor") == 0.1
    assert w.weight("Fluency/Punctuation", "major") == 5
    assert w.weight("Non-translation!", "minor") == 25
    assert w.weight("Style/Awkward", "critical") == 5
    assert w.weight("Style/Awkward", "neutral") == 0


def test_segment_mean_over_raters_of_summed_ratings():
    ratings = [
        Rating("A", "1", "r1", (("Other", "major"), ("Fluency/Punctuation", "minor"))),
        Rating("A", "1", "r2", ()),
        Rating("A", "2", "r1", (("Other", "minor"),)),
        Rating("B", "1", "r1", (("Non-translation", "major"),)),
    ]
    segments = segment_scores(ratings, Weights())
    assert segments == {("A", "1"): pytest.approx(2.55), ("A", "2"): 1.0, ("B", "1"): 25.0}
    systems = system_scores(segments)
    assert systems["A"].mean == pytest.approx(1.775) and systems["A"].n == 2
    assert systems["B"].low is None
    assert rater_scores(ratings, Weights())["r1"].mean == pytest.approx((5.1 + 1 + 25) / 3)


def test_mean_ci_is_student_t():
    values = [10.0, 20.0, 40.0, 70.0]
    mean = mean_ci(values)
    half = stats.t.ppf(0.975, 3) * stats.sem(values)
    assert (mean.mean, mean.low, mean.high) == pytest.approx((35.0, 35 - half, 35 + half))
    assert esa_means([("A", 50.0), ("A", 70.0), ("B", 90.0)])["B"].mean == 90.0


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ([], "quality"),
        ({"categories": []}, "categories"),
        ({"categories": ["A", "A"]}, "categories"),
        ({"categories": ["No-error"]}, "categories"),
        ({"weights": {"major": -1}}, "weights.major"),
        ({"weights": {"major": float("nan")}}, "weights.major"),
        ({"weights": {"heavy": 1}}, "weights"),
        ({"weights": {"categories": {"Other": {"grave": 1}}}}, "weights.categories.'Other'"),
        ({"typology": []}, "quality"),
    ],
)
def test_bad_typologies_name_their_field(config, field):
    with pytest.raises(TypologyError) as caught:
        parse_typology(config)
    assert caught.value.field == field


def test_typology_refuses_a_category_outside_it():
    typology = parse_typology({"categories": ["Accuracy/Mistranslation"]})
    typology.check_category("Accuracy/Mistranslation")
    with pytest.raises(TypologyError, match="not in the project's typology"):
        typology.check_category("Style/Awkward")


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [(3, 2, "inverted"), (0, 9, "outside"), (-1, 2, "outside"), (1, None, "both"), (True, 2, "whole")],
)
def test_bad_spans(start, end, message):
    with pytest.raises(TypologyError, match=message):
        check_span(start, end, 5)


@pytest.mark.parametrize("score", [-0.1, 100.5, math.inf, math.nan, "50", True])
def test_bad_esa_scores(score):
    with pytest.raises(TypologyError) as caught:
        check_esa(score)
    assert caught.value.field == "esa_score"


@given(text=st.text(st.characters(blacklist_characters="<>"), max_size=20), data=st.data())
def test_marks_round_trip(text, data):
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    marked = parse_marks(mark(text, start, end), "target")
    assert (marked.text, marked.start, marked.end, marked.open_end) == (text, start, end, False)
