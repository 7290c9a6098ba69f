"""metrics.analysis against scipy / sklearn computed here, by hand, and on its edge cases."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
from sklearn.model_selection import GroupKFold, LeaveOneGroupOut, RepeatedKFold, cross_val_score, train_test_split
from sklearn.neighbors import KNeighborsRegressor

from metrics.analysis import (
    SIMILARITY,
    Settings,
    analyze,
    analyze_targets,
    correlate,
    fit_line,
    format_p,
    group_fold_ids,
    knn_predict,
    knn_r2_cv,
    knn_r2_published,
    knn_r2_tie_averaged,
    standardise,
    summary_rows,
    williams_test,
)


def study(n: int = 300, annotators: int = 3, seed: int = 7) -> pd.DataFrame:
    """Effort driven by a hidden amount of change, seen through three noisy metrics."""
    rng = np.random.default_rng(seed)
    change = rng.gamma(2.0, 5.0, n)
    who = rng.integers(0, annotators, n)
    original_length = rng.integers(10, 200, n)
    return pd.DataFrame(
        {
            "annotator": [f"ann{a}" for a in who],
            "original": ["o" * int(length) for length in original_length],
            "edited": [
                "e" * int(length + change_ // 2) for length, change_ in zip(original_length, change, strict=True)
            ],
            "keystrokes": change * 2 + rng.normal(0, 3, n) + who * 2,
            "wall_ms": 1000 + 300 * change + 5 * original_length + rng.normal(0, 800, n),
            "close": change + rng.normal(0, 1, n),
            "far": change + rng.normal(0, 6, n),
            "similar": -change + rng.normal(0, 2, n),
        }
    )


def test_correlations_match_scipy():
    frame = study()
    x, y = frame["far"].to_numpy(), frame["keystrokes"].to_numpy()
    result = correlate(x, y)
    expected = stats.pearsonr(x, y)
    assert result.pearson == pytest.approx(expected.statistic, rel=1e-12)
    assert result.pearson_p == pytest.approx(expected.pvalue, rel=1e-9)
    ci = expected.confidence_interval(0.95)  # scipy's is Fisher's z too
    assert result.pearson_ci == pytest.approx((ci.low, ci.high), rel=1e-9)
    rho = stats.spearmanr(x, y)
    assert result.spearman == pytest.approx(rho.statistic, rel=1e-12)
    assert result.spearman_p == pytest.approx(rho.pvalue, rel=1e-9)


def test_spearman_uses_average_ranks_for_ties_like_scipy():
    x = np.array([1, 1, 2, 3, 3, 3, 4, 5, 5, 6], dtype=float)
    y = np.array([2, 1, 4, 3, 6, 5, 7, 9, 8, 9], dtype=float)
    assert correlate(x, y).spearman == pytest.approx(stats.spearmanr(x, y).statistic, rel=1e-12)


def _sklearn_published(x: np.ndarray, y: np.ndarray, *, k: int = 5, test_size: float = 0.2, seed: int = 42) -> float:
    """The published protocol as its code runs it, rows in the order given."""
    x_train, x_test, y_train, y_test = train_test_split(x[:, None], y, test_size=test_size, random_state=seed)
    return r2_score(y_test, KNeighborsRegressor(n_neighbors=k).fit(x_train, y_train).predict(x_test))


def test_knn_published_protocol_matches_sklearn():
    frame = study(n=400)
    x, y = frame["far"].to_numpy(), frame["wall_ms"].to_numpy()
    expected = _sklearn_published(x, y)
    assert knn_r2_published(x, y, k=5, test_size=0.2, seed=42) == pytest.approx(expected, rel=1e-10)
    assert knn_r2_tie_averaged(x, y, k=5, test_size=0.2, seed=42) == pytest.approx(expected, rel=1e-10)  # no ties


def test_knn_split_size_and_seed_are_configurable():
    frame = study(n=400)
    x, y = frame["far"].to_numpy(), frame["wall_ms"].to_numpy()
    expected = _sklearn_published(x, y, k=7, test_size=0.3, seed=3)
    assert knn_r2_published(x, y, k=7, test_size=0.3, seed=3) == pytest.approx(expected, rel=1e-10)
    assert knn_r2_tie_averaged(x, y, k=7, test_size=0.3, seed=3) == pytest.approx(expected, rel=1e-10)


def test_knn_published_protocol_equals_sklearn_on_heavily_tied_integer_metrics():
    """Integer metric values (most rows tie at the 5th distance): scikit-learn keeps whichever tied
    neighbours its tree returns; knn_r2 is that figure, the tie-averaged one differs."""
    rng = np.random.default_rng(11)
    n = 2000
    change = rng.poisson(6, n)
    frame = pd.DataFrame(
        {
            "annotator": [f"ann{a}" for a in rng.integers(0, 4, n)],
            "external_id": [f"item{i}" for i in rng.integers(0, 500, n)],
            "levels": (change + rng.integers(-2, 3, n)).astype(float),  # ~15 distinct values
            "keystrokes": (3 * change + rng.poisson(4, n)).astype(float),
        }
    )
    x, y = frame["levels"].to_numpy(), frame["keystrokes"].to_numpy()
    assert np.unique(x).size < 20
    expected = _sklearn_published(x, y)
    for k, test_size, seed in ((5, 0.2, 42), (3, 0.25, 7)):
        assert knn_r2_published(x, y, k=k, test_size=test_size, seed=seed) == pytest.approx(
            _sklearn_published(x, y, k=k, test_size=test_size, seed=seed), abs=1e-12
        )
    result = analyze(frame, metrics=["levels"], target="keystrokes", settings=Settings(cv_repeats=2)).metrics["levels"]
    assert abs(result.knn_r2 - expected) <= 1e-12
    assert result.knn_r2_tie_averaged == pytest.approx(knn_r2_tie_averaged(x, y), abs=1e-12)
    assert abs(result.knn_r2_tie_averaged - result.knn_r2) > 1e-3  # the ties matter here
    summary = summary_rows(analyze(frame, metrics=["levels"], target="keystrokes", settings=Settings(cv_repeats=2)))
    assert abs(summary[0]["knn_r2"] - expected) <= 1e-12
    assert summary[0]["knn_r2_tie_averaged"] == pytest.approx(result.knn_r2_tie_averaged, abs=1e-12)


def test_knn_published_protocol_follows_the_row_order_it_is_given():
    rng = np.random.default_rng(5)
    x = rng.integers(0, 8, 600).astype(float)
    y = 2 * x + rng.normal(0, 3, 600)
    reordered = rng.permutation(600)
    assert knn_r2_published(x, y) == pytest.approx(_sklearn_published(x, y), abs=1e-12)
    assert knn_r2_published(x[reordered], y[reordered]) == pytest.approx(
        _sklearn_published(x[reordered], y[reordered]), abs=1e-12
    )


def test_knn_repeated_cv_matches_sklearn():
    frame = study(n=300)
    x, y = frame["close"].to_numpy(), frame["keystrokes"].to_numpy()
    scores = (
        cross_val_score(
            KNeighborsRegressor(n_neighbors=5),
            x[:, None],
            y,
            scoring="r2",
            cv=RepeatedKFold(n_splits=5, n_repeats=10, random_state=42),
        )
        .reshape(10, 5)
        .mean(axis=1)
    )
    result = knn_r2_cv(x, y, k=5, folds=5, repeats=10, seed=42)
    assert result.repeats == pytest.approx(list(scores), rel=1e-10)
    assert result.mean == pytest.approx(scores.mean(), rel=1e-10)
    assert result.sd == pytest.approx(scores.std(ddof=1), rel=1e-8)


def test_knn_points_tied_at_the_kth_distance_share_its_weight():
    x_train = np.array([0.0, 1.0, 1.0, 1.0, 2.0, 5.0])
    y_train = np.array([10.0, 1.0, 2.0, 6.0, 20.0, 50.0])
    # k=2 at 1.0: three points at distance 0 share the two slots -> their mean.
    # k=2 at 1.5: 1.0 (x3) and 2.0 are all at 0.5 -> mean of the four.
    # k=4 at 0.0: 0.0 (d=0), then 1.0 x3 (d=1) share three slots.
    predicted = knn_predict(x_train, y_train, np.array([1.0, 1.5, 0.0]), k=2)
    assert predicted[:2] == pytest.approx([3.0, 29.0 / 4])
    assert knn_predict(x_train, y_train, np.array([0.0]), k=4)[0] == pytest.approx((10 + 3 * 3.0) / 4)


def test_knn_with_ties_equals_the_average_over_tie_breaks_on_random_data():
    rng = np.random.default_rng(0)
    for _ in range(50):
        x_train = rng.integers(0, 6, size=rng.integers(6, 40)).astype(float)
        y_train = rng.normal(size=x_train.size)
        queries = rng.integers(-2, 8, size=6).astype(float)
        expected = []
        for q in queries:
            distance = np.abs(x_train - q)
            kth = np.sort(distance)[4]
            inside, tied = distance < kth, distance == kth
            expected.append((y_train[inside].sum() + (5 - inside.sum()) * y_train[tied].mean()) / 5)
        assert knn_predict(x_train, y_train, queries, k=5) == pytest.approx(expected)


def test_williams_matches_a_hand_computed_value():
    # r12 = .5 (target, best), r13 = .3 (target, other), r23 = .4, n = 100:
    # |R| = 1 - .25 - .09 - .16 + 2(.5)(.3)(.4) = .62
    # denominator = 2 (99/97)(.62) + ((.5+.3)/2)^2 (1-.4)^3 = 1.265567 + .03456 = 1.300127
    # t = (.5 - .3) sqrt(99 (1.4) / 1.300127) = .2 * 10.32497 = 2.06499, df = 97
    t, df, p = williams_test(0.5, 0.3, 0.4, 100)
    assert t == pytest.approx(2.06499, abs=1e-5)
    assert df == 97
    assert p == pytest.approx(stats.t.sf(2.0649936, 97), rel=1e-6)
    assert 0.02 < p < 0.022


def test_williams_is_not_significant_for_equal_correlations():
    t, _, p = williams_test(0.4, 0.4, 0.6, 50)
    assert t == 0.0 and p == pytest.approx(0.5)


def test_analysis_tests_the_best_metric_against_each_other_on_common_rows():
    frame = study()
    frame.loc[:9, "far"] = np.nan
    result = analyze(frame, metrics=["close", "far"], target="keystrokes")
    assert result.best_metric == "close"
    assert result.metrics["close"].williams_vs_best is None
    williams = result.metrics["far"].williams_vs_best
    rows = frame.dropna(subset=["far"])
    r12 = np.corrcoef(rows["keystrokes"], rows["close"])[0, 1]
    r13 = np.corrcoef(rows["keystrokes"], rows["far"])[0, 1]
    r23 = np.corrcoef(rows["close"], rows["far"])[0, 1]
    assert williams.n == len(rows) == 290
    assert (williams.r_best, williams.r_metric, williams.r_between) == pytest.approx((r12, r13, r23))
    assert williams.t == pytest.approx(williams_test(r12, r13, r23, 290)[0])
    assert williams.significant


def test_similarity_metrics_are_oriented_when_choosing_the_best():
    frame = study()
    frame["similar"] = -frame["close"] * 3  # the best predictor, as a similarity
    result = analyze(frame, metrics=["far", "similar"], target="keystrokes", directions={"similar": SIMILARITY})
    similar = result.metrics["similar"]
    assert similar.pearson < 0 < similar.pearson_oriented == pytest.approx(-similar.pearson)
    assert result.best_metric == "similar"
    assert result.metrics["far"].williams_vs_best.r_best == pytest.approx(similar.pearson_oriented)
    unoriented = analyze(frame, metrics=["far", "similar"], target="keystrokes")
    assert unoriented.best_metric == "far"


def test_pooled_and_per_annotator_correlations():
    frame = study(n=240, annotators=3)
    result = analyze(frame, metrics=["far"], target="wall_ms")
    far = result.metrics["far"]
    assert far.pearson == pytest.approx(stats.pearsonr(frame["far"], frame["wall_ms"]).statistic)
    assert set(far.pearson_per_annotator) == {"ann0", "ann1", "ann2"} == set(result.annotators)
    for name, rows in frame.groupby("annotator"):
        assert far.pearson_per_annotator[name] == pytest.approx(stats.pearsonr(rows["far"], rows["wall_ms"]).statistic)
        assert far.per_annotator[name].spearman == pytest.approx(
            stats.spearmanr(rows["far"], rows["wall_ms"]).statistic
        )
        assert far.per_annotator[name].n == len(rows)


def test_analysis_knn_numbers_match_sklearn():
    frame = study(n=200)
    result = analyze(frame, metrics=["close"], target="keystrokes", settings=Settings(cv_repeats=3))
    x, y = frame["close"].to_numpy()[:, None], frame["keystrokes"].to_numpy()
    train, test = train_test_split(np.arange(len(y)), test_size=0.2, random_state=42)
    split = r2_score(y[test], KNeighborsRegressor(5).fit(x[train], y[train]).predict(x[test]))
    cv = cross_val_score(
        KNeighborsRegressor(5), x, y, scoring="r2", cv=RepeatedKFold(n_splits=5, n_repeats=3, random_state=42)
    )
    assert result.metrics["close"].knn_r2 == pytest.approx(split, rel=1e-10)
    assert result.metrics["close"].knn_r2_cv.mean == pytest.approx(cv.mean(), rel=1e-10)


def test_metric_matrix_is_the_pairwise_pearson_matrix():
    frame = study()
    frame.loc[:4, "close"] = np.nan
    matrix = analyze(frame, metrics=["close", "far", "similar"], target="keystrokes").matrix
    assert matrix["metrics"] == ["close", "far", "similar"]
    rows = frame.dropna(subset=["close"])
    assert matrix["values"][0][1] == pytest.approx(np.corrcoef(rows["close"], rows["far"])[0, 1])
    assert matrix["values"][1][2] == pytest.approx(np.corrcoef(frame["far"], frame["similar"])[0, 1])
    assert matrix["values"][2][2] == pytest.approx(1.0)


def _design(frame: pd.DataFrame, metrics: list[str], drop: str | None = None) -> np.ndarray:
    parts = {m: frame[[m]].to_numpy() for m in metrics}
    parts["original_length"] = frame["original"].str.len().to_numpy()[:, None]
    parts["edited_length"] = frame["edited"].str.len().to_numpy()[:, None]
    parts["annotator"] = pd.get_dummies(frame["annotator"], drop_first=True, dtype=float).to_numpy()
    return np.hstack([v for k, v in parts.items() if k != drop])


def _sklearn_cv_r2(design: np.ndarray, y: np.ndarray) -> np.ndarray:
    cv = RepeatedKFold(n_splits=5, n_repeats=10, random_state=42)
    return cross_val_score(LinearRegression(), design, y, cv=cv, scoring="r2").reshape(10, 5).mean(axis=1)


def test_effort_model_matches_sklearn_linear_regression_with_drop_column_contributions():
    frame = study()
    metrics = ["close", "far"]
    model = analyze(frame, metrics=metrics, target="keystrokes").effort_model
    y = frame["keystrokes"].to_numpy()
    full = _sklearn_cv_r2(_design(frame, metrics), y)
    assert model.inputs == ["close", "far", "original_length", "edited_length", "annotator"]
    assert model.r2_cv.mean == pytest.approx(full.mean(), rel=1e-8)
    assert model.r2_cv.sd == pytest.approx(full.std(ddof=1), rel=1e-6)
    for name in ("close", "annotator", "original_length"):
        without = _sklearn_cv_r2(_design(frame, metrics, drop=name), y)
        assert model.contributions[name] == pytest.approx(full.mean() - without.mean(), abs=1e-9)
    assert model.contributions["annotator"] > 0.01  # the study adds 2 keystrokes per annotator index
    assert model.predicted.shape == y.shape and model.n == len(frame)


def test_fit_line_matches_linregress_and_its_band_narrows_at_the_mean():
    frame = study()
    x, y = frame["far"].to_numpy(), frame["keystrokes"].to_numpy()
    fit = fit_line(x, y)
    expected = stats.linregress(x, y)
    assert (fit.slope, fit.intercept) == pytest.approx((expected.slope, expected.intercept))
    low, high = fit.band(np.array([x.mean(), x.max()]))
    residual_sd = math.sqrt(((y - fit.predict(x)) ** 2).sum() / (len(x) - 2))
    assert (high[0] - low[0]) / 2 == pytest.approx(stats.t.ppf(0.975, len(x) - 2) * residual_sd / math.sqrt(len(x)))
    assert high[1] - low[1] > high[0] - low[0]


def test_fewer_than_ten_edits_answers_with_a_message():
    frame = study(n=9)
    result = analyze(frame, metrics=["close", "far"], target="keystrokes")
    assert "only 9 edits" in result.messages[0]
    assert result.metrics["close"].pearson is None and result.effort_model is None
    json.dumps(result.to_dict(), allow_nan=False)


def test_a_constant_metric_is_reported_and_left_out():
    frame = study()
    frame["flat"] = 3.0
    result = analyze(frame, metrics=["close", "flat"], target="keystrokes")
    flat = result.metrics["flat"]
    assert flat.pearson is None and flat.knn_r2 is None
    assert any("flat is constant" in m for m in flat.messages)
    assert result.best_metric == "close"
    assert "flat" in result.effort_model.excluded_metrics and "flat" not in result.effort_model.inputs
    assert result.to_dict()["matrix"]["values"][0][1] is None


def test_missing_values_are_dropped_and_counted_per_metric():
    frame = study()
    frame.loc[:24, "far"] = np.nan
    frame.loc[:4, "keystrokes"] = np.nan
    result = analyze(frame, metrics=["close", "far"], target="keystrokes")
    assert result.dropped_target == 5 and result.n_used == 295
    assert (result.metrics["close"].n, result.metrics["close"].dropped) == (295, 0)
    assert (result.metrics["far"].n, result.metrics["far"].dropped) == (275, 20)
    assert any("20 rows" in m for m in result.metrics["far"].messages)
    rows = frame.dropna(subset=["far", "keystrokes"])
    assert result.metrics["far"].pearson == pytest.approx(stats.pearsonr(rows["far"], rows["keystrokes"]).statistic)
    assert result.effort_model.dropped == 20 and result.effort_model.n == 275


def test_one_annotator_equals_pooled_and_the_model_has_no_annotator_effect():
    frame = study(annotators=1)
    result = analyze(frame, metrics=["close"], target="keystrokes")
    close = result.metrics["close"]
    assert close.pearson_per_annotator == {"ann0": pytest.approx(close.pearson)}
    assert any("only one annotator" in m for m in result.messages)
    assert "annotator" not in result.effort_model.inputs


def test_an_annotator_with_few_edits_gets_no_correlation_but_a_message():
    frame = study(n=100, annotators=1)
    frame.loc[:4, "annotator"] = "newcomer"
    close = analyze(frame, metrics=["close"], target="keystrokes").metrics["close"]
    assert close.pearson_per_annotator["newcomer"] is None
    assert close.per_annotator["newcomer"].n == 5
    assert any("newcomer: only 5 edits" in m for m in close.messages)


def test_a_constant_target_answers_with_a_message():
    frame = study()
    frame["keystrokes"] = 4
    result = analyze(frame, metrics=["close"], target="keystrokes")
    assert "constant" in result.messages[0] and result.metrics["close"].pearson is None


def test_a_metric_without_values_never_raises():
    frame = study()
    frame["sari"] = np.nan
    result = analyze(frame, metrics=["close", "sari"], target="keystrokes")
    assert result.metrics["sari"].n == 0 and result.metrics["sari"].dropped == 300
    assert result.effort_model.inputs[0] == "close"


def test_the_result_serialises_to_strict_json():
    frame = study()
    data = analyze(frame, metrics=["close", "far", "similar"], target="wall_ms").to_dict()
    text = json.dumps(data, allow_nan=False)
    assert "predicted" not in data["effort_model"]
    assert json.loads(text)["metrics"]["far"]["knn_r2_cv"]["mean"] == pytest.approx(
        data["metrics"]["far"]["knn_r2_cv"]["mean"]
    )


def test_several_targets_at_once_give_the_same_results_as_one_by_one():
    frame = study(n=150)
    settings = Settings(cv_repeats=3)
    together = analyze_targets(frame, metrics=["close", "far"], targets=["keystrokes", "wall_ms"], settings=settings)
    for target in ("keystrokes", "wall_ms"):
        alone = analyze(frame, metrics=["close", "far"], target=target, settings=settings)
        for name in ("close", "far"):
            assert together[target].metrics[name].knn_r2 == pytest.approx(alone.metrics[name].knn_r2, rel=1e-12)
            assert together[target].metrics[name].knn_r2_cv.repeats == pytest.approx(
                alone.metrics[name].knn_r2_cv.repeats, rel=1e-12
            )
        assert together[target].effort_model.r2_cv.mean == pytest.approx(alone.effort_model.r2_cv.mean)


def test_bad_settings_are_refused_with_a_message():
    with pytest.raises(ValueError, match="test_size"):
        Settings(test_size=1.5)


def test_p_values_read_well_even_when_they_underflow():
    assert (format_p(0.0), format_p(0.04213), format_p(None)) == ("< 1e-300", "0.042", "-")


# Mostly numbers (many tied: small integers), some missing or infinite.
values = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.integers(0, 4).map(float),
    st.sampled_from([None, np.inf, -np.inf, np.nan]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.sampled_from(["a", "b", ""]), values, values, values), min_size=0, max_size=40))
def test_analysis_never_raises_and_always_serialises(rows):
    frame = pd.DataFrame(rows, columns=["annotator", "m1", "m2", "target"], dtype=object)
    frame["original"], frame["edited"] = "abc", "abcd"
    result = analyze(frame, metrics=["m1", "m2"], target="target", settings=Settings(cv_repeats=2))
    json.dumps(result.to_dict(), allow_nan=False)
    assert result.n_used == sum(isinstance(r[3], float) and math.isfinite(r[3]) for r in rows)


def test_the_analysis_package_imports_nothing_from_django():
    code = "import sys, metrics.analysis; print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root, env=env)
    assert result.stdout.strip() == "[]"


# --- grouped cross-validation ------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    groups=st.lists(st.integers(0, 30), min_size=2, max_size=120),
    folds=st.integers(2, 6),
    repeats=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
    one_out=st.sampled_from([0, 20]),
)
def test_grouped_splits_never_share_a_group(groups, folds, repeats, seed, one_out):
    codes = np.array(groups)
    table = group_fold_ids(codes, folds=folds, repeats=repeats, seed=seed, leave_one_out_up_to=one_out)
    n_groups = np.unique(codes).size
    if n_groups < 2:
        assert table is None
        return
    leave_one_out = n_groups <= max(folds, one_out)
    assert table.shape == (1 if leave_one_out else repeats, codes.size)
    for repeat in table:
        for group in np.unique(codes):
            assert np.unique(repeat[codes == group]).size == 1  # the whole group in one test fold
        assert set(np.unique(repeat)) == set(range(n_groups if leave_one_out else folds))  # each fold tests something


def _group_splits(groups: np.ndarray, *, folds: int = 5, repeats: int = 10, seed: int = 42) -> list:
    """scikit-learn's GroupKFold, shuffled, repeated from one RandomState as RepeatedKFold does."""
    rng = np.random.RandomState(seed)
    splits = []
    for _ in range(repeats):
        splits.extend(GroupKFold(n_splits=folds, shuffle=True, random_state=rng).split(groups, groups=groups))
    return splits


