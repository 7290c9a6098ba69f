"""Mixed-effects models of the effort: target ~ metric + (1 | annotator) [+ (1 | item)].

Pure: numpy and scipy (no Django); statsmodels on request. Effort studies (DivEMT, QE4PE)
analyse effort with mixed models because people differ more than anything else: the
annotator gets a random intercept, and so does the item when items are shared (several
people post-edited it), crossed with the annotator.

Both the metric and the target (or log(target), for heavy-tailed times) are standardised on
the rows used, so the metric's coefficient is in standard deviations of the target per
standard deviation of the metric: R's lmer(scale(y) ~ scale(x) + (1 | annotator) [+ (1 | item)]).
Fitted by REML as lme4 fits it; the inference is lmerTest's: the coefficient's t = b / se with
se² from sigma² (X' V⁻¹ X)⁻¹, Satterthwaite's degrees of freedom (`satterthwaite`), p and CI
from the t distribution. The Wald (normal) p and CI are kept under their own names (wald_p,
wald_ci): they hold only with many annotators. R² after Nakagawa & Schielzeth (2013), as
performance::r2_nakagawa: with the variance of the fixed-effect predictions sigma²_f (sample
variance, R's var()), the random intercept variances sigma²_a, sigma²_i and the residual
variance sigma²_e, marginal = sigma²_f / (sigma²_f + sigma²_a + sigma²_i + sigma²_e) and
conditional = (sigma²_f + sigma²_a + sigma²_i) / (the same sum).

Beside the fit: the REML criterion (-2 log restricted likelihood, lme4's "REML criterion at
convergence": lower is better, so an engine that reports a higher one stopped short), whether
the optimiser converged and the largest gradient of the criterion in theta; lme4's "boundary
(singular) fit" when a relative sd theta is below 1e-4 (isSingular's tolerance); a warning for a
factor with fewer than FEW_LEVELS levels.

Engines. statsmodels' MixedLM fits crossed intercepts only as variance components of a single
group; on IWSLT2019 (5,235 edits, 1,047 items) that took 22 s of CPU per fit even with sparse
matrices, and a report needs 16; it also stops at worse REML optima on some real studies. The
default engine ("reml") maximises the same restricted likelihood with the structure of the
problem: two crossed random intercepts make the (q x q) matrix Lambda⁻¹ + Z'Z a diagonal block
for the factor with many levels (the items) and a small dense one for the other (the
annotators), so a likelihood evaluation is a Cholesky of the small block, and the fit takes
milliseconds; Newton steps with the exact derivatives finish the optimisation. The same
structure makes Z'PZ diagonal plus low rank, which gives the exact derivatives Satterthwaite's
df need. engine="statsmodels" runs statsmodels itself (its df, p and criterion are computed at
its estimates). The tests compare the default engine with R (lme4, lmerTest, performance).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize, stats

from metrics.analysis.reml import DENSE_CROSS, Reml, reml_polish

ENGINES = ("reml", "statsmodels")
LOG_FLOOR = -25.0  # log of the smallest variance ratio searched: a variance this small is zero
BOUNDARY_RATIO = math.exp(LOG_FLOOR + 1)  # a variance ratio below it is on the boundary (zero)
SINGULAR_TOL = 1e-4  # lme4's isSingular tolerance on theta
SINGULAR_MESSAGE = "boundary (singular) fit: see help('isSingular')"  # lme4's words
EIGEN_TOL = 1e-8  # lmerTest's tolerance on the eigenvalues of the deviance's Hessian
FEW_LEVELS = 5  # a random factor with fewer levels gets a warning
DF_SMALL_LEVELS = 2_000  # Satterthwaite's df: at most this many levels of the smaller crossed factor


class TooLarge(ValueError):
    """A model too large for the exact derivatives Satterthwaite's df need."""


