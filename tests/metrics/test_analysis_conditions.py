"""metrics.analysis.conditions against numpy and statsmodels computed here, and on its edge cases."""

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from metrics.analysis import Settings
from metrics.analysis.conditions import (
    BaselineError,
    analyze_conditions,
    bootstrap_mean_ci,
    word_counts,
)
from metrics.analysis.tables import condition_rows

CONDITIONS = ["A", "B", "C"]
EFFECTS = {"A": 0.0, "B": 10.0, "C": -5.0}


def latin_square(seed: int = 3, annotators: int = 6, documents: int = 6, segments: int = 4) -> pd.DataFrame:
    """Annotator i edits document j under CONDITIONS[(i + j) % 3]; effort = condition + annotator + item + noise."""
    rng = np.random.default_rng(seed)
    annotator_effect = rng.normal(0, 4, annotators)
    item_effect = rng.normal(0, 3, (documents, segments))
    rows = []
    for a in range(annotators):
        for d in range(documents):
            condition = CONDITIONS[(a + d) % 3]
            for s in range(segments):
                y = 30 + EFFECTS[condition] + annotator_effect[a] + item_effect[d, s] + rng.normal(0, 2)
                rows.append(
                    {
                        "annotator": f"ann{a}",
                        "external_id": f"doc{d}-{s}",
                        "condition": condition,
                        "keystrokes": y,
                        "wall_ms": 1000 * math.exp(y / 25),
                        "edited_words": 5 + s,
                    }
                )
    return pd.DataFrame(rows)


def _statsmodels(frame: pd.DataFrame, y: str, baseline: str = "A", items: bool = True):
    data = frame.assign(y=frame[y], one=1)
    formula = f"y ~ C(condition, Treatment({baseline!r}))"
    if not items:
        return smf.mixedlm(formula, data, groups="annotator").fit(reml=True)
    vc = {"annotator": "0 + C(annotator)", "item": "0 + C(external_id)"}
    return smf.mixedlm(formula, data, groups="one", re_formula="0", vc_formula=vc).fit(reml=True)


def test_per_condition_figures_are_numpy_s():
    frame = latin_square()
    result = analyze_conditions(frame, target="keystrokes", declared=CONDITIONS)
    assert result.conditions == ["A", "B", "C"] and result.baseline == "A"
    for summary in result.summaries:
        rows = frame[frame["condition"] == summary.condition]
        assert (summary.n, summary.items, summary.annotators) == (48, 24, 6)
        assert summary.mean == pytest.approx(rows["keystrokes"].mean(), rel=1e-12)
        assert summary.median == pytest.approx(rows["keystrokes"].median(), rel=1e-12)
        hours = rows["wall_ms"].sum() / 3_600_000
        assert summary.words == rows["edited_words"].sum() == 6 * 2 * (5 + 6 + 7 + 8)
        assert summary.hours == pytest.approx(hours, rel=1e-12)
        assert summary.words_per_hour == pytest.approx(rows["edited_words"].sum() / hours, rel=1e-12)
    assert result.bootstrap_unit == "item" and (result.resamples, result.seed) == (1000, 42)


def test_the_bootstrap_resamples_items_with_the_analysis_seed():
    frame = latin_square()
    rows = frame[frame["condition"] == "B"]
    items = pd.factorize(rows["external_id"])[0]  # codes in order of first appearance
    values = rows["keystrokes"].to_numpy()
    rng = np.random.default_rng(42)
    means = []
    for _ in range(10):  # 1000 resamples, drawn 100 at a time
        for draw in rng.integers(0, 24, size=(100, 24)):
            chosen = np.concatenate([values[items == unit] for unit in draw])
            means.append(chosen.mean())
    expected = np.percentile(means, [2.5, 97.5])
    summary = analyze_conditions(frame, target="keystrokes", declared=CONDITIONS).summaries[1]
    assert summary.condition == "B"
    assert summary.ci == pytest.approx(tuple(expected), rel=1e-12)
    assert summary.ci[0] < summary.mean < summary.ci[1]


def test_bootstrap_of_one_cluster_has_no_interval():
    assert bootstrap_mean_ci(np.array([1.0, 2.0]), np.array(["x", "x"]), resamples=100, seed=1, confidence=0.95) is None