def shared_items(n_items: int = 80, per_item: int = 4, annotators: int = 6, seed: int = 3) -> pd.DataFrame:
    """Each item post-edited by several annotators; the effort has an item effect the metric does
    not see, and the metric is nearly the same for every edit of an item."""
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(n_items), per_item)
    change = rng.gamma(2.0, 5.0, n_items)[item]
    quirk = rng.normal(0, 8, n_items)[item]  # how hard the item is beyond its amount of change
    who = rng.integers(0, annotators, item.size)
    frame = pd.DataFrame(
        {
            "annotator": [f"ann{a}" for a in who],
            "external_id": [f"item{i}" for i in item],
            "original": "o" * 30,
            "edited": ["e" * int(30 + c) for c in change],
            "close": change + 0.5 * quirk / 8 + rng.normal(0, 0.05, item.size),
            "keystrokes": 2 * change + quirk + rng.normal(0, 1, item.size) + who,
        }
    )
    return frame


def test_item_and_annotator_grouped_knn_cv_match_sklearn_on_the_same_groups():
    frame = shared_items()
    result = analyze(frame, metrics=["close"], target="keystrokes", settings=Settings(cv_repeats=3)).metrics["close"]
    x, y = frame["close"].to_numpy()[:, None], frame["keystrokes"].to_numpy()
    splits = _group_splits(frame["external_id"].to_numpy(), repeats=3)  # the ids themselves, as a reviewer has them
    scores = cross_val_score(KNeighborsRegressor(5), x, y, scoring="r2", cv=splits).reshape(3, 5).mean(axis=1)
    assert result.knn_r2_cv_item.repeats == pytest.approx(list(scores), rel=1e-10)
    assert result.knn_r2_cv_item.mean == pytest.approx(scores.mean(), rel=1e-10)
    # Six annotators: each is left out once (one split, no sd).
    people = frame["annotator"]
    scores = cross_val_score(KNeighborsRegressor(5), x, y, scoring="r2", cv=LeaveOneGroupOut(), groups=people)
    assert result.knn_r2_cv_annotator.repeats == pytest.approx([scores.mean()], rel=1e-10)
    assert result.knn_r2_cv_annotator.sd is None