@dataclass
class MixedModel:
    formula: str
    n: int
    groups: dict[str, int]  # random factor -> its levels among the rows used
    coefficient: float | None = None  # standardised
    se: float | None = None
    df: float | None = None  # Satterthwaite's
    t: float | None = None
    ci: tuple[float, float] | None = None  # t on df
    p: float | None = None  # t on df
    wald_ci: tuple[float, float] | None = None  # normal
    wald_p: float | None = None
    variances: dict[str, float] = field(default_factory=dict)  # factor -> variance, and "residual"
    r2_marginal: float | None = None
    r2_conditional: float | None = None
    converged: bool = False
    reml_criterion: float | None = None
    gradient: float | None = None  # max |d criterion / d theta|, default engine only
    singular: bool = False
    engine: str = "reml"
    warnings: list[str] = field(default_factory=list)  # beside the figure: singular fit, few levels
    messages: list[str] = field(default_factory=list)


def standardise(values: np.ndarray) -> np.ndarray:
    """z-scores with the sample sd (ddof=1)."""
    sd = values.std(ddof=1)
    return (values - values.mean()) / sd if sd > 0 else values - values.mean()


def mixed_model(
    x: np.ndarray,
    y: np.ndarray,
    factors: Mapping[str, np.ndarray],
    *,
    metric: str = "metric",
    target: str = "target",
    confidence: float = 0.95,
    engine: str = "reml",
) -> MixedModel:
    """Fit z(y) ~ z(x) with a random intercept per factor (crossed), on complete rows.

    `factors` maps a factor name to one code per row (at most two factors; a factor with one
    level is left out). Never raises on data: an unfit model comes back with a message.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown mixed-model engine {engine!r}: choose one of {', '.join(ENGINES)}")
    used = {name: pd.factorize(codes)[0] for name, codes in factors.items()}
    used = {name: codes for name, codes in used.items() if codes.max(initial=-1) >= 1}
    if len(used) > 2:
        raise ValueError("at most two crossed random factors")
    formula = f"z({target}) ~ z({metric})" + "".join(f" + (1 | {name})" for name in used)
    model = MixedModel(formula=formula, n=int(x.size), groups={n: int(c.max()) + 1 for n, c in used.items()})
    model.engine = engine
    if not used:
        model.messages.append("no random factor with two levels: the mixed model would be the least-squares line")
        return model
    if x.size < 4 or np.all(x == x[0]) or np.all(y == y[0]):
        model.messages.append("too few rows, or a constant metric or target: no mixed model")
        return model
    xz, yz = standardise(x), standardise(y)
    design = np.column_stack([np.ones(x.size), xz])
    with np.errstate(all="ignore"):
        fit = fit_model(design, yz, used, engine)
    if fit is None:
        model.messages.append("the mixed model could not be fitted (singular design)")
        return model
    model.converged, model.reml_criterion, model.gradient = fit.converged, fit.criterion, fit.gradient
    model.singular = fit.singular
    if not fit.converged:
        model.messages.append("the mixed-model fit did not converge; its figures are the last iterate")
    model.coefficient = float(fit.beta[1])
    model.se = float(math.sqrt(max(fit.cov_beta[1, 1], 0.0)))
    df = float(fit.df[1]) if fit.df is not None else None
    table = coefficient_table(model.coefficient, model.se, df, confidence)
    model.df, model.t, model.p, model.ci = df, table.t, table.p, table.ci
    model.wald_p, model.wald_ci = table.wald_p, table.wald_ci
    model.variances = fit.variances
    model.warnings = fit_warnings(model.groups, fit)
    fixed = float(np.var(design @ fit.beta, ddof=1))
    random = sum(v for name, v in fit.variances.items() if name != "residual")
    total = fixed + random + fit.variances["residual"]
    if total > 0:
        model.r2_marginal = fixed / total
        model.r2_conditional = (fixed + random) / total
    return model


@dataclass
class Fit:
    """A REML fit as lme4 + lmerTest report it."""

    beta: np.ndarray
    cov_beta: np.ndarray  # sigma² (X' V⁻¹ X)⁻¹, lme4's vcov()
    variances: dict[str, float]  # factor -> variance, and "residual"
    theta: dict[str, float]  # factor -> its sd relative to the residual sd (lme4's theta)
    converged: bool
    criterion: float  # -2 log restricted likelihood (lme4's "REML criterion at convergence")
    gradient: float | None  # max |d criterion / d theta| over the estimates off the boundary
    df: np.ndarray | None  # Satterthwaite's, per coefficient
    singular: bool
    notes: list[str] = field(default_factory=list)  # lmerTest's warnings on the Hessian


def satterthwaite(
    design: np.ndarray, y: np.ndarray, factors: Mapping[str, np.ndarray], ratios: Mapping[str, float], sigma: float
) -> tuple[np.ndarray, list[str]]:
    """Satterthwaite's degrees of freedom of each coefficient, as lmerTest computes them for a REML fit.

    With varpar = (theta, sigma) (theta_f = sqrt(ratio_f), the relative sds; sigma the residual sd):
    A = 2 H⁺, H the Hessian of the REML deviance D(varpar) (β profiled out, lmerTest's devfun_vp) and H⁺ its
    pseudo-inverse over the eigenvalues above 1e-8; g_k = d var(b_j) / d varpar_k, var(b) = sigma² (X'V⁻¹X)⁻¹;
    df_j = 2 var(b_j)² / (g' A g). The derivatives are exact (lmerTest takes them by Richardson extrapolation).
    A variance at zero leaves the derivatives in the others unchanged and contributes nothing (D is even in
    its theta), so it is left out. Also returns lmerTest's warnings on the Hessian's eigenvalues."""
    n, p = design.shape
    positive = {name: float(ratios[name]) for name in factors if ratios[name] > 0}
    if not positive:
        return np.full(p, float(n - p)), []
    reml = Reml(design, y, {name: factors[name] for name in positive})
    if reml.small is not None:
        small, big = (int(factors[name].max()) + 1 for name in reml.names)
        if small > DF_SMALL_LEVELS or small * big > DENSE_CROSS:
            raise TooLarge(
                f"Satterthwaite's degrees of freedom are not computed with {small:,} x {big:,} crossed levels "
                f"(more than {DF_SMALL_LEVELS:,} of the smaller factor or {DENSE_CROSS:,} cells): "
                "no t-based p or CI, the Wald ones only"
            )
    s = np.array([positive[name] for name in reml.names])
    d = reml.derivatives(s)
    parts = d.parts
    theta, sigma2, k = np.sqrt(s), sigma**2, s.size
    grad_s = d.tr_k - d.a / sigma2
    hessian = np.zeros((k + 1, k + 1))
    hessian[:k, :k] = 4 * np.outer(theta, theta) * (-d.kk + 2 * d.uku / sigma2) + np.diag(2 * grad_s)
    hessian[:k, k] = hessian[k, :k] = 2 * theta * 2 * d.a / sigma**3
    hessian[k, k] = 6 * parts.pwrss / sigma2**2 - 2 * (n - p) / sigma2
    values, vectors = np.linalg.eigh(hessian)
    notes = []
    negative, zero = values < -EIGEN_TOL, np.abs(values) <= EIGEN_TOL
    if negative.any():
        shown = " ".join(f"{v:.1e}" for v in values[negative])
        notes.append(f"Model failed to converge with {negative.sum()} negative eigenvalue(s): {shown}")
    if zero.any():
        shown = " ".join(f"{v:.1e}" for v in values[zero])
        notes.append(f"Model may not have converged with {zero.sum()} eigenvalue(s) close to zero: {shown}")
    keep = values > EIGEN_TOL
    covariance = 2 * (vectors[:, keep] / values[keep]) @ vectors[:, keep].T
    xhx_inv = np.linalg.inv(parts.xhx)
    jacobian = [2 * theta[f] * sigma2 * xhx_inv @ d.ff[f] @ xhx_inv for f in range(k)]
    jacobian.append(2 * sigma * xhx_inv)
    variance = sigma2 * np.diag(xhx_inv)
    gradients = np.array([np.diag(j) for j in jacobian])  # varpar x coefficient
    denominator = np.einsum("kj,kl,lj->j", gradients, covariance, gradients)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(denominator > 0, 2 * variance**2 / denominator, np.inf)  # R: 2 v² / 0 = Inf
    return df, notes


@dataclass
class Inference:
    """One coefficient's test: t, its p and CI on Satterthwaite's df (lmerTest's summary and contest), and the
    Wald (normal) p and CI."""

    t: float | None
    df: float | None
    p: float | None
    ci: tuple[float, float] | None
    wald_p: float
    wald_ci: tuple[float, float]


def coefficient_table(estimate: float, se: float, df: float | None, confidence: float) -> Inference:
    """The test of one coefficient from its estimate, SE and df."""
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    table = Inference(
        t=estimate / se if se > 0 else None,
        df=df,
        p=None,
        ci=None,
        wald_p=float(2 * stats.norm.sf(abs(estimate / se))) if se > 0 else 0.0,
        wald_ci=(estimate - z * se, estimate + z * se),
    )
    if df is not None and not math.isnan(df) and df > 0 and se > 0:
        q = float(stats.t.ppf(0.5 + confidence / 2, df))
        table.p = float(2 * stats.t.sf(abs(estimate / se), df))
        table.ci = (estimate - q * se, estimate + q * se)
    return table


def fit_warnings(groups: Mapping[str, int], fit: Fit) -> list[str]:
    """lme4's singular-fit message, a factor with fewer than FEW_LEVELS levels, lmerTest's Hessian warnings."""
    warnings = []
    if fit.singular:
        at_zero = [name for name, value in fit.theta.items() if value < SINGULAR_TOL]
        warnings.append(
            f"{SINGULAR_MESSAGE} (the {' and '.join(at_zero)} variance is estimated at zero: "
            f"relative sd below {SINGULAR_TOL:g})"
        )
    for name, levels in groups.items():
        if levels < FEW_LEVELS:
            warnings.append(
                f"only {levels} {name} levels (fewer than {FEW_LEVELS}): the {name} variance is barely estimable, "
                "and the degrees of freedom and p-values rest on it"
            )
    warnings.extend(fit.notes)
    return warnings


def fit_model(
    design: np.ndarray,
    y: np.ndarray,
    factors: Mapping[str, np.ndarray],
    engine: str = "reml",
    *,
    statsmodels_fit: Callable | None = None,
) -> Fit | None:
    """REML fit of y ~ design + a random intercept per factor (crossed), with Satterthwaite's df.

    With engine="statsmodels", `statsmodels_fit` (default: this module's) fits it, and the criterion
    and df are computed at its estimates."""
    if engine == "statsmodels":
        fitted = (statsmodels_fit or _fit_statsmodels)(design, y, factors)
        if fitted is None:
            return None
        beta, cov_beta, variances, converged = fitted
        sigma2 = variances["residual"]
        ratios = {name: max(variances[name], 0.0) / sigma2 for name in factors}
        gradient = None
    else:
        fitted_reml = _fit_reml(design, y, factors)
        if fitted_reml is None:
            return None
        beta, cov_beta, variances, converged, gradient = fitted_reml
        sigma2 = variances["residual"]
        ratios = {name: variances[name] / sigma2 for name in factors}
    reml = Reml(design, y, {name: factors[name] for name in factors if ratios[name] > 0})
    log_s = np.log(np.array([ratios[name] for name in reml.names]))
    criterion = reml.criterion(log_s)
    try:
        df, notes = satterthwaite(design, y, factors, ratios, math.sqrt(sigma2))
    except TooLarge as error:
        df, notes = None, [str(error)]
    except (np.linalg.LinAlgError, ValueError):
        df, notes = None, ["Satterthwaite's degrees of freedom could not be computed (singular Hessian)"]
    theta = {name: math.sqrt(ratios[name]) for name in factors}
    singular = any(value < SINGULAR_TOL for value in theta.values())
    return Fit(beta, cov_beta, variances, theta, converged, criterion, gradient, df, singular, notes)


def _fit_reml(design: np.ndarray, y: np.ndarray, factors: Mapping[str, np.ndarray]):
    reml = Reml(design, y, factors)
    k = len(reml.names)
    # A coarse grid first (the restricted likelihood of variance ratios is smooth but may be flat),
    # then Powell's method from the best point: no gradient needed, and it goes all the way to
    # the optimum where a quasi-Newton line search stalls on the flat likelihood of a few annotators.
    # Newton steps with the exact derivatives then finish it; a ratio that falls to the search's floor
    # (BOUNDARY_RATIO) is set to zero and its factor left out, as lme4's bounded optimiser leaves theta at 0.
    grid = np.array(np.meshgrid(*[[-6.0, -2.0, 0.0, 2.0]] * k)).reshape(k, -1).T
    start = min(grid, key=reml.deviance)
    result = optimize.minimize(
        reml.deviance,
        start,
        method="Powell",
        bounds=[(LOG_FLOOR, 12.0)] * k,
        options={"xtol": 1e-8, "ftol": 1e-13, "maxfev": 5000},
    )
    if not math.isfinite(result.fun):
        return None
    ratios = dict(zip(reml.names, np.exp(result.x), strict=True))
    gradient = None
    for _ in range(k + 1):
        kept = {name: factors[name] for name in reml.names if ratios[name] >= BOUNDARY_RATIO}
        if not kept:
            break
        inner = Reml(design, y, kept)
        start_log = np.log(np.array([ratios[name] for name in inner.names]))
        try:
            polished, gradient = reml_polish(inner, start_log)
        except (np.linalg.LinAlgError, ValueError):
            polished, gradient = start_log, None
        ratios.update(dict(zip(inner.names, np.exp(polished), strict=True)))
        if all(ratios[name] >= BOUNDARY_RATIO for name in kept):
            break
    ratios = {name: (value if value >= BOUNDARY_RATIO else 0.0) for name, value in ratios.items()}
    kept = {name: factors[name] for name in reml.names if ratios[name] > 0}
    final = Reml(design, y, kept)
    try:
        beta, sigma2, xhx, _ = final.fixed(np.log(np.array([ratios[name] for name in final.names])))
        cov_beta = sigma2 * np.linalg.inv(xhx)
    except (np.linalg.LinAlgError, ValueError):
        return None
    variances = {name: float(ratios[name] * sigma2) for name in factors}
    variances["residual"] = sigma2
    return beta, cov_beta, variances, bool(result.success), gradient


def _fit_statsmodels(design: np.ndarray, y: np.ndarray, factors: Mapping[str, np.ndarray]):
    from statsmodels.regression.mixed_linear_model import MixedLM

    frame = pd.DataFrame({name: codes for name, codes in factors.items()})
    if len(factors) == 1:
        (name,) = factors
        model = MixedLM(y, design, groups=frame[name].to_numpy())
    else:
        model = MixedLM.from_formula(
            "y ~ 0 + intercept + x",
            data=frame.assign(y=y, intercept=design[:, 0], x=design[:, 1], one=1),
            groups="one",
            re_formula="0",
            vc_formula={name: f"0 + C({name})" for name in factors},
            use_sparse=True,
        )
    try:
        result = model.fit(reml=True)
    except (np.linalg.LinAlgError, ValueError):
        return None
    beta = np.asarray(result.fe_params)
    cov_beta = np.asarray(result.cov_params())[:2, :2]
    if len(factors) == 1:
        (only,) = factors
        variances = {only: float(np.asarray(result.cov_re)[0, 0])}
    else:
        variances = {name: float(v) for name, v in zip(model.exog_vc.names, result.vcomp, strict=True)}
        variances = {name: variances[name] for name in factors}
    variances["residual"] = float(result.scale)
    return beta, cov_beta, variances, bool(result.converged)
