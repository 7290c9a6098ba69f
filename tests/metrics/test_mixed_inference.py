"""Satterthwaite's df against a dense computation, statsmodels' criterion, the warnings beside the figures.

The R comparisons are in test_mixed_lmer.py; here the structured derivatives (Z'PZ as diagonal plus
low rank) are checked against the plain n x n formulas on generated designs, and against finite
differences of the REML deviance itself.
"""

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.analysis import Settings, analyze, summary_rows
from metrics.analysis.conditions import analyze_conditions
from metrics.analysis.mixed import FEW_LEVELS, fit_model, mixed_model, satterthwaite, standardise
from metrics.analysis.reml import Reml
from metrics.analysis.tables import condition_rows


def dense_deviance(design, y, factors, theta, sigma):
    """lmerTest's devfun_vp written out: log|V| + log|X'V⁻¹X| + r'V⁻¹r / sigma² + (n - p) log(2 pi sigma²)."""
    n, p = design.shape
    v = np.eye(n)
    for name, codes in factors.items():
        z = (codes[:, None] == np.arange(codes.max() + 1)).astype(float)
        v += theta[name] ** 2 * z @ z.T
    v_inv = np.linalg.inv(v)
    xvx = design.T @ v_inv @ design
    beta = np.linalg.solve(xvx, design.T @ v_inv @ y)
    r = y - design @ beta
    deviance = np.linalg.slogdet(v)[1] + np.linalg.slogdet(xvx)[1] + r @ v_inv @ r / sigma**2
    return deviance + (n - p) * math.log(2 * math.pi * sigma**2), sigma**2 * np.linalg.inv(xvx)


def dense_satterthwaite(design, y, factors, theta, sigma):
    """The same df from the n x n formulas: with P = V⁻¹ - V⁻¹X(X'V⁻¹X)⁻¹X'V⁻¹ and V_f = Z_f Z_f',
    dD/ds_f = tr(P V_f) - y'P V_f P y / sigma², d²D/ds_f ds_g = -tr(P V_f P V_g) + 2 y'P V_f P V_g P y / sigma²
    (s_f = theta_f²), d var(b) / ds_f = sigma² H⁻¹ X'V⁻¹ V_f V⁻¹X H⁻¹, and so on for sigma."""
    n, p = design.shape
    names = list(factors)
    blocks = {name: (codes[:, None] == np.arange(codes.max() + 1)).astype(float) for name, codes in factors.items()}
    v = np.eye(n) + sum(theta[name] ** 2 * blocks[name] @ blocks[name].T for name in names)
    v_inv = np.linalg.inv(v)
    h_inv = np.linalg.inv(design.T @ v_inv @ design)
    big_p = v_inv - v_inv @ design @ h_inv @ design.T @ v_inv
    py = big_p @ y
    vf = [blocks[name] @ blocks[name].T for name in names]
    k, s2 = len(names), sigma**2
    hessian = np.zeros((k + 1, k + 1))
    for f in range(k):
        grad_f = np.trace(big_p @ vf[f]) - py @ vf[f] @ py / s2
        for g in range(k):
            second = -np.trace(big_p @ vf[f] @ big_p @ vf[g]) + 2 * py @ vf[f] @ big_p @ vf[g] @ py / s2
            hessian[f, g] = 4 * theta[names[f]] * theta[names[g]] * second + (2 * grad_f if f == g else 0)
        hessian[f, k] = hessian[k, f] = 2 * theta[names[f]] * 2 * (py @ vf[f] @ py) / sigma**3
    hessian[k, k] = 6 * (y @ py) / s2**2 - 2 * (n - p) / s2
    jacobian = [2 * theta[names[f]] * s2 * h_inv @ design.T @ v_inv @ vf[f] @ v_inv @ design @ h_inv for f in range(k)]
    jacobian.append(2 * sigma * h_inv)
    values, vectors = np.linalg.eigh(hessian)
    keep = values > 1e-8  # lmerTest's pseudo-inverse: the positive eigenvalues only
    covariance = 2 * (vectors[:, keep] / values[keep]) @ vectors[:, keep].T
    grads = np.array([np.diag(j) for j in jacobian])
    with np.errstate(divide="ignore"):
        return 2 * np.diag(s2 * h_inv) ** 2 / np.einsum("kj,kl,lj->j", grads, covariance, grads)