def test_with_no_more_annotators_than_folds_each_annotator_is_left_out_once():
    frame = shared_items(annotators=4)
    result = analyze(frame, metrics=["close"], target="keystrokes", settings=Settings(cv_repeats=3)).metrics["close"]
    x, y = frame["close"].to_numpy()[:, None], frame["keystrokes"].to_numpy()
    scores = cross_val_score(
        KNeighborsRegressor(5), x, y, scoring="r2", cv=LeaveOneGroupOut(), groups=frame["annotator"]
    )
    assert result.knn_r2_cv_annotator.repeats == pytest.approx([scores.mean()], rel=1e-10)


def test_a_metric_whose_random_cv_leaks_items_is_flagged():
    frame = shared_items()
    result = analyze(frame, metrics=["close"], target="keystrokes", settings=Settings(cv_repeats=3))
    close = result.metrics["close"]
    assert close.cv_item_gap == pytest.approx(close.knn_r2_cv.mean - close.knn_r2_cv_item.mean)
    assert close.cv_item_gap > 0.05 and close.cv_optimistic is True
    assert any("random-CV R² exceeds item-grouped CV R² by" in m for m in close.messages)
    assert result.items == 80
    row = summary_rows(result)[0]
    assert row["cv_optimistic"] is True and row["knn_r2_cv_item_mean"] == pytest.approx(close.knn_r2_cv_item.mean)


