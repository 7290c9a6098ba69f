"""The mixed models against R itself: lme4 fits, lmerTest's Satterthwaite inference, performance's R².

Each test writes the rows editlab fits to a CSV in tmp_path, runs tests/metrics/r/lmer_fit.R on them
with the formula a reviewer would type (the README's lmer() calls), and compares every figure:
estimates, SEs, variances, df, t, p, CIs to 1e-6 relative (p-values below 1e-10 to 1 % of their
logarithm), Nakagawa's R² to 1e-6, the REML criterion and lme4's singular-fit verdict. Fixtures: an
excerpt of the published IWSLT2019 study (Scarton et al. 2019; /work/shared/data) and two 17-edit
pilots with 2 editors, 3 conditions and 9 items, one of them a singular fit.
"""

import csv
import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metrics.analysis.conditions import FEW_EDITS, analyze_conditions, condition_model
from metrics.analysis.mixed import SINGULAR_MESSAGE, mixed_model
from tests.metrics.iwslt_frame import iwslt_frame

SCRIPT = Path(__file__).parent / "r" / "lmer_fit.R"
REL = 1e-6
CONDITIONS = ["mt-a", "mt-b", "ht"]
# A pilot a new user built: 17 edits, 2 editors, 9 items; item i under CONDITIONS[(i - 1 + editor) % 3].
PILOT = Path(__file__).parent / "data" / "pilot_2_editors.csv"


@pytest.fixture(scope="module")
def rscript() -> str:
    found = shutil.which("Rscript")
    if found is None:
        pytest.fail(
            "Rscript is missing: run `editlab/scripts/install test` (it installs Debian's r-base-core, "
            "r-cran-lme4, r-cran-lmertest and r-cran-performance), then rerun these tests"
        )
    return found


def lmer(rscript: str, tmp_path: Path, frame: pd.DataFrame, formula: str, baseline: str | None = None) -> dict:
    data, out = tmp_path / "data.csv", tmp_path / "lmer.csv"
    frame.to_csv(data, index=False)
    command = [rscript, str(SCRIPT), str(data), formula, str(out), *([baseline] if baseline else [])]
    # One BLAS thread: R's sums then come out the same on every run.
    environment = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=environment)
    assert done.returncode == 0, f"R failed on {formula}:\n{done.stderr}"
    with out.open() as handle:
        rows = {row["key"]: row["value"] for row in csv.DictReader(handle)}
    return {key: (value if key.startswith("message") else float(value)) for key, value in rows.items()}


def close(ours, theirs, rel: float = REL) -> bool:
    return ours == pytest.approx(theirs, rel=rel, abs=1e-300)


def assert_p(ours: float, theirs: float) -> None:
    if theirs < 1e-10:
        assert abs(math.log(ours) - math.log(theirs)) <= 0.01 * abs(math.log(theirs)), (ours, theirs)
    else:
        assert close(ours, theirs), (ours, theirs)


def assert_coefficient(r: dict, name: str, estimate, se, df, t, p, ci) -> None:
    assert close(estimate, r[f"estimate[{name}]"]), name
    assert close(se, r[f"se[{name}]"]), name
    assert close(df, r[f"df[{name}]"]), name
    assert close(t, r[f"t[{name}]"]), name
    assert_p(p, r[f"p[{name}]"])
    assert close(ci[0], r[f"ci_low[{name}]"]) and close(ci[1], r[f"ci_high[{name}]"]), name


def iwslt_excerpt(shared_data: Path, items: int = 60) -> pd.DataFrame:
    """The first `items` segments (by file and line) of IWSLT2019, each post-edited by all five editors."""
    data = iwslt_frame(shared_data)
    chosen = sorted(data["item"].unique())[:items]
    data = data[data["item"].isin(chosen)]
    return data[["annotator", "item", "HTER", "keystrokes", "time"]].reset_index(drop=True)


