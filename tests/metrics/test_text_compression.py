"""compression distance: DESIGN.md's known values, the published package, and the LZ77 definition itself."""

import string

from compression_distance import compression_distance as published
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.text import METRICS, compression_distance


def lz77_phrases(symbols: list) -> int:
    """DESIGN.md's definition, quadratic and plain: from i, the next phrase is the longest prefix of
    symbols[i:] that also starts at an earlier j < i (it may run past i), else one symbol."""
    i, phrases = 0, 0
    while i < len(symbols):
        longest = 0
        for j in range(i):
            length = 0
            while i + length < len(symbols) and symbols[j + length] == symbols[i + length]:
                length += 1
            longest = max(longest, length)
        i += max(1, longest)
        phrases += 1
    return phrases


def definition(original: str, edited: str) -> int:
    sep = object()  # equal to no character
    source = [*original, sep]
    return lz77_phrases(source + list(edited)) - lz77_phrases(source)


def test_it_gives_the_design_documents_known_values():
    assert compression_distance("vwxyz", "zyxwv") == 5
    assert compression_distance("zyxwv", "wvxwyxzyyxwxwvzyxzyxwyxwvzyxwv") == 10
    assert compression_distance("vwxyz", "wvxwyxzyyxwxwvzyxzyxwyxwvzyxwv") == 16


def test_it_compares_unicode_by_code_point():
    # The same strings spelled with other scripts: only equality of symbols matters.
    table = str.maketrans("vwxyz", "é日😀ßЖ")
    assert compression_distance("vwxyz".translate(table), "zyxwv".translate(table)) == 5
    assert compression_distance("zyxwv".translate(table), "wvxwyxzyyxwxwvzyxzyxwyxwvzyxwv".translate(table)) == 10
    # A decomposed é (e + combining accent) is two code points, not the precomposed one.
    assert compression_distance("\u00e9", "e\u0301") == 2


def test_it_handles_empty_texts():
    assert compression_distance("", "") == 0
    assert compression_distance("abc", "") == 0
    assert compression_distance("", "abc") == 3
    assert compression_distance("", "aaaa") == 2  # 'a', then 'aaa' copied from itself (overlapping)


def test_it_is_registered_as_an_effort_metric_returning_the_same_value():
    metric = METRICS["compression"]
    assert metric.family == "compression" and metric.direction == "effort" and metric.needs == frozenset()
    assert metric("vwxyz", "zyxwv") == 5.0


def test_it_handles_a_million_characters_in_each_text():
    original = "".join(chr(0x4E00 + (i * 7919) % 3000) for i in range(1_000_000))  # > 256 distinct symbols
    assert compression_distance(original, original) == 1
    assert compression_distance(original, original[:500_000] + "😀" + original[500_000:]) == 3
    latin = "ab" * 500_000
    assert compression_distance(latin, latin + "x") == 2


def test_it_uses_byte_ff_in_texts_correctly():
    # 0xFF is the fast path's separator; a text containing it takes the general path.
    assert compression_distance("\xffa", "a\xff") == definition("\xffa", "a\xff")
    assert compression_distance("\x00\x00", "\x00") == 1


unicode_texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=25)
repetitive_texts = st.text(alphabet=st.sampled_from("ab\xff\x00é日😀"), max_size=30)


@settings(max_examples=300, deadline=None)
@given(original=st.one_of(unicode_texts, repetitive_texts), edited=st.one_of(unicode_texts, repetitive_texts))
def test_it_equals_the_lz77_definition_on_any_unicode(original, edited):
    assert compression_distance(original, edited) == definition(original, edited)


ascii_texts = st.text(alphabet=st.sampled_from(string.ascii_letters[:6] + " .,"), max_size=60)


@settings(max_examples=300, deadline=None)
@given(original=ascii_texts, edited=ascii_texts)
def test_it_equals_the_published_package_on_ascii(original, edited):
    if original or edited:  # the package raises on two empty texts
        assert compression_distance(original, edited) == published(original, edited)