def test_a_metric_without_item_leakage_is_not_flagged():
    frame = study(n=300)
    frame["external_id"] = [f"item{i}" for i in range(300)]  # every item edited once
    result = analyze(frame, metrics=["close"], target="keystrokes", settings=Settings(cv_repeats=3))
    assert result.metrics["close"].cv_optimistic is False
    assert any("every item has one edit" in m for m in result.messages)


def test_without_an_item_column_there_is_no_item_grouped_cv():
    result = analyze(study(), metrics=["close"], target="keystrokes", settings=Settings(cv_repeats=2))
    assert result.metrics["close"].knn_r2_cv_item is None and result.metrics["close"].cv_optimistic is None
    assert result.effort_model.r2_cv_item is None and result.items == 0
    assert any("no item column (external_id)" in m for m in result.messages)
    assert result.metrics["close"].knn_r2_cv_annotator is not None


def test_effort_model_grouped_cv_matches_sklearn_linear_regression():
    frame = shared_items()
    model = analyze(frame, metrics=["close"], target="keystrokes", settings=Settings(cv_repeats=3)).effort_model
    y = frame["keystrokes"].to_numpy()
    design = _design(frame, ["close"])
    items = frame["external_id"].to_numpy()
    item_scores = cross_val_score(
        LinearRegression(), design, y, scoring="r2", cv=_group_splits(items, repeats=3)
    ).reshape(3, 5)
    assert model.r2_cv_item.repeats == pytest.approx(list(item_scores.mean(axis=1)), rel=1e-8)
    # Leave annotators out: the model cannot know an unseen person, so it has no annotator input.
    without = _design(frame, ["close"], drop="annotator")
    people_scores = cross_val_score(
        LinearRegression(), without, y, scoring="r2", cv=LeaveOneGroupOut(), groups=frame["annotator"]
    )
    assert model.r2_cv_annotator.repeats == pytest.approx([people_scores.mean()], rel=1e-8)


