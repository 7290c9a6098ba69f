"""The effort model's design matrix, written column by column, is the one np.column_stack made of
pd.get_dummies(drop_first=True) and the standardised inputs: the same coefficients to the last bit."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.analysis.common import Settings
from metrics.analysis.effort_model import _standardise, effort_model


@st.composite
def frames(draw):
    n = draw(st.integers(20, 400))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    annotators = draw(st.integers(1, 9))
    names = [f"editor-{i}" for i in rng.permutation(annotators)]  # not in sorted order
    return pd.DataFrame(
        {
            "ter": rng.normal(size=n),
            "chrf": rng.integers(0, 6, n).astype(float),
            "original_length": rng.integers(1, 80, n),
            "edited_length": rng.integers(1, 80, n),
            "wall_ms": rng.exponential(size=n) * 1000,
            "annotator": pd.Series([names[i] for i in rng.integers(0, annotators, n)]),
        }
    )


@settings(max_examples=60, deadline=None)
@given(frames())
def test_the_coefficients_are_those_of_the_get_dummies_design(frame):
    model = effort_model(frame, metrics=["ter", "chrf"], target="wall_ms", settings=Settings(cv_repeats=2))
    columns = [np.ones(len(frame))]
    for name in ("ter", "chrf", "original_length", "edited_length"):
        columns.append(_standardise(frame[name].to_numpy(float)))
    if frame["annotator"].nunique() > 1:
        dummies = pd.get_dummies(frame["annotator"].astype(str), drop_first=True, dtype=float)
        columns.extend(dummies[c].to_numpy() for c in dummies.columns)
    beta = np.linalg.lstsq(np.column_stack(columns), frame["wall_ms"].to_numpy(float), rcond=None)[0]
    assert model.coefficients == {
        name: float(beta[i]) for i, name in enumerate(("ter", "chrf", "original_length", "edited_length"), start=1)
    }
    assert model.inputs[-1:] == (["annotator"] if frame["annotator"].nunique() > 1 else ["edited_length"])