def finite_difference_satterthwaite(design, y, factors, theta, sigma, h=1e-4):
    """lmerTest's recipe by central differences of the deviance and of vcov(b) (numDeriv without Richardson)."""
    names = list(factors)
    point = np.array([theta[name] for name in names] + [sigma])

    def at(values):
        return dense_deviance(design, y, factors, dict(zip(names, values[:-1], strict=True)), values[-1])

    k = point.size
    steps = np.eye(k) * h
    hessian = np.array(
        [
            [
                (at(point + a + b)[0] - at(point + a - b)[0] - at(point - a + b)[0] + at(point - a - b)[0])
                / (4 * h * h)
                for b in steps
            ]
            for a in steps
        ]
    )
    jacobian = [(at(point + a)[1] - at(point - a)[1]) / (2 * h) for a in steps]
    covariance = 2 * np.linalg.inv(hessian)
    grads = np.array([np.diag(j) for j in jacobian])
    return 2 * np.diag(at(point)[1]) ** 2 / np.einsum("kj,kl,lj->j", grads, covariance, grads)


def generated(seed: int, annotators: int, items: int, keep: float, conditions: int = 2):
    rng = np.random.default_rng(seed)
    a, i = np.meshgrid(np.arange(annotators), np.arange(items), indexing="ij")
    a, i = a.ravel(), i.ravel()
    chosen = rng.random(a.size) < keep
    chosen[:2] = True
    a, i = a[chosen], i[chosen]
    condition = (a + i) % conditions
    design = np.column_stack([np.ones(a.size), *[(condition == c).astype(float) for c in range(1, conditions)]])
    design = np.column_stack([design, rng.normal(size=a.size)])
    y = design @ rng.normal(size=design.shape[1]) + rng.normal(0, 1, annotators)[a] + rng.normal(0, 0.7, items)[i]
    y = y + rng.normal(0, 0.5, a.size)
    return design, y, {"annotator": pd.factorize(a)[0], "item": pd.factorize(i)[0]}


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    annotators=st.integers(2, 6),
    items=st.integers(3, 12),
    keep=st.floats(0.5, 1.0),
    ratios=st.tuples(st.floats(0.05, 5.0), st.floats(0.05, 5.0)),
)
def test_structured_df_equal_the_dense_formulas_at_any_point(seed, annotators, items, keep, ratios):
    design, y, factors = generated(seed, annotators, items, keep)
    if np.linalg.matrix_rank(design) < design.shape[1] or y.size <= design.shape[1] + 2:
        return
    theta = {"annotator": ratios[0], "item": ratios[1]}
    sigma = 0.8
    df, _ = satterthwaite(design, y, factors, {name: value**2 for name, value in theta.items()}, sigma)
    assert df == pytest.approx(dense_satterthwaite(design, y, factors, theta, sigma), rel=1e-7)


def test_the_criterion_is_lme4_s_at_the_optimum_and_its_gradient_is_zero():
    design, y, factors = generated(5, 6, 20, 0.9)
    fit = fit_model(design, y, factors)
    sigma = math.sqrt(fit.variances["residual"])
    deviance, vcov = dense_deviance(design, y, factors, fit.theta, sigma)
    assert fit.criterion == pytest.approx(deviance, rel=1e-12) and fit.gradient < 1e-8
    assert fit.cov_beta == pytest.approx(vcov, rel=1e-9)
    expected = finite_difference_satterthwaite(design, y, factors, fit.theta, sigma)
    assert fit.df == pytest.approx(expected, rel=1e-5)  # central differences are ~1e-6 accurate
    reml = Reml(design, y, factors)
    for step in (1e-3, -1e-3):  # a minimum
        moved = np.log([fit.theta[name] ** 2 for name in reml.names]) + step
        assert reml.criterion(moved) > fit.criterion


def test_without_a_random_variance_the_df_are_those_of_least_squares():
    design, y, factors = generated(1, 4, 10, 1.0)
    df, notes = satterthwaite(design, y, factors, {"annotator": 0.0, "item": 0.0}, 1.0)
    assert df.tolist() == [y.size - design.shape[1]] * design.shape[1] and notes == []


