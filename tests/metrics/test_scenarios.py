"""The synthetic-edit analysis (metrics.analysis.scenarios), checked against scipy and statsmodels."""

import json

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from metrics.analysis.scenarios import (
    ScenarioError,
    ScenarioSettings,
    analyze_scenarios,
    comparison_rows,
    scenario_order,
)


def study(n: int = 25, seed: int = 3) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """`n` items, each edited under normal, similar (about 0.8 x normal) and fast (about 0.6 x normal)."""
    rng = np.random.default_rng(seed)
    normal = rng.uniform(20, 200, n).round()
    distances = {
        "normal": normal,
        "similar": (0.8 * normal + rng.normal(0, 5, n)).round(),
        "fast": (0.6 * normal + rng.normal(0, 5, n)).round(),
    }
    rows = [
        {"external_id": f"q{i}", "scenario": name, "length": float(300 + 7 * i + len(name)), "distance": values[i]}
        for name, values in distances.items()
        for i in range(n)
    ]
    return pd.DataFrame(rows), distances


def by_scenario(analysis, name):
    return next(c for c in analysis.comparisons if c.scenario == name)


def test_each_scenario_against_normal_matches_statsmodels_and_scipy():
    frame, d = study()
    analysis = analyze_scenarios(frame)
    assert analysis.reference == "normal" and analysis.scenarios == ["normal", "similar", "fast"]
    for name in ("similar", "fast"):
        got = by_scenario(analysis, name)
        fit = sm.OLS(d[name], sm.add_constant(d["normal"])).fit()
        ci = fit.conf_int(alpha=0.05)
        assert got.n == 25
        assert got.slope == pytest.approx(fit.params[1]) and got.intercept == pytest.approx(fit.params[0])
        assert got.slope_ci == pytest.approx(tuple(ci[1])) and got.intercept_ci == pytest.approx(tuple(ci[0]))
        assert got.r2 == pytest.approx(fit.rsquared)
        test = stats.wilcoxon(d[name], d["normal"], alternative="less")
        assert got.wilcoxon_p == pytest.approx(test.pvalue) and got.wilcoxon_statistic == test.statistic
        assert got.ordered is True
        difference = d[name] - d["normal"]
        assert got.mean_difference == pytest.approx(difference.mean())
        assert got.below_identity == pytest.approx((difference < 0).mean())
        boot = stats.bootstrap(
            (difference,), np.mean, n_resamples=2000, method="percentile", rng=np.random.default_rng(42)
        )
        assert got.difference_ci == pytest.approx((boot.confidence_interval.low, boot.confidence_interval.high))
        assert got.difference_ci[1] < 0
        assert got.points[0] == (d["normal"][0], d[name][0])
    assert 0.7 < by_scenario(analysis, "similar").slope < 0.9
    assert 0.5 < by_scenario(analysis, "fast").slope < 0.7


def test_bootstrap_is_seeded_the_same_on_every_run():
    frame, _ = study()
    first = analyze_scenarios(frame).to_dict()
    assert analyze_scenarios(frame).to_dict() == first
    other = analyze_scenarios(frame, settings=ScenarioSettings(seed=7))
    assert by_scenario(other, "fast").difference_ci != tuple(first["comparisons"][1]["difference_ci"])


def test_distributions_use_numpy_quantiles_and_shared_histogram_edges():
    frame, d = study()
    analysis = analyze_scenarios(frame)
    edges = np.histogram_bin_edges(np.concatenate(list(d.values())), bins=20)
    assert analysis.distance_edges == pytest.approx(edges.tolist())
    for summary in analysis.summaries:
        values = d[summary.scenario]
        assert summary.n == 25
        assert summary.distance.mean == pytest.approx(values.mean())
        assert summary.distance.sd == pytest.approx(values.std(ddof=1))
        assert [summary.distance.q25, summary.distance.median, summary.distance.q75] == pytest.approx(
            np.quantile(values, [0.25, 0.5, 0.75]).tolist()
        )
        assert summary.distance.counts == np.histogram(values, bins=edges)[0].tolist()
        assert sum(summary.length.counts) == 25
    normal = analysis.summaries[0]
    assert normal.length.min == 306.0 and normal.length.max == 306.0 + 7 * 24