def test_with_many_annotators_the_annotator_cv_is_repeated_grouped_k_fold():
    frame = shared_items(n_items=120, annotators=30)
    result = analyze(frame, metrics=["close"], target="keystrokes", settings=Settings(cv_repeats=3)).metrics["close"]
    x, y = frame["close"].to_numpy()[:, None], frame["keystrokes"].to_numpy()
    splits = _group_splits(frame["annotator"].to_numpy(), repeats=3)
    scores = cross_val_score(KNeighborsRegressor(5), x, y, scoring="r2", cv=splits).reshape(3, 5).mean(axis=1)
    assert result.knn_r2_cv_annotator.repeats == pytest.approx(list(scores), rel=1e-10)


# --- mixed models, bootstrap, Kendall ------------------------------------------------------


def crossed(n_items: int = 50, annotators: int = 5, seed: int = 1) -> pd.DataFrame:
    """Every item edited by every annotator; effort = metric + item effect + annotator effect + noise."""
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(n_items), annotators)
    who = np.tile(np.arange(annotators), n_items)
    x = rng.gamma(2, 5, n_items)[item] + rng.normal(0, 2, item.size)
    y = 2 * x + rng.normal(0, 5, n_items)[item] + rng.normal(0, 3, annotators)[who] + rng.normal(0, 3, item.size)
    return pd.DataFrame(
        {
            "annotator": [f"ann{a}" for a in who],
            "external_id": [f"item{i}" for i in item],
            "x": x,
            "wall_ms": 1000 * np.exp(y / 40),
            "keystrokes": y,
        }
    )


