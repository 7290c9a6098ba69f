"""Krippendorff's alpha and the ICCs of metrics.analysis.agreement against the published packages.

References: the ``krippendorff`` package (alpha, on the V x V coincidence matrix) and
``pingouin.intraclass_corr`` (Shrout & Fleiss ICCs with F-based CIs, which it rounds to 2 places).
IWSLT2019 (Scarton et al. 2019): five editors post-edited the same 1,047 segments.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pingouin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.analysis.agreement import ICC_TYPES, intraclass, krippendorff_alpha
from metrics.analysis.common import jsonable
from tests.metrics.iwslt_frame import iwslt_frame

PINGOUIN_NAMES = {
    "ICC(1,1)": "ICC1",
    "ICC(2,1)": "ICC2",
    "ICC(3,1)": "ICC3",
    "ICC(1,k)": "ICC1k",
    "ICC(2,k)": "ICC2k",
    "ICC(3,k)": "ICC3k",
}


def iwslt(shared_data: Path) -> pd.DataFrame:
    return iwslt_frame(shared_data)[["annotator", "item", "keystrokes", "time"]]


def reliability(frame: pd.DataFrame, column: str) -> np.ndarray:
    """Raters x units matrix (NaN where missing), the package's input."""
    return frame.pivot_table(index="annotator", columns="item", values=column, aggfunc="first").to_numpy(float)


def ours(frame: pd.DataFrame, column: str, level: str = "interval") -> float:
    result = krippendorff_alpha(frame["item"].to_numpy(), frame[column].to_numpy(float), level=level)
    assert result.alpha is not None
    return result.alpha


def test_alpha_on_iwslt_keystrokes_is_the_package_s(shared_data):
    frame = iwslt(shared_data)
    theirs = krippendorff.alpha(reliability_data=reliability(frame, "keystrokes"), level_of_measurement="interval")
    assert ours(frame, "keystrokes") == pytest.approx(theirs, abs=1e-10)
    assert 0.0 < theirs < 1.0


def test_alpha_on_an_iwslt_subset_of_times_is_the_package_s(shared_data):
    frame = iwslt(shared_data)
    chosen = sorted(frame["item"].unique())[:150]
    subset = frame[frame["item"].isin(chosen)]
    theirs = krippendorff.alpha(reliability_data=reliability(subset, "time"), level_of_measurement="interval")
    assert ours(subset, "time") == pytest.approx(theirs, abs=1e-10)


def test_alpha_on_all_iwslt_times_is_the_pairwise_formula(shared_data):
    """All 5,235 times: D_o as the mean over units of the mean squared pair difference, D_e over all pairs."""
    frame = iwslt(shared_data)
    matrix = reliability(frame, "time").T  # units x raters, complete
    n = matrix.size
    # ordered pairs within a unit: m(m-1) of them, each weighted 1/(m-1); m = 5 for every unit
    diffs = (matrix[:, :, None] - matrix[:, None, :]) ** 2
    d_o = diffs.sum() / (matrix.shape[1] - 1) / n
    flat = matrix.ravel()
    d_e = (n * np.sum(flat**2) - np.sum(flat) ** 2) * 2 / (n * (n - 1))
    expected = 1 - d_o / d_e
    assert ours(frame, "time") == pytest.approx(expected, abs=1e-10)
    print(f"IWSLT2019 alpha(time) on 5,235 values: {expected:.6f}")


reliability_data = st.integers(2, 6).flatmap(
    lambda raters: st.integers(2, 12).flatmap(
        lambda units: st.lists(
            st.lists(st.one_of(st.none(), st.integers(0, 6)), min_size=units, max_size=units),
            min_size=raters,
            max_size=raters,
        )
    )
)


def _flat(data):
    units, values = [], []
    for row in data:
        for unit, value in enumerate(row):
            units.append(unit)
            values.append(np.nan if value is None else float(value))
    return np.array(units), np.array(values)


