"""Compression distance (Ergun, Muthukrishnan & Sahinalp 2003) and the zlib NCD baseline.

d(S -> T) = LZ77(S + sep + T) - LZ77(S + sep): the number of LZ77 phrases T needs when it may copy from S.
The LZ77 factorization of S + sep + T begins with the factorization of S + sep (no phrase can run across
sep, which occurs nowhere else), so one factorization suffices: count the phrases starting after sep.

Two implementations with identical values. The compiled one (`_lz77.c`, built by `pip install`) takes a few
microseconds per sentence pair and is linear in the texts' length. If it cannot load (no C compiler at install
time, a stale build), a warning is logged once and the pure-Python one runs instead: pydivsufsort's
longest-previous-factor array and a loop over the phrases, about a hundred times slower on short texts.
"""

from __future__ import annotations

import ctypes
import importlib
import logging
import zlib
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from types import ModuleType

import numpy as np
import pydivsufsort
from pydivsufsort import longest_previous_factor

logger = logging.getLogger(__name__)

# The interface version _lz77.c declares; a build from other source is not used.
_NATIVE_VERSION = 1
# Beyond Unicode's last code point, so it can never occur in a text.
_SEP_CODE_POINT = 0x110000
# Above this length a 1.1M-entry lookup table (linear time) beats sorting the code points (n log n).
_TABLE_RANKS_FROM = 1 << 18


def compression_distance(original: str, edited: str) -> int:
    """Phrases of the LZ77 factorization of edited when it may copy from original (see module doc)."""
    native = _native()
    if native is not None:
        try:
            return native.distance(original, edited)
        except OverflowError:  # over 2**31 symbols: the compiled code indexes with 32-bit integers
            pass
    return _python_distance(original, edited)


def compression_distances(pairs: Iterable[tuple[str, str]]) -> list[int]:
    """compression_distance of each (original, edited) pair, in order. One call for the lot: with the compiled
    code nearly all the time of a single short pair is the call itself."""
    if not isinstance(pairs, list | tuple):
        pairs = list(pairs)
    native = _native()
    if native is not None:
        try:
            return native.distances(pairs)
        except (TypeError, OverflowError):
            pass  # pairs as lists, say, or a pair too long: one at a time, which explains a real error
    return [compression_distance(original, edited) for original, edited in pairs]


@cache
def _native() -> ModuleType | None:
    """The compiled module, or None (with one warning per process) when it is missing or stale."""
    name = f"{__package__}._lz77"
    try:
        module = importlib.import_module(name)
    except ImportError as error:
        reason = f"it did not load ({error})"
    else:
        built = getattr(module, "VERSION", None)
        if built == _NATIVE_VERSION:
            return module
        reason = f"it was built from other source (version {built}, expected {_NATIVE_VERSION})"
    logger.warning(
        "compression distance: the compiled extension %s is not used: %s. Falling back to the pure-Python "
        "path (same values, about 100x slower on short texts); reinstall editlab with a C compiler present "
        "(`pip install -e .` or editlab/scripts/install) to build it.",
        name,
        reason,
    )
    return None


def _python_distance(original: str, edited: str) -> int:
    """The pure-Python path: pydivsufsort's longest-previous-factor array, then a walk over the phrases."""
    _one_openmp_thread()
    symbols = _symbols(original, edited)
    # lpf[i]: length of the longest prefix of symbols[i:] that also starts before i (0 if none).
    lpf = longest_previous_factor(symbols)
    # sep (at len(original)) is a phrase of its own, so the phrases of edited start right after it.
    lengths = memoryview(lpf)  # indexing gives Python ints cheaply, without copying the array
    i, end, phrases = len(original) + 1, len(lpf), 0
    while i < end:
        i += lengths[i] or 1
        phrases += 1
    return phrases


@cache
def _openmp_limiter() -> Callable[[int], object] | None:
    """omp_set_num_threads of the OpenMP runtime pydivsufsort's wheel bundles, if any.

    Two reasons to run libdivsufsort on one thread: on texts this short, waking a thread team costs far more
    than the sort (about 20x here on a busy 2-core machine), and a process whose OpenMP team has started
    cannot safely fork children that use OpenMP again.
    """
    libs = Path(pydivsufsort.__file__).resolve().parent.parent / "pydivsufsort.libs"
    for path in sorted(libs.glob("libgomp*.so*")):
        try:
            return ctypes.CDLL(str(path)).omp_set_num_threads
        except (OSError, AttributeError):
            continue
    return None


def _one_openmp_thread() -> None:
    # The setting is per calling thread in OpenMP, hence on every call (about a microsecond).
    limiter = _openmp_limiter()
    if limiter is not None:
        limiter(1)


def _symbols(original: str, edited: str) -> np.ndarray:
    """original + sep + edited as a writable array of symbols, as narrow as the texts allow."""
    if "\xff" not in original and "\xff" not in edited:
        try:
            # Latin-1 texts map one character to one byte: the fast path (pydivsufsort's uint8 code).
            raw = bytearray(original.encode("latin-1"))
            raw.append(0xFF)
            raw += edited.encode("latin-1")
            return np.frombuffer(raw, dtype=np.uint8)
        except UnicodeEncodeError:
            pass
    points = np.empty(len(original) + 1 + len(edited), dtype=np.uint32)
    points[: len(original)] = np.frombuffer(original.encode("utf-32-le"), dtype="<u4")
    points[len(original)] = _SEP_CODE_POINT
    points[len(original) + 1 :] = np.frombuffer(edited.encode("utf-32-le"), dtype="<u4")
    return _dense_ranks(points)


def _dense_ranks(points: np.ndarray) -> np.ndarray:
    """Replace code points by their rank among the distinct ones: same equalities, fewer bytes per symbol
    (pydivsufsort sorts multi-byte symbols as big-endian byte strings, so narrower is faster)."""
    if len(points) >= _TABLE_RANKS_FROM:
        present = np.zeros(_SEP_CODE_POINT + 1, dtype=np.bool_)
        present[points] = True
        rank_of = np.cumsum(present, dtype=np.int32) - 1
        ranks = rank_of[points]
        distinct = int(rank_of[-1]) + 1
    else:
        uniques, ranks = np.unique(points, return_inverse=True)
        distinct = len(uniques)
    if distinct <= 256:
        return ranks.astype(np.uint8)
    return ranks.astype(np.int32)


def ncd(original: str, edited: str) -> float:
    """Normalized compression distance (Cilibrasi & Vitanyi 2005) with zlib at level 9 on UTF-8 bytes."""
    x, y = original.encode("utf-8"), edited.encode("utf-8")
    cx, cy, cxy = (len(zlib.compress(b, 9)) for b in (x, y, x + y))
    return (cxy - min(cx, cy)) / max(cx, cy)
