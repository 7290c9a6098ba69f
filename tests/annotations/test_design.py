"""The pure study-design rules: conditions, Latin-square balance, highlight spans, languages."""

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotations.design import (
    Condition,
    DesignError,
    condition_names,
    direction,
    language_error,
    latin_square,
    latin_square_row,
    parse_conditions,
    parse_spans,
)


def names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{k}" for k in range(n)]


@given(a=st.integers(1, 12), d=st.integers(1, 15), c=st.integers(1, 6))
def test_a_latin_square_is_balanced_whenever_it_can_be_made(a, d, c):
    annotators, documents, conditions = names("ann", a), names("doc", d), names("cond", c)
    if a < c or d < c:
        with pytest.raises(DesignError):
            latin_square(annotators=annotators, documents=documents, conditions=conditions)
        return
    plan = latin_square(annotators=annotators, documents=documents, conditions=conditions)
    # Every annotator sees every document exactly once, in a queue order 0..d-1.
    seen = Counter((cell.annotator, cell.document) for cell in plan.cells)
    assert set(seen) == {(x, y) for x in annotators for y in documents} and set(seen.values()) == {1}
    for annotator in annotators:
        assert sorted(cell.order for cell in plan.cells if cell.annotator == annotator) == list(range(d))
    # Each condition on an equal share of each annotator's documents (±1) ...
    for counts in plan.per_annotator().values():
        assert set(counts) == set(conditions)
        assert max(counts.values()) - min(counts.values()) <= 1
    # ... and across annotators each document under each condition as evenly as the numbers allow.
    for counts in plan.per_document().values():
        shares = [counts.get(condition, 0) for condition in conditions]
        assert max(shares) - min(shares) <= 1
        assert min(shares) >= 1


@given(slots=st.integers(1, 20), d=st.integers(3, 9))
def test_participants_taking_slots_one_at_a_time_stay_balanced(slots, d):
    documents, conditions = names("doc", d), ["a", "b", "c"]
    rows = [dict(latin_square_row(slot, documents=documents, conditions=conditions)) for slot in range(slots)]
    for document in documents:
        shares = Counter(row[document] for row in rows)
        assert max(shares.get(c, 0) for c in conditions) - min(shares.get(c, 0) for c in conditions) <= 1


def test_the_queue_order_rotates_between_annotators():
    plan = latin_square(annotators=["x", "y", "z"], documents=["d1", "d2", "d3"], conditions=["a", "b", "c"])
    rows = plan.rows()
    assert [entry["document"] for entry in rows[0]["documents"]] == ["d1", "d2", "d3"]
    assert [entry["document"] for entry in rows[1]["documents"]] == ["d2", "d3", "d1"]
    assert plan.condition_of("y", "d1") == "b"
    assert rows[2]["conditions"] == {"a": 1, "b": 1, "c": 1}


def test_impossible_designs_say_what_would_work():
    with pytest.raises(DesignError, match="at least 3 annotators are needed; add 1 annotator"):
        latin_square(annotators=["x", "y"], documents=names("d", 6), conditions=["a", "b", "c"])
    with pytest.raises(DesignError, match="at least 3 documents are needed"):
        latin_square(annotators=names("u", 6), documents=["d1", "d2"], conditions=["a", "b", "c"])
    with pytest.raises(DesignError, match="'x' is listed twice"):
        latin_square(annotators=["x", "x", "y"], documents=names("d", 3), conditions=["a", "b"])
    with pytest.raises(DesignError, match="no documents"):
        latin_square(annotators=["x"], documents=[], conditions=["a"])


