"""compression distance: DESIGN.md's known values, the published package, and the LZ77 definition itself, for
both implementations: the compiled one (built here from this tree's source when the installed build is
missing or stale) and the pure-Python fallback."""

import hashlib
import importlib
import importlib.util
import logging
import os
import random
import shutil
import string
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest
from compression_distance import compression_distance as published
from hypothesis import given, settings
from hypothesis import strategies as st

from editlab.benchmarks.metrics import ascii_copy, load_pairs
from metrics.text import METRICS, Pair, compression, compression_distance, score_pairs
from metrics.text.compression import compression_distances
from metrics.text.config import CONFIG

SOURCE = Path(compression.__file__).with_name("_lz77.c")


def build_from_source() -> ModuleType:
    """metrics/text/_lz77.c compiled as `pip install` does (setuptools' build_ext), once per version of the
    source (cached by its hash), and loaded without replacing the installed module."""
    from setuptools import Distribution, Extension

    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    cached = CONFIG.cache_dir / "lz77-build" / f"{sys.implementation.cache_tag}-{digest}.so"
    if not cached.exists():
        with tempfile.TemporaryDirectory(prefix="lz77-build-") as folder:
            extension = Extension("metrics.text._lz77", sources=[str(SOURCE)])
            build = Distribution({"name": "lz77-for-tests", "ext_modules": [extension]}).get_command_obj("build_ext")
            build.build_lib, build.build_temp = f"{folder}/lib", f"{folder}/temp"
            build.ensure_finalized()
            build.run()
            cached.parent.mkdir(parents=True, exist_ok=True)
            # a complete file or none: another test run may load it meanwhile
            os.replace(shutil.copy(build.get_ext_fullpath("metrics.text._lz77"), f"{cached}.{os.getpid()}"), cached)
    spec = importlib.util.spec_from_file_location("metrics.text._lz77", cached)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.VERSION == compression._NATIVE_VERSION
    return module


# The loader itself, before the fixture below replaces it (the fallback tests use it).
load_native = compression._native


@pytest.fixture(scope="module")
def lz77() -> ModuleType:
    return build_from_source()