def test_the_model_is_statsmodels_crossed_mixed_model():
    frame = latin_square()
    result = analyze_conditions(frame, target="keystrokes", declared=CONDITIONS)
    model = result.model
    expected = _statsmodels(frame, "keystrokes")
    assert model.formula == "keystrokes ~ C(condition, Treatment('A')) + (1 | annotator) + (1 | item)"
    assert model.groups == {"annotator": 6, "item": 24} and model.n == 144 and model.converged
    assert [e.condition for e in model.effects] == ["B", "C"]
    low_high = expected.conf_int()
    for effect in model.effects:
        name = f"C(condition, Treatment('A'))[T.{effect.condition}]"
        assert effect.estimate == pytest.approx(expected.fe_params[name], rel=1e-5)
        assert effect.se == pytest.approx(expected.bse_fe[name], rel=2e-2)
        assert effect.ci == pytest.approx(tuple(low_high.loc[name]), abs=2e-2)
        assert effect.ci[0] < EFFECTS[effect.condition] < effect.ci[1]
    assert model.intercept == pytest.approx(expected.fe_params["Intercept"], rel=1e-5)
    assert [model.variances["annotator"], model.variances["item"]] == pytest.approx(list(expected.vcomp), rel=5e-3)
    assert model.variances["residual"] == pytest.approx(expected.scale, rel=1e-4)


def test_the_statsmodels_engine_is_statsmodels_itself():
    frame = latin_square()
    settings = Settings(mixed_engine="statsmodels")
    model = analyze_conditions(frame, target="keystrokes", declared=CONDITIONS, settings=settings).model
    expected = _statsmodels(frame, "keystrokes")
    assert model.engine == "statsmodels"
    for effect in model.effects:
        name = f"C(condition, Treatment('A'))[T.{effect.condition}]"
        assert effect.estimate == pytest.approx(expected.fe_params[name], rel=1e-8)
        assert effect.se == pytest.approx(expected.bse_fe[name], rel=1e-6)
    assert [model.variances["annotator"], model.variances["item"]] == pytest.approx(list(expected.vcomp), rel=1e-6)


def test_unshared_items_leave_only_the_annotator_intercept():
    frame = latin_square().assign(external_id=lambda f: [f"e{i}" for i in range(len(f))])
    model = analyze_conditions(frame, target="keystrokes", declared=CONDITIONS, baseline="B").model
    expected = _statsmodels(frame, "keystrokes", baseline="B", items=False)
    assert model.formula == "keystrokes ~ C(condition, Treatment('B')) + (1 | annotator)"
    assert [e.condition for e in model.effects] == ["A", "C"]
    for effect in model.effects:
        name = f"C(condition, Treatment('B'))[T.{effect.condition}]"
        assert effect.estimate == pytest.approx(expected.fe_params[name], rel=1e-6)
        assert effect.se == pytest.approx(expected.bse_fe[name], rel=1e-3)
        assert effect.p == pytest.approx(expected.pvalues[name], rel=1e-2)
    assert model.variances["annotator"] == pytest.approx(expected.cov_re.iloc[0, 0], rel=2e-3)


def test_log_time_model_and_its_ratios():
    frame = latin_square()
    frame.loc[:1, "wall_ms"] = 0.0
    result = analyze_conditions(frame, target="wall_ms", declared=CONDITIONS, settings=Settings(log_target=True))
    log_model = result.log_model
    assert log_model.formula.startswith("log(wall_ms) ~ C(condition, Treatment('A'))") and log_model.n == 142
    assert any("2 rows with wall_ms <= 0" in m for m in log_model.messages)
    kept = frame.iloc[2:].assign(wall_ms=lambda f: np.log(f["wall_ms"]))
    expected = _statsmodels(kept, "wall_ms")
    for effect in log_model.effects:
        name = f"C(condition, Treatment('A'))[T.{effect.condition}]"
        assert effect.estimate == pytest.approx(expected.fe_params[name], rel=1e-5)
        assert effect.ratio == pytest.approx(math.exp(effect.estimate))
        assert effect.ratio_ci == pytest.approx((math.exp(effect.ci[0]), math.exp(effect.ci[1])))
        # y / 25 in log units: the simulated effect divided by 25
        assert effect.ci[0] < EFFECTS[effect.condition] / 25 < effect.ci[1]
    assert result.model is not None and result.model.n == 144 and not result.model.log_target
    assert analyze_conditions(frame, target="wall_ms", declared=CONDITIONS).log_model is None


def test_the_baseline_is_the_first_declared_or_the_chosen_one():
    frame = latin_square()
    assert analyze_conditions(frame, target="keystrokes", declared=["C", "A", "B"]).baseline == "C"
    assert analyze_conditions(frame, target="keystrokes").conditions == ["A", "B", "C"]  # undeclared: by name
    chosen = analyze_conditions(frame, target="keystrokes", declared=CONDITIONS, baseline="C")
    assert chosen.conditions == ["C", "A", "B"]
    assert {e.condition: round(e.estimate) for e in chosen.model.effects} == {"A": 5, "B": 15}
    rows = condition_rows(chosen)
    assert [(r["condition"], r["baseline"], r["effect"] is None) for r in rows] == [
        ("C", True, True),
        ("A", False, False),
        ("B", False, False),
    ]