def pilot(slower_second_editor: float = 0.0) -> pd.DataFrame:
    frame = pd.read_csv(PILOT, dtype={"wall_ms": float})
    frame["wall_ms"] += 1000.0 * slower_second_editor * (frame["annotator"] == "e2")
    return frame


def assert_metric_model(model, r: dict, name: str) -> None:
    assert_coefficient(r, name, model.coefficient, model.se, model.df, model.t, model.p, model.ci)
    for factor in model.groups:
        assert close(model.variances[factor], r[f"variance[{factor}]"]), factor
    assert close(model.variances["residual"], r["variance[Residual]"])
    assert close(model.reml_criterion, r["reml_criterion"], rel=1e-10)
    assert close(model.r2_marginal, r["r2_marginal"]) and close(model.r2_conditional, r["r2_conditional"])
    assert model.singular == bool(r["singular"])


@pytest.mark.parametrize(
    ("factors", "formula"),
    [
        (("annotator", "item"), "scale(keystrokes) ~ scale(HTER) + (1 | annotator) + (1 | item)"),
        (("annotator",), "scale(keystrokes) ~ scale(HTER) + (1 | annotator)"),
    ],
)
def test_metric_model_on_iwslt2019_is_lmertest_s(rscript, tmp_path, shared_data, factors, formula):
    frame = iwslt_excerpt(shared_data)
    model = mixed_model(
        frame["HTER"].to_numpy(float),
        frame["keystrokes"].to_numpy(float),
        {factor: frame[factor].to_numpy() for factor in factors},
        metric="HTER",
        target="keystrokes",
    )
    levels = {"annotator": 5, "item": 60}
    assert model.n == 300 and model.groups == {factor: levels[factor] for factor in factors}
    r = lmer(rscript, tmp_path, frame, formula)
    assert_metric_model(model, r, "scale(HTER)")
    assert model.converged and model.gradient < 1e-6 and not model.warnings
    # The Wald figures stay, under their own names: the normal quantile instead of t on df.
    assert model.wald_p < model.p and model.wald_ci[1] - model.wald_ci[0] < model.ci[1] - model.ci[0]


def test_log_time_metric_model_on_iwslt2019_is_lmertest_s(rscript, tmp_path, shared_data):
    frame = iwslt_excerpt(shared_data)
    model = mixed_model(
        frame["HTER"].to_numpy(float),
        np.log(frame["time"].to_numpy(float)),
        {"annotator": frame["annotator"].to_numpy(), "item": frame["item"].to_numpy()},
        metric="HTER",
        target="log(time)",
    )
    r = lmer(rscript, tmp_path, frame, "scale(log(time)) ~ scale(HTER) + (1 | annotator) + (1 | item)")
    assert_metric_model(model, r, "scale(HTER)")


def test_condition_model_on_iwslt2019_times_is_lmertest_s(rscript, tmp_path, shared_data):
    """Real times, conditions assigned as a Latin square would (editor + item, modulo 3)."""
    frame = iwslt_excerpt(shared_data, items=30)
    item_index = pd.factorize(frame["item"])[0]
    editor_index = frame["annotator"].str[-1].astype(int).to_numpy()
    frame["condition"] = np.array(CONDITIONS)[(item_index + editor_index) % 3]
    for log_target in (False, True):
        y = frame["time"].to_numpy(float)
        model = condition_model(
            np.log(y) if log_target else y,
            frame["condition"].to_numpy(),
            {"annotator": frame["annotator"].to_numpy(), "item": frame["item"].to_numpy()},
            baseline="mt-a",
            order=CONDITIONS,
            log_target=log_target,
        )
        target = "log(time)" if log_target else "time"
        r = lmer(rscript, tmp_path, frame, f"{target} ~ condition + (1 | annotator) + (1 | item)", "mt-a")
        assert_condition_model(model, r)