def test_statsmodels_criterion_is_minus_twice_its_llf_and_never_below_the_default_engine_s():
    """How a reviewer checks a statsmodels fit that disagrees: -2 * result.llf is the REML criterion."""
    rng = np.random.default_rng(7)
    who, item = np.repeat(np.arange(5), 40), np.tile(np.arange(40), 5)
    x = rng.normal(size=200)
    y = 0.5 * x + rng.normal(0, 0.6, 5)[who] + rng.normal(0, 0.8, 40)[item] + rng.normal(0, 1, 200)
    factors = {"annotator": who, "item": item}
    ours = mixed_model(x, y, factors)
    theirs = mixed_model(x, y, factors, engine="statsmodels")
    data = pd.DataFrame({"y": standardise(y), "x": standardise(x), "annotator": who, "item": item, "one": 1})
    vc = {"annotator": "0 + C(annotator)", "item": "0 + C(item)"}
    result = smf.mixedlm("y ~ x", data, groups="one", re_formula="0", vc_formula=vc).fit(reml=True)
    assert theirs.reml_criterion == pytest.approx(-2 * result.llf, rel=1e-10)
    assert ours.reml_criterion <= theirs.reml_criterion and theirs.gradient is None
    assert theirs.df == pytest.approx(ours.df, rel=1e-2)  # the df at statsmodels' own estimates


def test_few_levels_and_singular_fits_are_warned_beside_the_figures_in_json_and_csv():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "annotator": np.repeat(["a", "b", "c"], 20),
            "external_id": [f"i{i}" for i in range(60)],
            "x": rng.normal(size=60),
        }
    )
    frame["keystrokes"] = 3 * frame["x"] + rng.normal(size=60)  # no annotator effect: singular
    analysis = analyze(frame, metrics=["x"], target="keystrokes", settings=Settings(cv_repeats=2))
    mixed = analysis.metrics["x"].mixed
    assert mixed.groups == {"annotator": 3} and mixed.df is not None
    assert any(f"only 3 annotator levels (fewer than {FEW_LEVELS})" in w for w in mixed.warnings)
    row = summary_rows(analysis)[0]
    assert row["mixed_df"] == mixed.df and row["mixed_p"] == mixed.p and row["mixed_wald_p"] == mixed.wald_p
    assert row["mixed_warnings"] == "; ".join(mixed.warnings) and row["mixed_singular"] == mixed.singular
    assert analysis.to_dict()["metrics"]["x"]["mixed"]["warnings"] == mixed.warnings
    if mixed.singular:
        assert mixed.warnings[0].startswith("boundary (singular) fit: see help('isSingular')")


def test_condition_rows_carry_df_and_the_warnings():
    rng = np.random.default_rng(4)
    rows = [
        {"annotator": f"a{a}", "external_id": f"i{i}", "condition": "AB"[(a + i) % 2], "keystrokes": rng.normal(10, 2)}
        for a in range(3)
        for i in range(6)
    ]
    analysis = analyze_conditions(pd.DataFrame(rows), target="keystrokes", declared=["A", "B"])
    flat = {row["condition"]: row for row in condition_rows(analysis)}
    effect = analysis.model.effects[0]
    assert flat["B"]["effect_df"] == effect.df and flat["B"]["effect_wald_p"] == effect.wald_p
    assert "only 3 annotator levels" in flat["B"]["effect_warnings"]
    assert "condition 'B' has 9 edits in the model (fewer than 10)" in flat["B"]["effect_warnings"]
    assert flat["A"]["effect_warnings"] is None


def test_a_model_too_large_for_the_df_says_so_and_keeps_the_wald_figures(monkeypatch):
    monkeypatch.setattr("metrics.analysis.mixed.DF_SMALL_LEVELS", 3)
    design, y, factors = generated(2, 5, 10, 1.0)
    model = mixed_model(design[:, -1], y, factors)
    assert model.df is None and model.p is None and model.ci is None
    assert model.wald_p is not None and model.wald_ci is not None and model.coefficient is not None
    assert any(
        "Satterthwaite's degrees of freedom are not computed with 5 x 10 crossed levels" in w for w in model.warnings
    )