@pytest.fixture(scope="module", autouse=True)
def compiled(lz77):
    """compression_distance(s) run this tree's compiled code in these tests, whatever is installed."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compression, "_native", lambda: lz77)
        yield


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
    # and many phrases, the same by both paths
    edited = copy_edit(random.Random(7), original, 1_000_000, "".join(map(chr, range(0x4E00, 0x4E00 + 3000))))
    assert compression_distance(original, edited) == compression._python_distance(original, edited) > 10_000


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


# --- each compiled path, and the pure-Python one, against the definition -----------------------------------------


@settings(max_examples=300, deadline=None)
@given(original=st.one_of(unicode_texts, repetitive_texts), edited=st.one_of(unicode_texts, repetitive_texts))
def test_each_compiled_path_equals_the_definition(lz77, original, edited):
    expected = definition(original, edited)
    assert lz77._by_suffix_array(original, edited) == expected
    assert lz77._by_chains(original, edited) in (expected, None)  # None: over its budget, the other path answers


@settings(max_examples=100, deadline=None)
@given(original=st.one_of(unicode_texts, repetitive_texts), edited=st.one_of(unicode_texts, repetitive_texts))
def test_the_pure_python_path_equals_the_definition(original, edited):
    assert compression._python_distance(original, edited) == definition(original, edited)


def test_the_hash_chains_give_up_on_repetitive_text_and_the_suffix_array_answers(lz77):
    assert lz77._by_chains("ab" * 200, "ab" * 200) is None
    assert compression_distance("ab" * 200, "ab" * 200) == lz77._by_suffix_array("ab" * 200, "ab" * 200) == 1
    assert lz77._by_chains("the cat sat on the mat", "a cat sat on a mat") == definition(
        "the cat sat on the mat", "a cat sat on a mat"
    )


def copy_edit(rng: random.Random, source: str, length: int, alphabet: str) -> str:
    """A text made like a post-edit: runs copied from anywhere in source or from its own last pieces (which
    may overlap), and new symbols."""
    out: list[str] = []
    size = 0
    while size < length:
        kind = rng.random()
        if kind < 0.5 and source:
            start = rng.randrange(len(source))
            piece = source[start : start + rng.randint(1, 40)]
        elif kind < 0.7 and out:
            recent = "".join(out[-8:])
            start = rng.randrange(len(recent))
            piece = (recent[start:] * 3)[: rng.randint(1, 40)]
        else:
            piece = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5)))
        out.append(piece)
        size += len(piece)
    return "".join(out)[:length]


@pytest.mark.parametrize(
    "alphabet",
    [
        "abcdefgh ",
        "ab",
        "aé日\x00\xff",
        "".join(map(chr, range(0x10000, 0x10000 + 5000))),  # astral, many distinct: the hash-table ranks
        "".join(map(chr, range(0x100, 0x100 + 40000))),  # two-byte, more distinct symbols than the chains' table
    ],
)
@pytest.mark.parametrize("length", [300, 5_000, 40_000])
def test_both_compiled_paths_equal_the_pure_python_path_on_longer_texts(lz77, alphabet, length):
    rng = random.Random(length)
    original = "".join(rng.choice(alphabet) for _ in range(length))
    edited = copy_edit(rng, original, length, alphabet)
    expected = compression._python_distance(original, edited)
    assert compression_distance(original, edited) == expected
    assert lz77._by_suffix_array(original, edited) == expected
    if length <= 5_000:
        assert lz77._by_chains(original, edited) in (expected, None)


@pytest.mark.parametrize("distinct", [253, 254, 255, 300])
def test_the_suffix_array_reads_bytes_up_to_256_symbols_and_wider_beyond(lz77, distinct):
    # symbols: the distinct code points, sep and the sentinel; up to 256 of them fit a byte each
    rng = random.Random(distinct)
    alphabet = "".join(map(chr, range(0x3000, 0x3000 + distinct)))
    original = alphabet + "".join(rng.choice(alphabet) for _ in range(3000))
    edited = copy_edit(rng, original, 3000, alphabet)
    assert lz77._by_suffix_array(original, edited) == compression._python_distance(original, edited)


def test_it_scores_many_pairs_in_one_call_with_the_same_values():
    pairs = [("vwxyz", "zyxwv"), ["zyxwv", "wvxwyxzyyxwxwvzyxzyxwyxwvzyxwv"], ("", ""), ("abc", ""), ("", "aaaa")]
    assert compression_distances(pairs) == [5, 10, 0, 0, 2]
    assert compression_distances(iter(pairs)) == [5, 10, 0, 0, 2]
    assert compression_distances([]) == []
    with pytest.raises(TypeError, match="must be str"):
        compression_distances([("a", b"b")])
    with pytest.raises(ValueError, match="not enough values to unpack"):
        compression_distances([("a",)])


def test_score_pairs_gets_every_value_from_one_batch_call(monkeypatch):
    calls: list[int] = []

    def counting(pairs):
        calls.append(len(pairs))
        return compression_distances(pairs)

    monkeypatch.setattr(compression, "compression_distances", counting)
    pairs = [Pair("the cat sat", "a cat sat"), Pair("vwxyz", "zyxwv", references=("zyx",)), Pair("", "abc")]
    assert score_pairs(pairs, ["compression"], processes=1) == {"compression": [2.0, 5.0, 3.0]}
    with_references = score_pairs(pairs, ["compression"], variant="with_references", processes=1)
    assert with_references["compression"][1] == compression_distance("vwxyz\n\nzyx", "zyxwv")
    assert calls == [3, 3]


# --- when the compiled module cannot be used ----------------------------------------------------------------------


@pytest.fixture
def real_loader(monkeypatch):
    """compression._native as shipped, its cached answer forgotten before and after."""
    load_native.cache_clear()
    monkeypatch.setattr(compression, "_native", load_native)
    yield
    load_native.cache_clear()


def test_it_falls_back_to_python_with_one_warning_when_the_extension_does_not_load(real_loader, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "metrics.text._lz77", None)  # makes the import fail
    with caplog.at_level(logging.WARNING, logger="metrics.text.compression"):
        assert compression_distance("vwxyz", "zyxwv") == 5
        assert compression_distance("zyxwv", "wvxwyxzyyxwxwvzyxzyxwyxwvzyxwv") == 10
        assert compression_distances([("vwxyz", "wvxwyxzyyxwxwvzyxzyxwyxwvzyxwv"), ["", "aaaa"]]) == [16, 2]
        assert score_pairs([Pair("vwxyz", "zyxwv")], ["compression"], processes=1) == {"compression": [5.0]}
    warnings = [r for r in caplog.records if r.name == "metrics.text.compression"]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
    assert "metrics.text._lz77 is not used: it did not load" in warnings[0].getMessage()
    assert "pip install -e ." in warnings[0].getMessage()


def test_it_falls_back_when_the_extension_was_built_from_other_source(real_loader, monkeypatch, caplog):
    stale = ModuleType("metrics.text._lz77")
    stale.VERSION = compression._NATIVE_VERSION - 1
    stale.distance = lambda original, edited: -1
    monkeypatch.setitem(sys.modules, "metrics.text._lz77", stale)
    with caplog.at_level(logging.WARNING, logger="metrics.text.compression"):
        assert compression_distance("vwxyz", "zyxwv") == 5
    assert "built from other source" in caplog.text


def test_the_installed_implementation_gives_the_known_values(real_loader):
    # whichever loads here (the compiled module when the install built it, else the fallback)
    assert compression_distances([("vwxyz", "zyxwv"), ("zyxwv", "wvxwyxzyyxwxwvzyxzyxwyxwvzyxwv")]) == [5, 10]


# --- the IWSLT2019 study --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_it_equals_the_pure_python_path_and_the_published_package_on_every_iwslt2019_pair(shared_data):
    pairs = load_pairs(shared_data / "iwslt2019")
    assert len(pairs) == 5235
    assert compression_distances(pairs) == [compression._python_distance(a, b) for a, b in pairs]
    # the published package takes ASCII only; every fifth pair keeps the suite fast
    ascii_pairs = [(ascii_copy(a), ascii_copy(b)) for a, b in pairs[::5]]
    assert compression_distances(ascii_pairs) == [published(a, b) for a, b in ascii_pairs]