def test_conditions_parse_with_their_place_named():
    parsed = parse_conditions(
        [{"name": "sysA", "output": "A", "highlights": True}, {"name": "scratch", "output": None}]
    )
    assert parsed == [Condition("sysA", "A", True), Condition("scratch", None, False)]
    assert parsed[0].as_json() == {"name": "sysA", "output": "A", "highlights": True}
    assert parse_conditions(None) == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"name": "a"}, "conditions: must be a list"),
        ([["a"]], r"conditions\[0\]: must be an object"),
        ([{"name": "a,b", "output": "A"}], r"conditions\[0\].name: must be"),
        ([{"name": " a", "output": "A"}], r"conditions\[0\].name"),
        ([{"name": "a", "output": "A"}, {"name": "A", "output": "B"}], r"conditions\[1\].name: 'A' is declared twice"),
        ([{"name": "a", "output": ""}], r"conditions\[0\].output"),
        ([{"name": "a", "output": 5}], r"conditions\[0\].output"),
        ([{"name": "a", "output": "A", "highlights": "yes"}], r"conditions\[0\].highlights"),
        ([{"name": "a", "output": "A", "colour": "red"}], r"unknown field\(s\) colour"),
        ([{"name": "x" * 101, "output": "A"}], r"conditions\[0\].name"),
        ([{"name": "\u202eevil", "output": "A"}], r"conditions\[0\].name"),
    ],
)
def test_bad_conditions_are_refused(value, message):
    with pytest.raises(DesignError, match=message):
        parse_conditions(value)


def test_condition_names_must_be_declared():
    declared = [Condition("a", "A"), Condition("b", None)]
    assert condition_names(" a, b ", declared) == ["a", "b"]
    with pytest.raises(DesignError, match="unknown 'c'; the project declares a, b"):
        condition_names("a,c", declared)
    with pytest.raises(DesignError, match="named twice"):
        condition_names("a,a", declared)


def test_spans_are_checked_against_their_text():
    text = "Das ist gut."
    assert parse_spans([[8, 11, "minor"], [0, 3, "major"]], text) == [(0, 3, "major"), (8, 11, "minor")]
    assert parse_spans([[0, 12]], text) == [(0, 12, "")]
    assert parse_spans([[0, 1, "x"]], "日本") == [(0, 1, "x")]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([[0, 13, "x"]], r"\[0, 13\] is outside the text \(0 <= start < end <= 12"),
        ([[5, 5, "x"]], "outside the text"),
        ([[-1, 2, "x"]], "outside the text"),
        ([[0, 2**63, "x"]], "outside the text"),
        ([[0.5, 2, "x"]], "whole numbers"),
        ([[True, 2, "x"]], "whole numbers"),
        ([[0, 4, "x"], [3, 6, "y"]], "overlap"),
        ([[0, 2, ["deep"]]], "label"),
        ([[0, 2, "x" * 101]], "label"),
        ("0-2", "must be a list"),
        ([[0]], r"highlights\[0\]: must be \[start, end, label\]"),
    ],
)
def test_bad_spans_are_refused(value, message):
    with pytest.raises(DesignError, match=message):
        parse_spans(value, "Das ist gut.")


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("ar", "rtl"),
        ("he-IL", "rtl"),
        ("fa", "rtl"),
        ("ur-PK", "rtl"),
        ("az-Arab", "rtl"),
        ("ku-Arab-IQ", "rtl"),
        ("ar-Latn", "ltr"),
        ("en", "ltr"),
        ("de-CH", "ltr"),
        ("zh-Hant-TW", "ltr"),
        ("", "auto"),
        ("not a tag", "auto"),
    ],
)
def test_direction_follows_the_language_and_script(tag, expected):
    assert direction(tag) == expected


@pytest.mark.parametrize("tag", ["en", "pt-BR", "sr-Latn-RS", "es-419", "de-1996", "zh-yue-HK", ""])
def test_valid_language_tags(tag):
    assert language_error(tag) is None


@pytest.mark.parametrize("tag", ["english", "e", "en_US", "en-", "<b>", "ar\u200f", "x" * 40, "en--US"])
def test_invalid_language_tags_are_named(tag):
    assert "BCP 47" in language_error(tag)
