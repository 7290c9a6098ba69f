"""Agreement across overlapping work: Krippendorff's alpha and the intraclass correlations.

Pure: numpy and scipy (no Django). Inputs are flat arrays, one entry per rating:
``units`` (the item rated), ``values`` (the rating); ``raters`` where the ICC needs it.
Any ratings fit (effort figures, keystrokes, times, later ESA/MQM scores).

- ``krippendorff_alpha``: interval and nominal metrics in one pass over the pairable values,
  without the V x V coincidence matrix (docs/agreement.md derives the formulas from
  Krippendorff 2011, "Computing Krippendorff's alpha-reliability"). Equal to the
  ``krippendorff`` package (``krippendorff.alpha(reliability_data=..., level_of_measurement=...)``).
- ``intraclass``: Shrout & Fleiss ICC(1,1), ICC(2,1), ICC(3,1) and the average-measure forms
  ICC(1,k), ICC(2,k), ICC(3,k) with the F-based 95% CIs, as ``pingouin.intraclass_corr``
  computes them. Incomplete data: complete-case items only (an item missing any rater is
  dropped, pingouin's ``nan_policy="omit"``); the count dropped is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats

LEVELS = ("interval", "nominal")


@dataclass
class Alpha:
    alpha: float | None
    level: str
    pairable: int  # n: values in units with at least two values
    units: int  # units with at least two values
    observed: float | None = None  # D_o
    expected: float | None = None  # D_e


def _pairable(units: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drop missing values and single-valued units; return (unit codes, values, m_u per unit)."""
    units = np.asarray(units)
    values = np.asarray(values)
    keep = ~_missing(values)
    units, values = units[keep], values[keep]
    codes, inverse, counts = np.unique(units, return_inverse=True, return_counts=True)
    keep = counts[inverse] >= 2
    inverse, values = inverse[keep], values[keep]
    codes2, inverse = np.unique(inverse, return_inverse=True)
    m = np.bincount(inverse)
    return inverse, values, m


