"""Mixed-effects models of the effort: target ~ metric + (1 | annotator) [+ (1 | item)].

Pure: numpy and scipy (no Django); statsmodels on request. Effort studies (DivEMT, QE4PE)
analyse effort with mixed models because people differ more than anything else: the
annotator gets a random intercept, and so does the item when items are shared (several
people post-edited it), crossed with the annotator.

Both the metric and the target (or log(target), for heavy-tailed times) are standardised on
the rows used, so the metric's coefficient is in standard deviations of the target per
standard deviation of the metric. Fitted by REML; the coefficient's 95% CI and p are Wald
(normal) from sigma² (X' H⁻¹ X)⁻¹. R² after Nakagawa & Schielzeth (2013): with the variance
of the fixed-effect predictions sigma²_f (sample variance, as R's var() in MuMIn), the random
intercept variances sigma²_a, sigma²_i and the residual variance sigma²_e,
marginal = sigma²_f / (sigma²_f + sigma²_a + sigma²_i + sigma²_e) and conditional =
(sigma²_f + sigma²_a + sigma²_i) / (the same sum).

Engines. statsmodels' MixedLM fits crossed intercepts only as variance components of a single
group; on IWSLT2019 (5,235 edits, 1,047 items) that took 22 s of CPU per fit even with sparse
matrices, and a report needs 16. The default engine ("reml") maximises the same restricted
likelihood with the structure of the problem: two crossed random intercepts make the
(q x q) matrix Lambda⁻¹ + Z'Z a diagonal block for the factor with many levels (the items)
and a small dense one for the other (the annotators), so a likelihood evaluation is a
Cholesky of the small block, and the fit takes milliseconds. The tests compare both engines
with statsmodels called directly. engine="statsmodels" runs statsmodels itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize, sparse, stats
from scipy.linalg import cho_factor, cho_solve

ENGINES = ("reml", "statsmodels")
DENSE_CROSS = 4_000_000  # cells of the annotator x item count table kept dense
LOG_FLOOR = -25.0  # log of the smallest variance ratio searched: a variance this small is zero


@dataclass
class MixedModel:
    formula: str
    n: int
    groups: dict[str, int]  # random factor -> its levels among the rows used
    coefficient: float | None = None  # standardised
    se: float | None = None
    ci: tuple[float, float] | None = None
    p: float | None = None
    variances: dict[str, float] = field(default_factory=dict)  # factor -> variance, and "residual"
    r2_marginal: float | None = None
    r2_conditional: float | None = None
    converged: bool = False
    engine: str = "reml"
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
    fit = _fit_statsmodels(design, yz, used) if engine == "statsmodels" else _fit_reml(design, yz, used)
    if fit is None:
        model.messages.append("the mixed model could not be fitted (singular design)")
        return model
    beta, cov_beta, variances, converged = fit
    model.converged = converged
    if not converged:
        model.messages.append("the mixed-model fit did not converge; its figures are the last iterate")
    model.coefficient = float(beta[1])
    model.se = float(math.sqrt(max(cov_beta[1, 1], 0.0)))
    z = stats.norm.ppf(0.5 + confidence / 2)
    model.ci = (model.coefficient - z * model.se, model.coefficient + z * model.se)
    model.p = float(2 * stats.norm.sf(abs(model.coefficient / model.se))) if model.se > 0 else 0.0
    model.variances = variances
    fixed = float(np.var(design @ beta, ddof=1))
    random = sum(v for name, v in variances.items() if name != "residual")
    total = fixed + random + variances["residual"]
    if total > 0:
        model.r2_marginal = fixed / total
        model.r2_conditional = (fixed + random) / total
    return model


# --- the structured REML fit -----------------------------------------------------------------------------------------


def _indicator(codes: np.ndarray) -> sparse.csr_array:
    n = codes.size
    return sparse.csr_array((np.ones(n), (np.arange(n), codes)), shape=(n, int(codes.max()) + 1))


class _Reml:
    """The restricted log-likelihood of y = X b + sum_f Z_f u_f + e, u_f ~ N(0, theta_f sigma² I), e ~ N(0, sigma² I),
    profiled over b and sigma², as a function of log(theta). The factor with the most levels is the
    diagonal block of M = Lambda⁻¹ + Z'Z; the other (if any) is eliminated by its Schur complement."""

    def __init__(self, design: np.ndarray, y: np.ndarray, factors: Mapping[str, np.ndarray]):
        self.n, self.p = design.shape
        data = np.column_stack([design, y])
        self.gram = data.T @ data
        # log_theta follows self.names: the factor with fewer levels first, the one with the most last.
        self.names = sorted(factors, key=lambda name: int(factors[name].max()))
        big = _indicator(factors[self.names[-1]])
        self.big_counts = np.asarray(big.sum(axis=0)).ravel()
        self.big_sums = np.asarray(big.T @ data)
        self.small = None
        if len(self.names) == 2:
            small = _indicator(factors[self.names[0]])
            counted = sparse.csr_array(small.T @ big)  # edits per (small level, big level)
            # Small: dense, sparse bookkeeping would cost more than the arithmetic.
            cross = counted.toarray() if counted.shape[0] * counted.shape[1] <= DENSE_CROSS else counted
            self.small = (np.asarray(small.sum(axis=0)).ravel(), np.asarray(small.T @ data), cross)

    def parts(self, log_theta: np.ndarray) -> tuple[np.ndarray, float]:
        """(W' H⁻¹ W for W = [X, y], log |H|) at the variance ratios exp(log_theta) (factor order as sorted)."""
        theta = np.exp(log_theta)
        diagonal = self.big_counts + 1 / theta[-1]
        scaled = self.big_sums / diagonal[:, None]
        inner = self.gram - self.big_sums.T @ scaled
        log_det = float(np.log(diagonal).sum() + diagonal.size * log_theta[-1])
        if self.small is not None:
            counts, sums, cross = self.small
            schur = np.diag(counts + 1 / theta[0]) - (cross * (1 / diagonal)) @ cross.T
            rest = sums - cross @ scaled
            factor = cho_factor(schur, lower=True)
            inner -= rest.T @ cho_solve(factor, rest)
            log_det += float(2 * np.log(np.diag(factor[0])).sum() + counts.size * log_theta[0])
        return inner, log_det

    def fixed(self, log_theta: np.ndarray) -> tuple[np.ndarray, float, np.ndarray, float]:
        """(b, sigma², X' H⁻¹ X, the restricted deviance) at log_theta."""
        inner, log_det = self.parts(log_theta)
        p = self.p
        xhx, xhy = inner[:p, :p], inner[:p, p]
        factor = cho_factor(xhx, lower=True)
        beta = cho_solve(factor, xhy)
        sigma2 = float(inner[p, p] - xhy @ beta) / (self.n - p)
        deviance = (self.n - p) * math.log(sigma2) + log_det + float(2 * np.log(np.diag(factor[0])).sum())
        return beta, sigma2, xhx, deviance

    def deviance(self, log_theta: np.ndarray) -> float:
        try:
            return self.fixed(log_theta)[3]
        except (np.linalg.LinAlgError, ValueError):
            return math.inf


def _fit_reml(design: np.ndarray, y: np.ndarray, factors: Mapping[str, np.ndarray]):
    reml = _Reml(design, y, factors)
    k = len(reml.names)
    # A coarse grid first (the restricted likelihood of variance ratios is smooth but may be flat),
    # then Powell's method from the best point: no gradient needed, and it goes all the way to
    # the optimum where a quasi-Newton line search stalls on the flat likelihood of a few annotators.
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
    try:
        beta, sigma2, xhx, _ = reml.fixed(result.x)
        cov_beta = sigma2 * np.linalg.inv(xhx)
    except (np.linalg.LinAlgError, ValueError):
        return None
    at_floor = result.x <= LOG_FLOOR + 1e-6
    ratios = dict(zip(reml.names, np.where(at_floor, 0.0, np.exp(result.x)), strict=True))
    variances = {name: float(ratios[name] * sigma2) for name in factors}
    variances["residual"] = sigma2
    return beta, cov_beta, variances, bool(result.success)


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
