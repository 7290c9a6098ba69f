"""The published protocol's prediction (knn.published_predict) against scikit-learn's own predict.

published_predict queries the fitted model's KD tree itself, skipping the nodes tied with the K-th distance
that scikit-learn visits (with many equal values, each of its queries costs the number of rows tied): the
neighbours, their order and so the predictions must be exactly scikit-learn's, ties included.
"""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsRegressor

from metrics.analysis.knn import knn_r2_published, published_predict


def _values(draw, n: int) -> np.ndarray:
    """Metric-like values: few distinct integers (ties everywhere), rounded reals, or a heap of zeros."""
    kind = draw(st.sampled_from(["integers", "rounded", "zeros", "reals"]))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    if kind == "integers":
        return rng.integers(0, draw(st.integers(1, 40)), size=n).astype(float)
    if kind == "rounded":
        return np.round(rng.exponential(size=n) * 10, draw(st.integers(0, 2)))
    if kind == "zeros":
        return np.where(rng.random(n) < 0.6, 0.0, rng.integers(1, 6, size=n).astype(float))
    return rng.normal(size=n)


@st.composite
def problems(draw):
    n = draw(st.integers(12, 1500))
    x = _values(draw, n)
    targets = draw(st.integers(0, 2))  # 0: a 1-D y
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    y = rng.normal(size=n) if targets == 0 else rng.normal(size=(n, targets))
    k = draw(st.integers(1, 15))
    leaf_size = draw(st.sampled_from([1, 2, 5, 30]))
    return x, y, k, leaf_size


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_published_predict_gives_sklearns_predictions_exactly(problem):
    x, y, k, leaf_size = problem
    x_train, x_test, y_train, _ = train_test_split(x.reshape(-1, 1), y, test_size=0.3, random_state=0)
    model = KNeighborsRegressor(n_neighbors=min(k, x_train.shape[0]), leaf_size=leaf_size).fit(x_train, y_train)
    expected = model.predict(x_test)
    got = published_predict(model, x_test)
    assert got.shape == expected.shape
    assert np.array_equal(got, expected)


@settings(max_examples=60, deadline=None)
@given(problems())
def test_knn_r2_published_is_sklearns_figure_to_the_last_bit(problem):
    x, y, k, _ = problem
    x_train, x_test, y_train, y_test = train_test_split(x.reshape(-1, 1), y, test_size=0.2, random_state=42)
    model = KNeighborsRegressor(n_neighbors=min(k, x_train.shape[0])).fit(x_train, y_train)
    expected = r2_score(y_test, model.predict(x_test), multioutput="raw_values")
    got = np.atleast_1d(knn_r2_published(x, y, k=k))
    assert np.array_equal(got, expected, equal_nan=True)


def test_other_fits_are_predicted_by_the_model():
    """A brute-force fit (or a metric other than the euclidean) is not a KD tree: the model's own predict."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, size=200).astype(float).reshape(-1, 1)
    y = rng.normal(size=200)
    for model in (
        KNeighborsRegressor(n_neighbors=5, algorithm="brute"),
        KNeighborsRegressor(n_neighbors=5, metric="manhattan"),
        KNeighborsRegressor(n_neighbors=5, weights="distance"),
    ):
        model.fit(x[:150], y[:150])
        assert np.array_equal(published_predict(model, x[150:]), model.predict(x[150:]))


def test_many_ties_at_scale_match_sklearn():
    """A heap of equal values (as an unchanged post-edit's distance 0), where sklearn's query visits every tied row."""
    rng = np.random.default_rng(11)
    x = np.where(rng.random(20_000) < 0.3, 0.0, rng.integers(1, 40, size=20_000).astype(float))
    y = rng.exponential(size=20_000)
    model = KNeighborsRegressor(n_neighbors=5).fit(x[:16_000].reshape(-1, 1), y[:16_000])
    queries = x[16_000:].reshape(-1, 1)
    assert np.array_equal(published_predict(model, queries), model.predict(queries))
