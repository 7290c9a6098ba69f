"""Compression distance (Ergun, Muthukrishnan & Sahinalp 2003) and the zlib NCD baseline.

d(S -> T) = LZ77(S + sep + T) - LZ77(S + sep): the number of LZ77 phrases T needs when it may copy from S.
The LZ77 factorization of S + sep + T begins with the factorization of S + sep (no phrase can run across
sep, which occurs nowhere else), so one factorization suffices: count the phrases starting after sep.
"""

from __future__ import annotations

import ctypes
import zlib
from functools import cache
from pathlib import Path

import numpy as np
import pydivsufsort
from pydivsufsort import longest_previous_factor

# Beyond Unicode's last code point, so it can never occur in a text.
_SEP_CODE_POINT = 0x110000
# Above this length a 1.1M-entry lookup table (linear time) beats sorting the code points (n log n).
_TABLE_RANKS_FROM = 1 << 18


def compression_distance(original: str, edited: str) -> int:
    """Phrases of the LZ77 factorization of edited when it may copy from original (see module doc)."""
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
def _openmp_limiter() -> ctypes._CFuncPtr | None:
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