def assert_condition_model(model, r: dict) -> None:
    assert close(model.intercept, r["estimate[(Intercept)]"]) and close(model.intercept_se, r["se[(Intercept)]"])
    assert close(model.intercept_df, r["df[(Intercept)]"])
    assert_p(model.intercept_p, r["p[(Intercept)]"])
    for effect in model.effects:
        name = f"condition{effect.condition}"
        assert_coefficient(r, name, effect.estimate, effect.se, effect.df, effect.t, effect.p, effect.ci)
    for factor in model.groups:
        ours, theirs = model.variances[factor], r[f"variance[{factor}]"]
        tiny = 1e-12 * r["variance[Residual]"]  # a variance on the boundary: R's optimiser stops a hair above 0
        assert close(ours, theirs) or (ours <= tiny and theirs <= tiny), factor
    assert close(model.variances["residual"], r["variance[Residual]"])
    assert close(model.reml_criterion, r["reml_criterion"], rel=1e-10)
    assert model.singular == bool(r["singular"])


def _pilot_model(frame: pd.DataFrame, log_target: bool = False):
    analysis = analyze_conditions(frame, target="wall_ms", declared=CONDITIONS)
    if not log_target:
        return analysis.model
    y = frame["wall_ms"].to_numpy(float)
    return condition_model(
        np.log(y),
        frame["condition"].to_numpy(),
        {"annotator": frame["annotator"].to_numpy(), "item": frame["external_id"].to_numpy()},
        baseline="mt-a",
        order=CONDITIONS,
        log_target=True,
    )


def test_the_two_editor_pilot_is_a_singular_fit_as_lme4_says(rscript, tmp_path):
    frame = pilot()
    model = _pilot_model(frame)
    assert model.n == 17 and model.groups == {"annotator": 2, "item": 9}
    export = frame.rename(columns={"external_id": "item"})
    r = lmer(rscript, tmp_path, export, "wall_ms ~ condition + (1 | annotator) + (1 | item)", "mt-a")
    assert_condition_model(model, r)
    assert model.singular and model.variances["annotator"] == 0.0 and r["variance[annotator]"] < 1e-50
    assert r["message1"] == SINGULAR_MESSAGE
    assert (
        model.warnings[0].startswith(SINGULAR_MESSAGE)
        and "annotator variance is estimated at zero" in (model.warnings[0])
    )
    assert any("only 2 annotator levels (fewer than 5)" in warning for warning in model.warnings)
    ht = next(e for e in model.effects if e.condition == "ht")
    # Satterthwaite: 7.2 df, p 4.6e-10; the Wald z would have said p = 0 (below the smallest double).
    assert round(ht.df, 1) == 7.2 and 1e-10 < ht.p < 1e-9 and ht.wald_p < 1e-300
    assert ht.n == 6 < FEW_EDITS and ht.warnings == [
        f"condition 'ht' has 6 edits in the model (fewer than {FEW_EDITS}): its effect rests on few edits"
    ]


def test_the_pilot_whose_editors_differ_gives_the_intercept_one_df(rscript, tmp_path):
    frame = pilot(slower_second_editor=20)
    model = _pilot_model(frame)
    export = frame.rename(columns={"external_id": "item"})
    r = lmer(rscript, tmp_path, export, "wall_ms ~ condition + (1 | annotator) + (1 | item)", "mt-a")
    assert_condition_model(model, r)
    assert not model.singular and round(model.intercept_df, 2) == 1.07 and 0.1 < model.intercept_p < 0.12


def test_the_pilot_s_log_time_model_is_lmertest_s(rscript, tmp_path):
    frame = pilot()
    model = _pilot_model(frame, log_target=True)
    export = frame.rename(columns={"external_id": "item"})
    r = lmer(rscript, tmp_path, export, "log(wall_ms) ~ condition + (1 | annotator) + (1 | item)", "mt-a")
    assert_condition_model(model, r)
    for effect in model.effects:
        assert effect.ratio == pytest.approx(math.exp(effect.estimate), rel=1e-12)
        assert effect.ratio_ci == pytest.approx((math.exp(effect.ci[0]), math.exp(effect.ci[1])), rel=1e-12)
