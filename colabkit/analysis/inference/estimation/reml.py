"""The REML optimum on the boundary of a mixed model's variance space, written out in numpy.

Why: at a variance boundary statsmodels' MixedLM stops short. Its likelihood inverts the
random-effect covariance (Woodbury with cov_re^-1), so as that covariance becomes singular
its REML log-likelihood loses precision (about 1e-6 at a smallest eigenvalue of 1e-10 of the
scale) and its optimisers stop up to ~7e-4 below the optimum. For a 2 x 2 covariance
(intercept and slope) the boundary is not the random-intercept model: it is the rank-one
covariances v v' (intercept and slope perfectly correlated), and a random-intercept refit
alone lands well below them (0.03 to 3 log-likelihood units on the null grids of
`tests/test_analysis_mixed.py`). So the reduced model here is rank <= 1, fitted from several
starts, and its likelihood never inverts the covariance:

    V_g = scale (I + Z_g L L' Z_g'),   H_g^-1 = I - Z_g L (I + L' Z_g' Z_g L)^-1 L' Z_g',
    log|H_g| = log|I + L' Z_g' Z_g L|

with the fixed effects and the scale profiled out (the REML criterion statsmodels maximises,
same constant). It needs only each group's cross-products of X, Z and y.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize


@dataclass(frozen=True)
class Crossproducts:
    """Per group: X'X, X'Z, Z'Z, X'y, Z'y, y'y; and n, p (rows and fixed effects)."""

    xx: np.ndarray
    xz: np.ndarray
    zz: np.ndarray
    xy: np.ndarray
    zy: np.ndarray
    yy: np.ndarray
    n: int
    p: int

    @classmethod
    def of(cls, model: Any) -> Crossproducts:
        """From a statsmodels MixedLM (its per-group exog, exog_re and endog)."""
        xs, zs, ys = model.exog_li, model.exog_re_li, model.endog_li
        return cls(np.array([x.T @ x for x in xs]), np.array([x.T @ z for x, z in zip(xs, zs)]),
                   np.array([z.T @ z for z in zs]), np.array([x.T @ y for x, y in zip(xs, ys)]),
                   np.array([z.T @ y for z, y in zip(zs, ys)]), np.array([y @ y for y in ys]),
                   int(sum(len(y) for y in ys)), int(xs[0].shape[1]))


@dataclass(frozen=True)
class BoundaryFit:
    """A REML fit with cov_re = scale L L' (what `fit_robustly` reports, like a statsmodels result)."""

    fe_params: pd.Series
    bse_fe: pd.Series
    cov_re: np.ndarray
    scale: float
    llf: float
    converged: bool = True


def profile(c: Crossproducts, factor: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, float]:
    """(REML log-likelihood, GLS fixed effects, (X' H^-1 X)^-1, scale) at cov_re / scale = factor factor'."""
    lz = np.einsum("gij,jk->gik", c.zz, factor)  # Z'Z L
    inner = np.eye(factor.shape[1]) + factor.T @ lz  # I + L'Z'Z L, per group
    solve = np.linalg.solve(inner, np.broadcast_to(factor.T, (len(c.zz), *factor.T.shape)))
    m = factor @ solve  # L (I + L'Z'ZL)^-1 L'
    xhx = c.xx.sum(axis=0) - np.einsum("gij,gjk,glk->il", c.xz, m, c.xz)
    xhy = c.xy.sum(axis=0) - np.einsum("gij,gjk,gk->i", c.xz, m, c.zy)
    yhy = float(c.yy.sum() - np.einsum("gj,gjk,gk->", c.zy, m, c.zy))
    beta = np.linalg.solve(xhx, xhy)
    dof = c.n - c.p
    scale = (yhy - float(xhy @ beta)) / dof
    logdet = float(np.linalg.slogdet(inner)[1].sum())
    llf = -0.5 * (dof * (1 + math.log(2 * math.pi * scale)) + logdet + float(np.linalg.slogdet(xhx)[1]))
    return llf, beta, np.linalg.inv(xhx), scale


def factor_of(cov_unscaled: np.ndarray) -> np.ndarray:
    """A square root L (L L' = `cov_unscaled`, PSD) that exists at the boundary (eigenvalues clipped at 0)."""
    values, vectors = np.linalg.eigh(np.asarray(cov_unscaled, dtype=float))
    return vectors * np.sqrt(np.clip(values, 0.0, None))


def rank_one_fit(c: Crossproducts, starts: list[np.ndarray], names: list[str]) -> tuple[BoundaryFit, np.ndarray]:
    """The best REML fit with cov_re of rank <= 1 (v v' scale, or 0): L-BFGS-B from each start
    (a vector v), Nelder-Mead from the best, and the zero covariance; with its v."""
    q = c.zz.shape[1]

    def negative(v: np.ndarray) -> float:
        value = profile(c, v.reshape(q, 1))[0]
        return -value if np.isfinite(value) else np.inf

    candidates = [np.zeros(q)]
    for start in starts:
        result = optimize.minimize(negative, start, method="L-BFGS-B", options={"ftol": 1e-14, "gtol": 1e-9, "maxfun": 400})
        candidates.append(result.x)
    best = min(candidates, key=negative)
    polished = optimize.minimize(negative, best, method="Nelder-Mead",
                                 options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 400}).x
    v = min((best, polished), key=negative)
    return _fit(c, v.reshape(q, 1), names), v


def _fit(c: Crossproducts, factor: np.ndarray, names: list[str]) -> BoundaryFit:
    llf, beta, inverse, scale = profile(c, factor)
    return BoundaryFit(pd.Series(beta, index=names), pd.Series(np.sqrt(np.diag(inverse) * scale), index=names),
                       scale * factor @ factor.T, scale, llf)


def llf_at(c: Crossproducts, cov_re: np.ndarray, scale: float) -> float:
    """The REML log-likelihood at a fit's variance parameters, precise at a singular cov_re."""
    return profile(c, factor_of(np.asarray(cov_re, dtype=float) / scale))[0]
