"""The bootstrap's counts, drawn a resample at a time, are those of one (chunk, units) draw per chunk."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.analysis.bootstrap import CHUNK, resample_counts


def _drawn_by_chunk(units: int, resamples: int, seed: int) -> np.ndarray:
    """The counts as they were drawn before: each chunk's draws as one array, counted with offsets."""
    rng = np.random.default_rng(seed)
    chunks = []
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        draws = rng.integers(0, units, size=(size, units))
        offsets = (np.arange(size) * units)[:, None]
        counts = np.bincount((draws + offsets).ravel(), minlength=size * units).reshape(size, units)
        chunks.append(counts.astype(float))
    return np.vstack(chunks)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 350), st.integers(0, 2**32 - 1))
def test_counts_are_the_chunk_draws(units, resamples, seed):
    chunks = list(resample_counts(units, resamples, seed))
    assert [c.shape[0] for c in chunks] == [min(CHUNK, resamples - s) for s in range(0, resamples, CHUNK)]
    got = np.vstack(chunks)
    assert got.dtype == float
    assert np.array_equal(got, _drawn_by_chunk(units, resamples, seed))
    assert (got.sum(axis=1) == units).all()
