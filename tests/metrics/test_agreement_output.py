"""Output agreement (metrics.analysis.output_agreement), pure: pairs, means and the flag rule, each checked
against a brute-force computation written here, on Hypothesis-generated overlapping work."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.analysis.output_agreement import MODIFIED_Z_CUTOFF, modified_z, output_distances, overlap_pairs


def length_gap(pairs):
    return [abs(len(a) - len(b)) + 0.5 * (a[:1] != b[:1]) for a, b in pairs]


work = st.lists(
    st.tuples(st.integers(0, 6), st.sampled_from("abcde"), st.text(alphabet="xyz ", max_size=8)),
    min_size=0,
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(work)
def test_pairs_and_means_are_the_brute_force_ones(rows):
    units = [u for u, _, _ in rows]
    editors = [e for _, e, _ in rows]
    texts = [t for _, _, t in rows]
    i, j = overlap_pairs(units, editors)
    expected = {
        (a, b)
        for a, b in itertools.combinations(range(len(rows)), 2)
        if units[a] == units[b] and editors[a] != editors[b]
    }
    assert {(min(a, b), max(a, b)) for a, b in zip(i.tolist(), j.tolist(), strict=True)} == expected
    assert len(i) == len(expected)
    (out,) = output_distances(units, editors, texts, distances={"gap": length_gap}, directions={"gap": "effort"})
    assert out.pairs == len(expected)
    if not expected:
        assert out.mean is None and out.editors == []
        return
    d = {(a, b): length_gap([(texts[a], texts[b])])[0] for a, b in expected}  # symmetric already
    assert out.mean == pytest.approx(np.mean(list(d.values())), abs=1e-12)
    for editor in out.editors:
        mine = [v for (a, b), v in d.items() if editor.editor in (editors[a], editors[b])]
        assert (editor.pairs, editor.mean) == (len(mine), pytest.approx(np.mean(mine), abs=1e-12))
    for unit, mean in out.item_means.items():
        assert mean == pytest.approx(np.mean([v for (a, _), v in d.items() if str(units[a]) == unit]), abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 1000), min_size=3, max_size=12),
    st.integers(1, 100),
    st.integers(-50, 50),
)
def test_the_flag_rule_does_not_depend_on_the_distance_s_scale_or_origin(means, scale, shift):
    values = np.asarray(means, dtype=float)  # integers: the affine map is exact in floating point
    base, moved = modified_z(values), modified_z(values * scale + shift)
    assert (base is None) == (moved is None)
    if base is not None:
        assert moved == pytest.approx(base, rel=1e-6, abs=1e-6)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 1000), min_size=4, max_size=12), st.integers(0, 10**6))
def test_an_editor_far_beyond_four_or_more_others_is_flagged(others, far):
    """Beyond n >= 4 others by 100 n times their range: flagged. (MAD <= the range when the others are over half
    the values; with MAD 0 the MeanAD stand-in tends to (n + 1)/1.2533 > 3.5 from n = 4 on.)"""
    values = np.asarray(others, dtype=float)
    reach = 100 * values.size * max(float(np.ptp(values)), 1.0)
    z = modified_z(np.append(values, values.max() + reach + far))
    assert z is not None and z[-1] > MODIFIED_Z_CUTOFF


def test_a_z_score_cannot_flag_five_editors_so_the_rule_is_the_modified_z():
    """With k values no z (ddof=1) exceeds (k-1)/sqrt(k): 1.79 for 5 editors, however far one is."""
    values = np.array([1.0, 1.1, 0.9, 1.05, 1000.0])
    z = (values - values.mean()) / values.std(ddof=1)
    assert z.max() < (5 - 1) / np.sqrt(5) < 2
    mz = modified_z(values)
    assert mz is not None and mz[-1] > MODIFIED_Z_CUTOFF and (mz[:-1] < MODIFIED_Z_CUTOFF).all()


def test_a_similarity_flags_the_low_end():
    units = [0] * 5 + [1] * 5
    editors = list("abcde") * 2
    texts = (["same"] * 4 + ["other text"]) * 2

    def overlap(pairs):
        return [1.0 if a == b else 0.1 + 0.01 * len(a + b) for a, b in pairs]

    (out,) = output_distances(units, editors, texts, distances={"s": overlap}, directions={"s": "similarity"})
    assert [e.editor for e in out.editors if e.flagged] == ["e"]


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=40), st.lists(st.sampled_from(["compression", "ter", "chrf", " ", ",", "x"])).map("".join)
    )
)
def test_any_distances_text_is_a_subset_of_the_three_or_a_refusal_naming_it(text):
    from metrics.agreement_report import DISTANCES, distances_parse
    from metrics.analysis_fields import SelectionError

    try:
        names = distances_parse(text)
    except SelectionError as exc:
        assert "distance" in str(exc)
        return
    assert names and set(names) <= set(DISTANCES) and len(set(names)) == len(names)
