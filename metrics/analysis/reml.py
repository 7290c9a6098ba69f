"""The structured REML fit behind mixed.py: lme4's profiled criterion for crossed random intercepts,
its derivatives, and the Newton polish of its optimum.

Pure: numpy and scipy (no Django).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.linalg import cho_factor, cho_solve

DENSE_CROSS = 4_000_000  # cells of the annotator x item count table kept dense


# --- the structured REML fit -----------------------------------------------------------------------------------------


def _indicator(codes: np.ndarray) -> sparse.csr_array:
    n = codes.size
    return sparse.csr_array((np.ones(n), (np.arange(n), codes)), shape=(n, int(codes.max()) + 1))


@dataclass
class _Parts:
    """Everything at one point s (variance ratios, all > 0) that the derivatives need; q-space is the levels of
    the factors, in self.names order. K = Z'PZ = diag(delta) + U C U'."""

    beta: np.ndarray
    xhx: np.ndarray  # X' V⁻¹ X (V = I + Z S Z')
    pwrss: float  # (y - X b)' V⁻¹ (y - X b)
    u: np.ndarray  # Z' P y
    f: np.ndarray  # Z' V⁻¹ X
    delta: np.ndarray
    big_u: np.ndarray
    c: np.ndarray
    blocks: list[slice]  # each factor's rows of q-space


@dataclass
class _Derivatives:
    """Per factor f, g (q-space blocks): tr(K_ff), |u_f|², |K_fg|²_F, u_f' K_fg u_g and F_f'F_f (K = Z'PZ,
    u = Z'Py, F = Z'V⁻¹X), and the parts they came from."""

    tr_k: np.ndarray
    a: np.ndarray
    kk: np.ndarray
    uku: np.ndarray
    ff: np.ndarray
    parts: _Parts


class Reml:
    """The restricted log-likelihood of y = X b + sum_f Z_f u_f + e, u_f ~ N(0, theta_f sigma² I), e ~ N(0, sigma² I),
    profiled over b and sigma², as a function of log(theta). The factor with the most levels is the
    diagonal block of M = Lambda⁻¹ + Z'Z; the other (if any) is eliminated by its Schur complement."""

    def __init__(self, design: np.ndarray, y: np.ndarray, factors: Mapping[str, np.ndarray]):
        self.n, self.p = design.shape
        self.design, self.y = design, y
        data = np.column_stack([design, y])
        self.gram = data.T @ data
        # log_theta follows self.names: the factor with fewer levels first, the one with the most last.
        self.names = sorted(factors, key=lambda name: int(factors[name].max()))
        self.factors = dict(factors)
        self.small = None
        if not self.names:
            return
        big = _indicator(factors[self.names[-1]])
        self.big_counts = np.asarray(big.sum(axis=0)).ravel()
        self.big_sums = np.asarray(big.T @ data)
        if len(self.names) == 2:
            small = _indicator(factors[self.names[0]])
            counted = sparse.csr_array(small.T @ big)  # edits per (small level, big level)
            # Small: dense, sparse bookkeeping would cost more than the arithmetic.
            cross = counted.toarray() if counted.shape[0] * counted.shape[1] <= DENSE_CROSS else counted
            self.small = (np.asarray(small.sum(axis=0)).ravel(), np.asarray(small.T @ data), cross)

    def parts(self, log_theta: np.ndarray) -> tuple[np.ndarray, float]:
        """(W' H⁻¹ W for W = [X, y], log |H|) at the variance ratios exp(log_theta) (factor order as sorted)."""
        if not self.names:
            return self.gram.copy(), 0.0
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
        """(b, sigma², X' H⁻¹ X, the restricted deviance without constants) at log_theta."""
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

    def criterion(self, log_theta: np.ndarray) -> float:
        """lme4's "REML criterion at convergence": -2 log restricted likelihood, its constants included."""
        return self.deviance(log_theta) + (self.n - self.p) * (1 + math.log(2 * math.pi))

    def structure(self, s: np.ndarray) -> _Parts:
        """K = Z'PZ as diagonal plus low rank, with Z'Py and Z'V⁻¹X, at variance ratios s > 0.

        M = Z'Z + S⁻¹ has inverse blockdiag(0, D⁻¹) + R Σ⁻¹ R' (R = [I; -D⁻¹B'], Σ the Schur complement),
        Z'V⁻¹Z = S⁻¹ - S⁻¹ M⁻¹ S⁻¹ and Z'V⁻¹W = S⁻¹ M⁻¹ Z'W, so that K = Z'V⁻¹Z - F H⁻¹ F' keeps that form."""
        p = self.p
        big_s = s[-1]
        diagonal = self.big_counts + 1 / big_s
        ztw_big = self.big_sums
        if self.small is None:
            minv_ztw = ztw_big / diagonal[:, None]
            level_s = np.full(diagonal.size, big_s)
            delta = 1 / big_s - 1 / (big_s**2 * diagonal)
            first: list[np.ndarray] = []
            blocks = [slice(0, diagonal.size)]
            c_small = np.zeros((0, 0))
        else:
            counts, ztw_small, cross = self.small
            cross = cross.toarray() if sparse.issparse(cross) else cross
            small_s = s[0]
            schur = np.diag(counts + 1 / small_s) - (cross / diagonal) @ cross.T
            schur_inv = np.linalg.inv(schur)
            w = schur_inv @ (ztw_small - cross @ (ztw_big / diagonal[:, None]))
            minv_ztw = np.vstack([w, (ztw_big - cross.T @ w) / diagonal[:, None]])
            level_s = np.concatenate([np.full(counts.size, small_s), np.full(diagonal.size, big_s)])
            delta = np.concatenate([np.full(counts.size, 1 / small_s), 1 / big_s - 1 / (big_s**2 * diagonal)])
            first = [np.vstack([np.eye(counts.size) / small_s, -(cross.T / diagonal[:, None]) / big_s])]
            blocks = [slice(0, counts.size), slice(counts.size, counts.size + diagonal.size)]
            c_small = -schur_inv
        ztw = np.vstack([self.small[1], ztw_big]) if self.small is not None else ztw_big
        inner = self.gram - ztw.T @ minv_ztw
        xhx, xhy = inner[:p, :p], inner[:p, p]
        xhx_inv = np.linalg.inv(xhx)
        beta = xhx_inv @ xhy
        pwrss = float(inner[p, p] - xhy @ beta)
        modes = minv_ztw[:, p] - minv_ztw[:, :p] @ beta  # the conditional modes of the random effects
        f = minv_ztw[:, :p] / level_s[:, None]
        big_u = np.hstack([*first, f])
        c = np.zeros((big_u.shape[1],) * 2)
        k = c_small.shape[0]
        c[:k, :k], c[k:, k:] = c_small, -xhx_inv
        return _Parts(beta, xhx, pwrss, modes / level_s, f, delta, big_u, c, blocks)

    def derivatives(self, s: np.ndarray) -> _Derivatives:
        """Exact first and second derivatives, in the variance ratios s, of the pieces of the REML deviance
        D(s, sigma) = log|V| + log|X'V⁻¹X| + y'Py / sigma² + (n - p) log(2 pi sigma²)."""
        parts = self.structure(s)
        k = len(self.names)
        tr_k, a = np.zeros(k), np.zeros(k)
        kk, uku = np.zeros((k, k)), np.zeros((k, k))
        grams, ts, ff = [], [], []
        for f, block in enumerate(parts.blocks):
            uf, df_, vf = parts.big_u[block], parts.delta[block], parts.u[block]
            gram = uf.T @ uf
            grams.append(gram)
            ts.append(uf.T @ vf)
            ff.append(parts.f[block].T @ parts.f[block])
            tr_k[f] = df_.sum() + np.trace(parts.c @ gram)
            a[f] = vf @ vf
            kk[f, f] = (df_**2).sum() + 2 * np.trace(parts.c @ (uf.T @ (df_[:, None] * uf)))
            uku[f, f] = vf @ (df_ * vf)
        for f in range(k):
            for g in range(k):
                kk[f, g] += np.trace(parts.c @ grams[g] @ parts.c @ grams[f])
                uku[f, g] += ts[f] @ parts.c @ ts[g]
        return _Derivatives(tr_k=tr_k, a=a, kk=kk, uku=uku, ff=np.array(ff), parts=parts)

    def profiled_newton(self, log_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and Hessian of the profiled deviance in log(s)."""
        s = np.exp(log_s)
        d = self.derivatives(s)
        m, w = self.n - self.p, d.parts.pwrss
        grad_s = d.tr_k - m * d.a / w
        hess_s = -d.kk + m * (2 * d.uku / w - np.outer(d.a, d.a) / w**2)
        return s * grad_s, np.outer(s, s) * hess_s + np.diag(s * grad_s)


def reml_polish(reml: Reml, log_s: np.ndarray) -> tuple[np.ndarray, float]:
    """Newton steps on the profiled deviance from the optimiser's point; (the point, max |gradient| in theta)."""
    current, value = log_s.copy(), reml.deviance(log_s)
    for _ in range(30):
        try:
            grad, hess = reml.profiled_newton(current)
            step = -np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            break
        if not np.all(np.linalg.eigvalsh(hess) > 0):
            break
        for _ in range(30):
            trial = current + step
            trial_value = reml.deviance(trial)
            if trial_value <= value + 1e-12 * abs(value):
                break
            step = step / 2
        else:
            break
        current, value = trial, trial_value
        if np.max(np.abs(step)) < 1e-12:
            break
    grad, _ = reml.profiled_newton(current)
    # d/dtheta = 2 / theta d/dlog(s), theta = sqrt(s)
    return current, float(np.max(np.abs(2 * grad / np.sqrt(np.exp(current)))))