def _statsmodels_crossed(frame: pd.DataFrame, target: str, metric: str = "x"):
    data = pd.DataFrame(
        {
            "y": standardise(frame[target].to_numpy(float)),
            "x": standardise(frame[metric].to_numpy(float)),
            "annotator": frame["annotator"],
            "item": frame["external_id"],
            "one": 1,
        }
    )
    vc = {"annotator": "0 + C(annotator)", "item": "0 + C(item)"}
    return smf.mixedlm("y ~ x", data, groups="one", re_formula="0", vc_formula=vc, use_sparse=True).fit(reml=True)


def _nakagawa(fixed_values: np.ndarray, random: float, residual: float) -> tuple[float, float]:
    fixed = np.var(fixed_values, ddof=1)
    total = fixed + random + residual
    return fixed / total, (fixed + random) / total


def test_mixed_model_with_crossed_annotator_and_item_matches_statsmodels():
    frame = crossed()
    result = analyze(frame, metrics=["x"], target="keystrokes", settings=Settings(cv_repeats=2)).metrics["x"]
    mixed = result.mixed
    expected = _statsmodels_crossed(frame, "keystrokes")
    assert mixed.formula == "z(keystrokes) ~ z(x) + (1 | annotator) + (1 | item)"
    assert mixed.groups == {"annotator": 5, "item": 50} and mixed.n == 250 and mixed.converged
    assert mixed.coefficient == pytest.approx(expected.fe_params["x"], rel=1e-5)
    annotator_var, item_var = expected.vcomp  # statsmodels stops a little short of the optimum: 1e-3
    assert mixed.variances["annotator"] == pytest.approx(annotator_var, rel=5e-3)
    assert mixed.variances["item"] == pytest.approx(item_var, rel=1e-3)
    assert mixed.variances["residual"] == pytest.approx(expected.scale, rel=1e-4)
    # Our SE is sigma² (X' H⁻¹ X)⁻¹ (lme4's vcov); statsmodels' comes from the full observed Hessian.
    assert mixed.se == pytest.approx(expected.bse_fe["x"], rel=2e-2)
    low, high = expected.conf_int().loc["x"]
    assert mixed.ci == pytest.approx((low, high), abs=2e-3)
    fitted = expected.model.exog @ expected.fe_params.to_numpy()
    marginal, conditional = _nakagawa(fitted, annotator_var + item_var, expected.scale)
    assert mixed.r2_marginal == pytest.approx(marginal, abs=1e-4)
    assert mixed.r2_conditional == pytest.approx(conditional, abs=1e-4)