@pytest.mark.parametrize("level", ["interval", "nominal"])
@settings(max_examples=150, deadline=None)
@given(data=reliability_data)
def test_alpha_is_the_package_s_on_generated_data_with_missing_values(level, data):
    matrix = np.array([[np.nan if v is None else v for v in row] for row in data], dtype=float)
    units, values = _flat(data)
    result = krippendorff_alpha(units, values, level=level)
    counts = (~np.isnan(matrix)).sum(axis=0)
    pairable = matrix[:, counts >= 2]
    distinct = np.unique(pairable[~np.isnan(pairable)])
    if distinct.size < 2:  # the package refuses one value; ours says None
        assert result.alpha is None
        return
    theirs = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
    assert result.alpha == pytest.approx(theirs, abs=1e-10)
    assert result.pairable == int(counts[counts >= 2].sum())


def test_alpha_refuses_an_unknown_level():
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha([1, 1], [1.0, 2.0], level="ordinalish")


def _pingouin(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    table = pingouin.intraclass_corr(data=frame, targets="item", raters="annotator", ratings=column, nan_policy="omit")
    table["key"] = [
        PINGOUIN_NAMES[name] for name in ["ICC(1,1)", "ICC(2,1)", "ICC(3,1)", "ICC(1,k)", "ICC(2,k)", "ICC(3,k)"]
    ]
    return table.set_index("key")


def assert_icc(result, table: pd.DataFrame) -> None:
    for name in ICC_TYPES:
        row = table.loc[PINGOUIN_NAMES[name]]
        assert result.values[name] == pytest.approx(row["ICC"], abs=1e-10)
        assert result.f[name] == pytest.approx(row["F"], rel=1e-10)
        lo, hi = result.ci95[name]
        assert lo == pytest.approx(row["CI95"][0], abs=0.005 + 1e-12)  # pingouin rounds the CI to 2 places
        assert hi == pytest.approx(row["CI95"][1], abs=0.005 + 1e-12)


@pytest.mark.parametrize("column", ["keystrokes", "time"])
def test_icc_on_iwslt_is_pingouin_s(shared_data, column):
    frame = iwslt(shared_data)
    result = intraclass(frame["item"].to_numpy(), frame["annotator"].to_numpy(), frame[column].to_numpy(float))
    assert result is not None and result.items == 1047 and result.raters == 5 and result.dropped == 0
    assert_icc(result, _pingouin(frame, column))


def test_icc_drops_incomplete_items_as_pingouin_omits_them():
    rng = np.random.default_rng(3)
    rows = [(f"i{i}", f"r{r}", float(rng.normal(i % 7, 1.0))) for i in range(40) for r in range(4)]
    rows = [row for index, row in enumerate(rows) if index not in {5, 17, 18, 90}]
    frame = pd.DataFrame(rows, columns=["item", "annotator", "score"])
    result = intraclass(frame["item"].to_numpy(), frame["annotator"].to_numpy(), frame["score"].to_numpy())
    assert result is not None and result.items == 37 and result.dropped == 3
    assert_icc(result, _pingouin(frame, "score"))


def test_icc_needs_two_complete_items():
    assert intraclass(["a", "a"], ["x", "y"], [1.0, 2.0]) is None


def test_the_one_way_icc_is_pingouin_s_icc1_on_complete_data(shared_data):
    from metrics.analysis.agreement import icc_oneway

    frame = iwslt(shared_data)
    result = icc_oneway(frame["item"].to_numpy(), frame["keystrokes"].to_numpy(float))
    table = _pingouin(frame, "keystrokes")
    assert result.value == pytest.approx(table.loc["ICC1", "ICC"], abs=1e-10)
    assert result.f == pytest.approx(table.loc["ICC1", "F"], rel=1e-10)
    assert (result.items, result.ratings, result.n0) == (1047, 5235, pytest.approx(5.0))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(0, 50), min_size=1, max_size=6), min_size=2, max_size=15))
