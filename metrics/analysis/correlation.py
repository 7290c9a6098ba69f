"""Correlations of a metric with the effort: Pearson (p, CI), Spearman, Williams's test, the matrix.

Pure: numpy, scipy and pandas (no Django).
- Pearson r with a two-sided p-value and a 95% confidence interval from Fisher's z
  (tanh(atanh(r) +- z_0.975 / sqrt(n - 3))); Spearman rho with its two-sided p-value.
- Williams's test (Steiger 1980, eq. 7) for two dependent correlations sharing the
  target; one-sided p for "the first correlation is higher".
- The least-squares line with its confidence band, for the scatter plots.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from metrics.analysis.common import is_constant, jsonable


@dataclass
class Correlation:
    n: int
    pearson: float | None = None
    pearson_p: float | None = None
    pearson_ci: tuple[float, float] | None = None
    spearman: float | None = None
    spearman_p: float | None = None
    kendall: float | None = None  # tau-b
    kendall_p: float | None = None


@dataclass
class WilliamsTest:
    best: str
    n: int
    r_best: float
    r_metric: float
    r_between: float
    t: float
    df: int
    p: float
    significant: bool


def fisher_ci(r: float, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Confidence interval of Pearson's r from Fisher's z transform; None below 4 pairs."""
    if n < 4 or not math.isfinite(r):
        return None
    if abs(r) >= 1.0:
        return (r, r)
    z = math.atanh(r)
    half = stats.norm.ppf(0.5 + confidence / 2) / math.sqrt(n - 3)
    return (math.tanh(z - half), math.tanh(z + half))


def correlate(
    x: np.ndarray, y: np.ndarray, confidence: float = 0.95, *, y_ranks: np.ndarray | None = None
) -> Correlation:
    """Pearson (p, CI), Spearman and Kendall on complete pairs; None where undefined (n < 3, constant).

    Same values as scipy.stats.pearsonr / spearmanr (two-sided p from Student's t with
    n - 2 df, average ranks for ties), computed directly to stay fast on 100,000 rows;
    Kendall's tau-b (ties counted in both variables) and its two-sided p are scipy.stats.kendalltau's.
    `y_ranks` (stats.rankdata(y)) may be passed when y is ranked for several metrics.
    """
    n = int(x.size)
    result = Correlation(n=n)
    if n < 3 or is_constant(x) or is_constant(y):
        return result
    ranks = stats.rankdata(y) if y_ranks is None else y_ranks
    pearson, spearman = _pearson(x, y), _pearson(stats.rankdata(x), ranks)
    if pearson is None or spearman is None:  # variation lost to rounding (e.g. subnormal values)
        return result
    result.pearson, result.pearson_p = pearson
    result.pearson_ci = fisher_ci(result.pearson, n, confidence)
    result.spearman, result.spearman_p = spearman
    kendall = stats.kendalltau(x, y)
    if math.isfinite(kendall.statistic):
        result.kendall, result.kendall_p = float(kendall.statistic), float(kendall.pvalue)
    return result


def _pearson(x: np.ndarray, y: np.ndarray) -> tuple[float, float] | None:
    dx, dy = x - x.mean(), y - y.mean()
    # Scaled to [-1, 1] first (as scipy does), so neither huge nor tiny values over/underflow.
    scale_x, scale_y = float(np.abs(dx).max()), float(np.abs(dy).max())
    if not (scale_x > 0 and scale_y > 0):
        return None
    dx, dy = dx / scale_x, dy / scale_y
    denominator = math.sqrt(np.einsum("i,i->", dx, dx) * np.einsum("i,i->", dy, dy))
    if not denominator > 0:
        return None
    r = max(-1.0, min(1.0, float(np.einsum("i,i->", dx, dy) / denominator)))
    n = x.size
    if abs(r) == 1.0:
        return r, 0.0
    t = r * math.sqrt((n - 2) / (1 - r * r))
    return r, float(2 * stats.t.sf(abs(t), n - 2))


def williams_test(r12: float, r13: float, r23: float, n: int) -> tuple[float, int, float]:
    """Williams's t for H1: r12 > r13, where 1 is the shared variable (the target).

    t = (r12 - r13) sqrt((n-1)(1+r23) / (2 (n-1)/(n-3) |R| + rbar² (1-r23)³)),
    |R| = 1 - r12² - r13² - r23² + 2 r12 r13 r23, rbar = (r12 + r13)/2, df = n - 3.
    Returns (t, df, one-sided p).
    """
    if n < 4:
        raise ValueError("Williams's test needs at least 4 rows")
    det = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    rbar = (r12 + r13) / 2
    denominator = 2 * (n - 1) / (n - 3) * det + rbar**2 * (1 - r23) ** 3
    if denominator <= 0:  # perfectly collinear metrics: no evidence either way
        return 0.0, n - 3, 0.5
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23) / denominator)
    return t, n - 3, float(stats.t.sf(t, n - 3))


def correlations_with(
    frame: pd.DataFrame, *, metrics: Sequence[str], targets: Sequence
) -> dict[str, list[float | None]]:
    """Pearson r of every metric with every target column, on each pair's complete rows."""
    out: dict[str, list[float | None]] = {}
    for name in metrics:
        x_all = pd.to_numeric(frame[name], errors="coerce").to_numpy(float)
        row = []
        for target in targets:
            y_all = pd.to_numeric(frame[target], errors="coerce").to_numpy(float)
            both = np.isfinite(x_all) & np.isfinite(y_all)
            row.append(correlate(x_all[both], y_all[both]).pearson)
        out[name] = row
    return out


def correlation_matrix(frame: pd.DataFrame, columns: Sequence[str]) -> dict:
    """Pearson r between every pair of metrics (pairwise-complete rows)."""
    matrix = frame[list(columns)].astype(float).corr(method="pearson") if columns else pd.DataFrame()
    return {"metrics": list(columns), "values": [[jsonable(v) for v in row] for row in matrix.to_numpy()]}


# --- line fit (for scatter plots) -----------------------------------------------------


@dataclass
class LineFit:
    slope: float
    intercept: float
    n: int
    residual_sd: float
    x_mean: float
    sxx: float
    t_crit: float

    def predict(self, xs: np.ndarray) -> np.ndarray:
        return self.intercept + self.slope * xs

    def band(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Confidence band of the fitted mean at xs."""
        half = self.t_crit * self.residual_sd * np.sqrt(1 / self.n + (xs - self.x_mean) ** 2 / self.sxx)
        fitted = self.predict(xs)
        return fitted - half, fitted + half


def fit_line(x: np.ndarray, y: np.ndarray, confidence: float = 0.95) -> LineFit | None:
    """Least-squares line y = a + b x with its confidence band; None if undefined."""
    n = x.size
    if n < 3 or is_constant(x):
        return None
    x_mean = float(x.mean())
    sxx = float(((x - x_mean) ** 2).sum())
    slope = float(((x - x_mean) * (y - y.mean())).sum() / sxx)
    intercept = float(y.mean() - slope * x_mean)
    residuals = y - (intercept + slope * x)
    residual_sd = float(math.sqrt((residuals**2).sum() / (n - 2)))
    t_crit = float(stats.t.ppf(0.5 + confidence / 2, n - 2))
    return LineFit(slope, intercept, int(n), residual_sd, x_mean, sxx, t_crit)


def format_p(p: float | None) -> str:
    """A p-value for people: 2 significant digits; an underflowed 0 shows as < 1e-300."""
    if p is None:
        return "-"
    return "< 1e-300" if p == 0 else f"{p:.2g}"