def test_mixed_model_with_annotators_only_matches_statsmodels():
    frame = study(n=300, annotators=4)  # no item column: every edit its own item
    mixed = analyze(frame, metrics=["far"], target="keystrokes", settings=Settings(cv_repeats=2)).metrics["far"].mixed
    data = pd.DataFrame(
        {"y": standardise(frame["keystrokes"].to_numpy()), "x": standardise(frame["far"].to_numpy())}
    ).assign(annotator=frame["annotator"])
    expected = smf.mixedlm("y ~ x", data, groups="annotator").fit(reml=True)
    assert mixed.formula == "z(keystrokes) ~ z(far) + (1 | annotator)" and mixed.groups == {"annotator": 4}
    assert mixed.coefficient == pytest.approx(expected.fe_params["x"], rel=1e-6)
    assert mixed.se == pytest.approx(expected.bse_fe["x"], rel=1e-3)
    assert mixed.variances["annotator"] == pytest.approx(expected.cov_re.iloc[0, 0], rel=2e-3)
    assert mixed.variances["residual"] == pytest.approx(expected.scale, rel=1e-5)


def test_the_statsmodels_engine_is_statsmodels_itself():
    frame = crossed(n_items=20, annotators=3)
    settings = Settings(cv_repeats=2, mixed_engine="statsmodels")
    mixed = analyze(frame, metrics=["x"], target="keystrokes", settings=settings).metrics["x"].mixed
    expected = _statsmodels_crossed(frame, "keystrokes")
    assert mixed.engine == "statsmodels"
    assert mixed.coefficient == pytest.approx(expected.fe_params["x"], rel=1e-12)
    assert mixed.se == pytest.approx(expected.bse_fe["x"], rel=1e-12)
    assert [mixed.variances["annotator"], mixed.variances["item"]] == pytest.approx(list(expected.vcomp), rel=1e-12)
    reml = analyze(frame, metrics=["x"], target="keystrokes", settings=Settings(cv_repeats=2)).metrics["x"].mixed
    assert reml.coefficient == pytest.approx(mixed.coefficient, rel=1e-4)


def test_mixed_model_of_log_time_and_rows_without_a_logarithm():
    frame = crossed()
    frame.loc[:2, "wall_ms"] = 0.0
    settings = Settings(cv_repeats=2, log_target=True)
    mixed = analyze(frame, metrics=["x"], target="wall_ms", settings=settings).metrics["x"].mixed
    assert mixed.formula == "z(log(wall_ms)) ~ z(x) + (1 | annotator) + (1 | item)" and mixed.n == 247
    assert any("3 rows with wall_ms <= 0" in m for m in mixed.messages)
    kept = frame.iloc[3:].assign(wall_ms=lambda f: np.log(f["wall_ms"]))
    assert mixed.coefficient == pytest.approx(_statsmodels_crossed(kept, "wall_ms").fe_params["x"], rel=1e-5)
    plain_time = analyze(frame, metrics=["x"], target="wall_ms", settings=Settings(cv_repeats=2)).metrics["x"].mixed
    assert plain_time.formula.startswith("z(wall_ms)") and plain_time.coefficient != mixed.coefficient


def test_mixed_models_can_be_turned_off():
    result = analyze(crossed(), metrics=["x"], target="keystrokes", settings=Settings(cv_repeats=2, mixed_models=False))
    assert result.metrics["x"].mixed is None
    assert result.to_dict()["metrics"]["x"]["mixed"] is None


def test_a_selection_with_one_annotator_and_unshared_items_has_no_mixed_model_but_a_message():
    frame = study(annotators=1)
    mixed = (
        analyze(frame, metrics=["close"], target="keystrokes", settings=Settings(cv_repeats=2)).metrics["close"].mixed
    )
    assert mixed.coefficient is None and mixed.groups == {}
    assert "no random factor with two levels" in mixed.messages[0]


