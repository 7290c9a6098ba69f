"""editlab.safe_json: one JSON parser for untrusted text, with limits that name themselves."""

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from editlab import safe_json
from editlab.safe_json import JSONDepthError, JSONSizeError, JSONValueError

# What JSON can carry and editlab can store: finite numbers, text without NUL or lone surrogates.
storable_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | storable_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(storable_text, children, max_size=4),
    max_leaves=30,
)


@given(json_values)
def test_it_gives_back_what_json_dumps_wrote(value):
    assert safe_json.loads(json.dumps(value)) == value
    assert safe_json.loads(json.dumps(value, ensure_ascii=False).encode()) == value


@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_it_refuses_json_nested_1000_deep_naming_the_limit(opener):
    closer = "]" if opener == "[" else "}"
    text = opener * 1000 + "1" + closer * 1000

    with pytest.raises(JSONDepthError, match="nested more than 64 levels deep") as caught:
        safe_json.loads(text)

    assert (caught.value.limit, caught.value.value) == ("max_depth", 65)  # stops counting past the limit
    assert isinstance(caught.value, ValueError)


def test_depth_is_exact_at_the_limit_and_ignores_brackets_inside_strings():
    assert safe_json.loads("[[[1]]]", max_depth=3) == [[[1]]]
    with pytest.raises(JSONDepthError, match="more than 2 levels"):
        safe_json.loads("[[[1]]]", max_depth=2)
    assert safe_json.loads(json.dumps({"text": "[" * 500 + '\\"{' * 200}), max_depth=1) == {
        "text": "[" * 500 + '\\"{' * 200
    }
    assert safe_json.loads('["]", {"a": ["[", [] ]}]', max_depth=4) == ["]", {"a": ["[", []]}]
    with pytest.raises(JSONDepthError, match=r"more than 3 levels deep at \[1\]\.a\[1\] \(line 1, column 19;"):
        safe_json.loads('["]", {"a": ["[", [] ]}]', max_depth=3)


def test_it_refuses_input_over_the_size_limit_in_bytes():
    assert safe_json.loads('"é"', max_bytes=4) == "é"
    with pytest.raises(JSONSizeError, match=r"JSON is 6 bytes, over the limit of 4 bytes"):
        safe_json.loads('"éé"', max_bytes=4)
    with pytest.raises(JSONSizeError, match="over the limit"):
        safe_json.loads(b"[1, 2]", max_bytes=5)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": [1, NaN]}', r"NaN is not allowed \(JSON has no NaN or Infinity\) at a\[1\] \(line 1, column 11\)"),
        ('{"a": {\n  "b": -Infinity}}', r"-Infinity is not allowed .* at a\.b \(line 2, column 8\)"),
        ('[1, "1e400", 1e400]', r"1e400 is out of range for a number at \[2\] \(line 1, column 14\)"),
        ("1" * 5000, r"a number with 5,000 digits is too long \(line 1, column 1\)"),
        ('{"k": ["x", "\\u0000"]}', r"holds a NUL character \(\\u0000\), which cannot be stored at k\[1\]$"),
        ('["\\ud800"]', r"lone UTF-16 surrogate \(\\ud800\), which is not a character at \[0\]$"),
        ('{"a\\udfffb": 1}', r"the key holds a lone UTF-16 surrogate \(\\udfff\).* at a\\udfffb$"),
    ],
)
def test_it_refuses_values_no_database_stores_saying_where(text, message):
    with pytest.raises(JSONValueError, match=message) as caught:
        safe_json.loads(text)

    str(caught.value).encode("utf-8")  # the message itself is always printable


def test_surrogate_pairs_rtl_marks_and_other_odd_but_valid_text_are_kept():
    text = "\u202eevil\u202c \u200f\u05e9\u05dc\u05d5\u05dd \U0001f600 \ufeff \u0007"
    assert safe_json.loads(json.dumps(text)) == text
    assert safe_json.loads('"\\ud83d\\ude00"') == "\U0001f600"


def test_malformed_json_is_still_a_decode_error_with_its_position():
    with pytest.raises(json.JSONDecodeError) as caught:
        safe_json.loads('{"a": [1,\n ]}')
    assert caught.value.lineno == 2
    assert isinstance(caught.value, ValueError)


def test_large_finite_numbers_stay_numbers():
    assert safe_json.loads("[1e300, -2.5e-300, 123456789012345678901234567890]") == [
        1e300,
        -2.5e-300,
        123456789012345678901234567890,
    ]
    assert math.isfinite(safe_json.loads("1.7976931348623157e308"))


def test_bytes_that_are_not_utf8_are_refused_by_offset():
    with pytest.raises(JSONValueError, match="byte 0xff at offset 2 is not UTF-8"):
        safe_json.loads(b'["\xff"]')


def depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


tricky_text = st.text(st.sampled_from('[]{}"\\,:ab '), max_size=8)
nested = st.recursive(
    st.integers() | tricky_text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(tricky_text, children, max_size=3),
    max_leaves=40,
)


@given(nested, st.integers(min_value=0, max_value=8), st.booleans())
def test_the_depth_limit_is_exact_whatever_brackets_quotes_and_backslashes_strings_hold(value, limit, indent):
    text = json.dumps(value, indent=1 if indent else None)
    if depth(value) > limit:
        with pytest.raises(JSONDepthError):
            safe_json.loads(text, max_depth=limit)
    else:
        assert safe_json.loads(text, max_depth=limit) == value