def _missing(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind in "fc":
        return np.isnan(values)
    if values.dtype.kind == "O":
        return np.array([v is None or (isinstance(v, float) and v != v) for v in values], dtype=bool)
    return np.zeros(values.shape, dtype=bool)


def krippendorff_alpha(units, values, *, level: str = "interval") -> Alpha:
    """Krippendorff's alpha = 1 - D_o / D_e over the pairable values (see module doc)."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    inverse, vals, m = _pairable(units, values)
    n = int(vals.size)
    if n < 2 or m.size == 0:
        return Alpha(None, level, n, int(m.size))
    weight = 1.0 / (m - 1.0)  # 1/(m_u - 1) per unit
    if level == "interval":
        vals = vals.astype(float)
        means = np.bincount(inverse, weights=vals) / m
        ss_u = np.bincount(inverse, weights=(vals - means[inverse]) ** 2)
        # sum over ordered pairs i != j within u of (v_i - v_j)^2 = 2 m_u SS_u
        d_o = float(np.sum(2.0 * m * ss_u * weight)) / n
        d_e = 2.0 * float(np.sum((vals - vals.mean()) ** 2)) / (n - 1)
    else:
        _, vcodes = np.unique(vals, return_inverse=True)
        pair = inverse.astype(np.int64) * (int(vcodes.max()) + 1) + vcodes
        _, pair_inv, n_uc = np.unique(pair, return_inverse=True, return_counts=True)
        unit_of = np.zeros(n_uc.size, dtype=np.int64)
        unit_of[pair_inv] = inverse
        disagree = m.astype(float) ** 2 - np.bincount(unit_of, weights=n_uc.astype(float) ** 2, minlength=m.size)
        d_o = float(np.sum(disagree * weight)) / n
        n_c = np.bincount(vcodes).astype(float)
        d_e = (n * n - float(np.sum(n_c**2))) / (n * (n - 1.0))
    if d_e == 0:
        return Alpha(None, level, n, int(m.size), d_o, d_e)
    return Alpha(1.0 - d_o / d_e, level, n, int(m.size), d_o, d_e)


ICC_TYPES = ("ICC(1,1)", "ICC(2,1)", "ICC(3,1)", "ICC(1,k)", "ICC(2,k)", "ICC(3,k)")


@dataclass
class ICC:
    items: int  # complete-case items used
    raters: int
    dropped: int  # items dropped for missing a rater
    values: dict[str, float] = field(default_factory=dict)
    ci95: dict[str, tuple[float, float]] = field(default_factory=dict)
    f: dict[str, float] = field(default_factory=dict)
    p: dict[str, float] = field(default_factory=dict)


def complete_matrix(units, raters, values) -> tuple[np.ndarray, int]:
    """Items x raters matrix of the complete-case items (mean of repeats), and the count dropped."""
    units, raters = np.asarray(units), np.asarray(raters)
    values = np.asarray(values, dtype=float)
    keep = ~np.isnan(values)
    units, raters, values = units[keep], raters[keep], values[keep]
    uc, ui = np.unique(units, return_inverse=True)
    rc, ri = np.unique(raters, return_inverse=True)
    total = np.zeros((uc.size, rc.size))
    count = np.zeros((uc.size, rc.size))
    np.add.at(total, (ui, ri), values)
    np.add.at(count, (ui, ri), 1.0)
    complete = (count > 0).all(axis=1)
    return total[complete] / count[complete], int(uc.size - complete.sum())


def intraclass(units, raters, values, *, level: float = 0.95) -> ICC | None:
    """Shrout & Fleiss ICCs on the complete-case items x raters matrix; None if under 2 x 2."""
    x, dropped = complete_matrix(units, raters, values)
    n, k = x.shape
    if n < 2 or k < 2:
        return None
    grand = x.mean()
    # numpy floats, as pingouin computes: a matrix the model fits exactly (no error, or no spread) gives
    # inf or NaN (None in JSON), never a ZeroDivisionError.
    ss_rows = np.float64(k * np.sum((x.mean(axis=1) - grand) ** 2))
    ss_cols = np.float64(n * np.sum((x.mean(axis=0) - grand) ** 2))
    ss_total = np.float64(np.sum((x - grand) ** 2))
    ss_err = ss_total - ss_rows - ss_cols
    # Rounding leaves about 1e-16 of ss_total where a sum of squares is exactly zero (rows or raters alike, or
    # an exact fit): kept, it turns inf or NaN into a finite number of 1e15 that means nothing.
    tiny = 1e-12 * ss_total
    ss_rows, ss_cols, ss_err = (np.float64(0.0) if abs(ss) <= tiny else ss for ss in (ss_rows, ss_cols, ss_err))
    df1, df_w, df_e = n - 1, n * (k - 1), (n - 1) * (k - 1)
    out = ICC(n, k, dropped)
    v = out.values
    with np.errstate(divide="ignore", invalid="ignore"):
        msb, msj = ss_rows / df1, ss_cols / (k - 1)
        msw, mse = (ss_cols + ss_err) / df_w, ss_err / df_e
        # The same for a denominator whose terms cancel exactly (ICC(2,k) with msb = (mse - msj) / n).
        tiny = 1e-12 * k * max(msb, msj, msw, mse)

        def ratio(top, bottom):
            return top / (np.float64(0.0) if abs(bottom) <= tiny else bottom)

        v["ICC(1,1)"] = ratio(msb - msw, msb + (k - 1) * msw)
        v["ICC(2,1)"] = ratio(msb - mse, msb + (k - 1) * mse + k * (msj - mse) / n)
        v["ICC(3,1)"] = ratio(msb - mse, msb + (k - 1) * mse)
        v["ICC(1,k)"] = ratio(msb - msw, msb)
        v["ICC(2,k)"] = ratio(msb - mse, msb + (msj - mse) / n)
        v["ICC(3,k)"] = ratio(msb - mse, msb)
        f1, f3 = msb / msw, msb / mse
        a = 1 - level
        for name, fval, d2 in (("1", f1, df_w), ("2", f3, df_e), ("3", f3, df_e)):
            out.f[f"ICC({name},1)"] = out.f[f"ICC({name},k)"] = float(fval)
            out.p[f"ICC({name},1)"] = out.p[f"ICC({name},k)"] = float(stats.f.sf(fval, df1, d2))
        f1l, f1u = f1 / stats.f.ppf(1 - a / 2, df1, df_w), f1 * stats.f.ppf(1 - a / 2, df_w, df1)
        f3l, f3u = f3 / stats.f.ppf(1 - a / 2, df1, df_e), f3 * stats.f.ppf(1 - a / 2, df_e, df1)
        icc2, fj = v["ICC(2,1)"], msj / mse
        vn = df_e * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        vd = df1 * k**2 * icc2**2 * fj**2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        f2u = stats.f.ppf(1 - a / 2, n - 1, vn / vd)
        f2l = stats.f.ppf(1 - a / 2, vn / vd, n - 1)
        l2 = n * (msb - f2u * mse) / (f2u * (k * msj + (k * n - k - n) * mse) + n * msb)
        u2 = n * (f2l * msb - mse) / (k * msj + (k * n - k - n) * mse + n * f2l * msb)
        out.ci95 = {
            "ICC(1,1)": ((f1l - 1) / (f1l + k - 1), (f1u - 1) / (f1u + k - 1)),
            "ICC(2,1)": (l2, u2),
            "ICC(3,1)": ((f3l - 1) / (f3l + k - 1), (f3u - 1) / (f3u + k - 1)),
            "ICC(1,k)": (1 - 1 / f1l, 1 - 1 / f1u),
            "ICC(2,k)": (l2 * k / (1 + l2 * (k - 1)), u2 * k / (1 + u2 * (k - 1))),
            "ICC(3,k)": (1 - 1 / f3l, 1 - 1 / f3u),
        }
    out.ci95 = {key: (float(lo), float(hi)) for key, (lo, hi) in out.ci95.items()}
    out.values = {key: float(val) for key, val in v.items()}
    return out


@dataclass
class OneWayICC:
    """ICC(1) of the one-way random-effects ANOVA over every item with two or more ratings, group sizes unequal:
    ICC(1) = (MSB - MSW) / (MSB + (n0 - 1) MSW), n0 = (N - sum n_i^2 / N) / (g - 1) (Snedecor & Cochran's
    average group size; equals Shrout & Fleiss ICC(1,1) when every item has k ratings)."""

    value: float | None
    items: int  # g
    ratings: int  # N
    n0: float | None
    f: float | None  # MSB / MSW, scipy.stats.f_oneway's statistic
    p: float | None


def icc_oneway(units, values) -> OneWayICC:
    inverse, vals, m = _pairable(units, np.asarray(values, dtype=float))
    g, n = int(m.size), int(vals.size)
    if g < 2 or n <= g:
        return OneWayICC(None, g, n, None, None, None)
    means = np.bincount(inverse, weights=vals) / m
    ssb = float(np.sum(m * (means - vals.mean()) ** 2))
    ssw = float(np.sum((vals - means[inverse]) ** 2))
    msb, msw = ssb / (g - 1), ssw / (n - g)
    n0 = (n - float(np.sum(m.astype(float) ** 2)) / n) / (g - 1)
    denominator = msb + (n0 - 1) * msw
    if msw == 0 or denominator == 0:
        return OneWayICC(None, g, n, n0, None, None)
    f = msb / msw
    return OneWayICC((msb - msw) / denominator, g, n, n0, f, float(stats.f.sf(f, g - 1, n - g)))