@pytest.mark.parametrize(
    ("baseline", "shown"),
    [("D", "'D'"), ("x" * 10_000, "'" + "x" * 80 + "…'"), ("Ä\u202e\x00", "'Ä\\u202e\\x00'")],
)
def test_an_unknown_baseline_names_itself_and_the_valid_ones(baseline, shown):
    with pytest.raises(BaselineError) as error:
        analyze_conditions(latin_square(), target="keystrokes", declared=[*CONDITIONS, "unused"], baseline=baseline)
    assert str(error.value) == f"baseline {shown} is not a condition of this selection; choose one of: A, B, C, unused"


def test_a_declared_baseline_without_edits_gives_summaries_and_a_message():
    result = analyze_conditions(latin_square(), target="keystrokes", declared=["unused", *CONDITIONS])
    assert result.baseline == "A"  # the first declared condition *with edits*
    result = analyze_conditions(
        latin_square(), target="keystrokes", declared=["unused", *CONDITIONS], baseline="unused"
    )
    assert result.model is None and len(result.summaries) == 3
    assert "the baseline 'unused' has no edits in this selection: no condition model" in result.messages


def test_one_condition_gives_its_figures_and_says_there_is_nothing_to_compare():
    frame = latin_square()
    frame = frame[frame["condition"] == "B"]
    result = analyze_conditions(frame, target="keystrokes", declared=CONDITIONS)
    assert result.model is None and [s.condition for s in result.summaries] == ["B"]
    assert "only 1 condition (B) in this selection: nothing to compare" in result.messages


def test_a_condition_with_one_edit_and_edits_without_a_condition():
    frame = latin_square()
    frame = pd.concat([frame[frame["condition"] != "C"], frame[frame["condition"] == "C"].head(1)])
    frame = pd.concat([frame, frame.head(3).assign(condition="")])
    result = analyze_conditions(frame, target="keystrokes", declared=CONDITIONS)
    c = result.summaries[2]
    assert (c.condition, c.n, c.ci) == ("C", 1, None)
    assert "condition 'C' has 1 edit with a keystrokes: its mean has no interval" in result.messages
    assert "3 edits without a condition were left out of the comparison" in result.messages
    assert result.left_out == 3 and result.model.n == 97 and len(result.model.effects) == 2


@pytest.mark.parametrize(
    "frame",
    [
        pd.DataFrame({"condition": [], "keystrokes": [], "annotator": [], "external_id": []}),
        pd.DataFrame({"condition": ["A", "B"], "keystrokes": [1.0, 2.0], "annotator": ["x", "y"]}),
        pd.DataFrame({"condition": ["A", "B"] * 5, "keystrokes": [3.0] * 10, "annotator": ["x", "y"] * 5}),
        pd.DataFrame({"condition": ["A", "B"] * 5, "keystrokes": [np.inf, np.nan] * 5, "annotator": ["x"] * 10}),
        pd.DataFrame({"keystrokes": [1.0, 2.0]}),
    ],
    ids=["empty", "two rows", "constant", "non-finite", "no condition column"],
)
def test_degenerate_data_gives_messages_not_exceptions(frame):
    result = analyze_conditions(frame, target="keystrokes", settings=Settings(log_target=True))
    assert result.model is None or (not result.model.effects and result.model.messages)
    assert result.messages or (result.model and result.model.messages)
    assert isinstance(result.to_dict(), dict)


def test_conditions_confounded_with_annotators_still_fit_with_a_note_free_model():
    frame = latin_square()
    frame["condition"] = frame["annotator"].map(lambda a: CONDITIONS[int(a[-1]) % 3])
    model = analyze_conditions(frame, target="keystrokes", declared=CONDITIONS).model
    expected = _statsmodels(frame, "keystrokes")
    for effect in model.effects:
        name = f"C(condition, Treatment('A'))[T.{effect.condition}]"
        assert effect.estimate == pytest.approx(expected.fe_params[name], rel=1e-4)


def test_word_counts_split_on_whitespace():
    counts = word_counts(pd.Series(["two words", "", None, " tabs\tand\nlines ", "日本語のテキスト"]))
    assert counts.tolist() == [2, 0, 0, 3, 1]