def test_the_one_way_icc_with_unequal_groups_is_the_anova_s(groups):
    from scipy import stats as scipy_stats

    from metrics.analysis.agreement import icc_oneway

    units = np.concatenate([np.full(len(g), k) for k, g in enumerate(groups)])
    values = np.concatenate([np.asarray(g, dtype=float) for g in groups])
    result = icc_oneway(units, values)
    kept = [np.asarray(g, dtype=float) for g in groups if len(g) >= 2]
    n = sum(len(g) for g in kept)
    if len(kept) < 2 or result.value is None:
        return
    f = scipy_stats.f_oneway(*kept).statistic
    assert result.f == pytest.approx(f, rel=1e-9)
    n0 = (n - sum(len(g) ** 2 for g in kept) / n) / (len(kept) - 1)
    assert result.n0 == pytest.approx(n0, rel=1e-12)
    assert result.value == pytest.approx((f - 1) / (f + n0 - 1), rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 6).flatmap(
        lambda k: st.lists(
            st.lists(st.sampled_from([0.0, 1.0, 2.0, 5.0]), min_size=k, max_size=k), min_size=2, max_size=8
        )
    )
)
def test_icc_of_any_complete_matrix_never_fails_and_is_pingouin_s_where_finite(matrix):
    """Small value sets make exact fits common (no error, no spread between items or raters): the ICC is then
    inf or NaN, None in JSON, never a ZeroDivisionError (it was a 500 of the agreement API). Each point ICC is
    checked against the same formula in exact rational arithmetic: undefined there (a zero denominator) means
    not finite here; defined means equal. pingouin is compared where it is finite and the exact value is
    defined (where the exact denominator is zero, its rounding residue can give a finite 1e15)."""
    rows = [(f"i{i}", f"r{r}", value) for i, row in enumerate(matrix) for r, value in enumerate(row)]
    frame = pd.DataFrame(rows, columns=["item", "annotator", "score"])
    result = intraclass(frame["item"].to_numpy(), frame["annotator"].to_numpy(), frame["score"].to_numpy())
    assert result is not None and result.items == len(matrix)
    assert jsonable(result.values) == {
        name: (value if math.isfinite(value) else None) for name, value in result.values.items()
    }
    exact = _exact_iccs(matrix)
    for name, value in exact.items():
        ours = result.values[name]
        if value is None:
            assert not math.isfinite(ours), name
        else:
            assert ours == pytest.approx(float(value), rel=1e-9, abs=1e-12), name
    if len(rows) < 5:  # pingouin asks for five values
        return
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = _pingouin(frame, "score")
    for name in ICC_TYPES:
        theirs = float(table.loc[PINGOUIN_NAMES[name], "ICC"])
        if math.isfinite(theirs) and exact[name] is not None:
            assert result.values[name] == pytest.approx(theirs, abs=1e-9)


def _exact_iccs(matrix) -> dict:
    """Shrout & Fleiss's six point ICCs in Fractions; None where a denominator is zero."""
    x = [[Fraction(v) for v in row] for row in matrix]
    n, k = len(x), len(x[0])
    grand = sum(map(sum, x)) / (n * k)
    ss_rows = k * sum((sum(row) / k - grand) ** 2 for row in x)
    ss_cols = n * sum((sum(row[j] for row in x) / n - grand) ** 2 for j in range(k))
    ss_err = sum((v - grand) ** 2 for row in x for v in row) - ss_rows - ss_cols
    msb, msj = ss_rows / (n - 1), ss_cols / (k - 1)
    msw, mse = (ss_cols + ss_err) / (n * (k - 1)), ss_err / ((n - 1) * (k - 1))
    parts = {
        "ICC(1,1)": (msb - msw, msb + (k - 1) * msw),
        "ICC(2,1)": (msb - mse, msb + (k - 1) * mse + k * (msj - mse) / n),
        "ICC(3,1)": (msb - mse, msb + (k - 1) * mse),
        "ICC(1,k)": (msb - msw, msb),
        "ICC(2,k)": (msb - mse, msb + (msj - mse) / n),
        "ICC(3,k)": (msb - mse, msb),
    }
    return {name: (top / bottom if bottom else None) for name, (top, bottom) in parts.items()}