def test_another_reference_and_an_unknown_one():
    frame, d = study()
    analysis = analyze_scenarios(frame, reference="fast")
    assert analysis.reference == "fast"
    assert [c.scenario for c in analysis.comparisons] == ["normal", "similar"]
    normal = by_scenario(analysis, "normal")
    assert normal.slope == pytest.approx(sm.OLS(d["normal"], sm.add_constant(d["fast"])).fit().params[1])
    assert normal.ordered is False  # normal edits more than fast
    with pytest.raises(ScenarioError, match=r"unknown reference scenario 'slow'.*normal, similar, fast"):
        analyze_scenarios(frame, reference="slow")


def test_without_normal_the_first_scenario_is_the_reference():
    frame, _ = study()
    frame = frame[frame["scenario"] != "normal"]
    assert analyze_scenarios(frame).reference == "similar"


def test_human_effort_correlation_over_the_shared_items():
    frame, d = study()
    rng = np.random.default_rng(1)
    effort = 1000 * d["fast"] + rng.normal(0, 20_000, 25)
    human = pd.DataFrame({"external_id": [f"q{i}" for i in range(20)], "human": effort[:20]})
    analysis = analyze_scenarios(frame, human=human, human_target="wall_ms")
    fast = next(h for h in analysis.human if h.scenario == "fast").correlation
    assert fast.n == 20
    assert fast.pearson == pytest.approx(stats.pearsonr(d["fast"][:20], effort[:20]).statistic)
    assert fast.spearman == pytest.approx(stats.spearmanr(d["fast"][:20], effort[:20]).statistic)
    rows = comparison_rows(analysis)
    assert [r["scenario"] for r in rows] == ["normal", "similar", "fast"]
    assert rows[2]["human_pearson"] == pytest.approx(fast.pearson) and rows[2]["human_n"] == 20
    assert analysis.human_target == "wall_ms"


def test_repeated_edits_count_once_with_their_mean():
    frame, d = study(n=5)
    extra = frame[(frame["scenario"] == "fast") & (frame["external_id"] == "q0")].assign(distance=d["fast"][0] + 10)
    analysis = analyze_scenarios(pd.concat([frame, extra], ignore_index=True))
    fast = analysis.summaries[2]
    assert fast.n == 5
    assert fast.distance.mean == pytest.approx((d["fast"].sum() + 5) / 5)
    assert any("edited more than once" in m for m in analysis.messages)


def test_edge_cases_give_messages_not_errors():
    empty = analyze_scenarios(pd.DataFrame(columns=["external_id", "scenario", "length", "distance"]))
    assert empty.scenarios == [] and empty.messages == ["no synthetic edit in the selection"]
    frame, _ = study(n=2)
    small = analyze_scenarios(frame)
    assert small.comparisons[0].slope is None and "at least 3" in small.comparisons[0].messages[0]
    same = pd.DataFrame(
        [
            {"external_id": f"q{i}", "scenario": s, "length": 10.0, "distance": 5.0}
            for i in range(4)
            for s in ("normal", "fast")
        ]
    )
    result = analyze_scenarios(same).comparisons[0]
    assert result.slope is None and result.wilcoxon_p is None and result.difference_ci == (0.0, 0.0)
    assert len(result.messages) == 2
    missing = frame.assign(distance=np.nan)
    assert any("no stored distance" in m for m in analyze_scenarios(missing).messages)


def test_scenario_order_puts_the_papers_first():
    assert scenario_order(["zeta", "fast", "alpha", "normal"]) == ["normal", "fast", "alpha", "zeta"]


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.integers(0, 6),
            st.sampled_from(["normal", "similar", "fast", "mine"]),
            st.integers(0, 5000),
            st.one_of(st.none(), st.floats(0, 1e4, allow_nan=False)),
        ),
        max_size=40,
    ),
    human=st.booleans(),
)
def test_any_frame_gives_a_json_analysis(rows, human):
    frame = pd.DataFrame(
        [
            {"external_id": f"q{i}", "scenario": s, "length": float(n), "distance": np.nan if d is None else d}
            for i, s, n, d in rows
        ],
        columns=["external_id", "scenario", "length", "distance"],
    )
    effort = pd.DataFrame({"external_id": [f"q{i}" for i in range(7)], "human": np.arange(7.0)}) if human else None
    analysis = analyze_scenarios(frame, human=effort)
    json.dumps(analysis.to_dict(), allow_nan=False)
    comparison_rows(analysis)
    assert len(analysis.comparisons) == max(len(analysis.scenarios) - 1, 0)
    for c in analysis.comparisons:
        if c.wilcoxon_p is not None:
            assert 0 <= c.wilcoxon_p <= 1
        if c.difference_ci is not None:
            assert c.difference_ci[0] <= c.difference_ci[1]
