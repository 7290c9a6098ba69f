"""The grouped CV's codes from a frame column (pipeline.column_group_codes) are folds.group_codes' (np.unique of
the values as strings): the same folds as scikit-learn's GroupKFold on the ids."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.analysis.folds import group_codes
from metrics.analysis.pipeline import column_group_codes

ids = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6),
    st.sampled_from(["r1:a", "r10:a", "r2:a", "R1:a", "é", "e", "z", "", "a\x00", "a"]),
    st.none(),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(ids, min_size=1, max_size=60), st.sampled_from(["str", "object"]))
def test_column_codes_are_np_uniques(values, dtype):
    column = pd.Series(values, dtype=dtype)
    expected = group_codes(column.fillna("").astype(str).to_numpy())
    got = column_group_codes(column)
    assert got.dtype == expected.dtype
    assert np.array_equal(got, expected)