def _naive_bootstrap(frame, target, best, other, *, resamples, seed, items="external_id"):
    """Draw items exactly as the analysis does (chunks of 100 from default_rng(seed)), then recompute
    both correlations from the drawn rows with numpy."""
    codes, _ = pd.factorize(frame[items])
    units = codes.max() + 1
    rows_of = [np.flatnonzero(codes == u) for u in range(units)]
    rng = np.random.default_rng(seed)
    y, a, b = (frame[c].to_numpy(float) for c in (target, best, other))
    differences = []
    for start in range(0, resamples, 100):
        for draw in rng.integers(0, units, size=(min(100, resamples - start), units)):
            rows = np.concatenate([rows_of[u] for u in draw])
            differences.append(np.corrcoef(y[rows], a[rows])[0, 1] - np.corrcoef(y[rows], b[rows])[0, 1])
    return np.percentile(differences, [2.5, 97.5])


def test_paired_bootstrap_over_items_equals_resampling_the_items_by_hand():
    frame = shared_items(n_items=40)
    frame["noisy"] = frame["close"] + np.random.default_rng(0).normal(0, 3, len(frame))
    settings = Settings(cv_repeats=2, bootstrap_resamples=300, seed=9)
    result = analyze(frame, metrics=["close", "noisy"], target="keystrokes", settings=settings)
    assert result.best_metric == "close"
    boot = result.metrics["noisy"].bootstrap_vs_best
    assert (boot.best, boot.unit, boot.units, boot.n, boot.resamples, boot.seed) == ("close", "item", 40, 160, 300, 9)
    r = frame[["keystrokes", "close", "noisy"]].corr().loc["keystrokes"]
    assert boot.difference == pytest.approx(r["close"] - r["noisy"], rel=1e-9)
    low, high = _naive_bootstrap(frame, "keystrokes", "close", "noisy", resamples=300, seed=9)
    assert boot.ci == pytest.approx((low, high), rel=1e-9)
    assert boot.excludes_zero == (low > 0)
    assert result.metrics["close"].bootstrap_vs_best is None


def test_the_bootstrap_is_reproducible_with_its_seed():
    frame = shared_items(n_items=40)
    frame["noisy"] = frame["close"] + np.random.default_rng(0).normal(0, 3, len(frame))

    def interval(seed: int) -> tuple[float, float]:
        settings = Settings(cv_repeats=2, bootstrap_resamples=200, seed=seed, mixed_models=False)
        return (
            analyze(frame, metrics=["close", "noisy"], target="keystrokes", settings=settings)
            .metrics["noisy"]
            .bootstrap_vs_best.ci
        )

    assert interval(3) == interval(3)
    assert interval(3) != interval(4)


def test_similarity_metrics_are_oriented_in_the_bootstrap():
    frame = shared_items(n_items=40)
    frame["similar"] = -frame["close"] + np.random.default_rng(1).normal(0, 2, len(frame))
    result = analyze(
        frame,
        metrics=["close", "similar"],
        target="keystrokes",
        directions={"similar": SIMILARITY},
        settings=Settings(cv_repeats=2, bootstrap_resamples=200),
    )
    boot = result.metrics["similar"].bootstrap_vs_best
    assert boot.difference == pytest.approx(
        result.metrics["close"].pearson_oriented - result.metrics["similar"].pearson_oriented, rel=1e-9
    )


def test_kendall_tau_matches_scipy_pooled_and_per_annotator():
    frame = study()
    frame["rounded"] = frame["far"].round()  # ties: tau-b
    result = analyze(frame, metrics=["rounded"], target="keystrokes", settings=Settings(cv_repeats=2))
    rounded = result.metrics["rounded"]
    expected = stats.kendalltau(frame["rounded"], frame["keystrokes"])
    assert rounded.kendall == pytest.approx(expected.statistic, rel=1e-12)
    assert rounded.kendall_p == pytest.approx(expected.pvalue, rel=1e-9)
    for name, rows in frame.groupby("annotator"):
        tau = stats.kendalltau(rows["rounded"], rows["keystrokes"]).statistic
        assert rounded.per_annotator[name].kendall == pytest.approx(tau, rel=1e-12)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["i1", "i2", "i3", "i4", None]), values, values),
        min_size=0,
        max_size=40,
    ),
    log_target=st.booleans(),
)
def test_grouped_cv_mixed_models_and_bootstrap_never_raise(rows, log_target):
    frame = pd.DataFrame(rows, columns=["annotator", "external_id", "m1", "target"], dtype=object)
    settings = Settings(cv_repeats=2, bootstrap_resamples=100, log_target=log_target)
    frame["m2"] = pd.to_numeric(frame["m1"], errors="coerce") * 2 + 1
    result = analyze(frame, metrics=["m1", "m2"], target="target", settings=settings)
    json.dumps(result.to_dict(), allow_nan=False)


def test_grouped_folds_are_scikit_learns_group_k_fold_partitions():
    rng = np.random.default_rng(0)
    for trial in range(20):
        groups = rng.integers(0, int(rng.integers(6, 300)), int(rng.integers(10, 2000))) * 7 + 3
        table = group_fold_ids(groups, folds=5, repeats=4, seed=trial)
        expected = np.empty_like(table)
        for r, (_, test) in enumerate(_group_splits(groups, repeats=4, seed=trial)):
            expected[r // 5, test] = r % 5
        assert (table == expected).all()
