"""The random-slope mixed model reports its REML optimum: checked against an independent REML
likelihood (written out here in numpy, maximised from several starts with scipy), on data of
the kind the null simulation draws with the task x variant variance near zero, on data that
sit at the variance boundary (to 1e-6, fixed effects too, from several optimisers' starts),
and on a fit stopped short on purpose (so the premise holds whatever optimiser statsmodels
ships)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import optimize

from colabkit.analysis.inference.estimation.mixed import LLF_TOLERANCE, fit_robustly, slope_model_contrast

BOUNDARY_TOLERANCE = 1e-6


def by_task(data: pd.DataFrame) -> list[tuple[np.ndarray, np.ndarray]]:
    """(X = Z = [1, treated], y) per task."""
    return [(np.column_stack([np.ones(len(rows)), rows["treated"].to_numpy(float)]), rows["y"].to_numpy(float))
            for _, rows in data.groupby("task_id", sort=True)]


def reml_log_likelihood(tasks: list[tuple[np.ndarray, np.ndarray]], cov_re: np.ndarray, scale: float) -> float:
    """The REML log-likelihood of y = X b + Z u + e with V_g = Z_g cov_re Z_g' + scale I per
    task and b profiled out: -1/2 [(n - p) log 2 pi + log|V| + log|X' V^-1 X| + r' V^-1 r]."""
    n, p = sum(len(y) for _, y in tasks), 2
    xvx, xvy, logdet, parts = np.zeros((p, p)), np.zeros(p), 0.0, []
    for x, y in tasks:
        v = x @ cov_re @ x.T + scale * np.eye(len(y))
        logdet += np.linalg.slogdet(v)[1]
        vi = np.linalg.inv(v)
        xvx, xvy = xvx + x.T @ vi @ x, xvy + x.T @ vi @ y
        parts.append((x, y, vi))
    b = np.linalg.solve(xvx, xvy)
    quad = sum(float((y - x @ b) @ vi @ (y - x @ b)) for x, y, vi in parts)
    return float(-0.5 * ((n - p) * np.log(2 * np.pi) + logdet + np.linalg.slogdet(xvx)[1] + quad))


def best_reml(data: pd.DataFrame) -> float:
    """The highest REML log-likelihood found from several starts (cov_re = L L', log SD):
    L-BFGS-B from each, Nelder-Mead from the best."""
    sd, tasks = float(data["y"].std()), by_task(data)

    def negative(theta: np.ndarray) -> float:
        lower = np.array([[theta[0], 0.0], [theta[1], theta[2]]])
        return -reml_log_likelihood(tasks, lower @ lower.T, float(np.exp(2 * theta[3])))

    starts = [np.array([a * sd, 0.0, b * sd, np.log(sd / 2)]) for a, b in ((1, 0), (1, 0.5), (0.2, 0.2), (0, 1))]
    first = min((optimize.minimize(negative, start, method="L-BFGS-B") for start in starts), key=lambda r: r.fun)
    final = optimize.minimize(negative, first.x, method="Nelder-Mead",
                              options={"xatol": 1e-9, "fatol": 1e-11, "maxiter": 2000})
    return float(max(-first.fun, -final.fun))


def reported_llf(data: pd.DataFrame, fit) -> float:
    """The independent likelihood at a statsmodels fit's variance parameters."""
    return reml_log_likelihood(by_task(data), np.asarray(fit.cov_re, dtype=float), float(fit.scale))


def held_out_grid(seed: int, interaction_sd: float) -> pd.DataFrame:
    """One contrast as `benchmarks/inference.py` draws it: 38 tasks x 3 seeds x 2 arms, task SD
    0.15, noise SD 0.08, 5% missing; the task x variant SD given (near zero: near the boundary)."""
    rng = np.random.default_rng(seed)
    task = rng.normal(0, 0.15, 38)[:, None, None]
    interaction = rng.normal(0, interaction_sd, (38, 2))[:, :, None]
    y = 0.5 + task + interaction + rng.normal(0, 0.08, (38, 2, 3))
    t, arm, _ = np.meshgrid(np.arange(38), np.arange(2), np.arange(3), indexing="ij")
    data = pd.DataFrame({"task_id": [f"t{i:02d}" for i in t.ravel()], "treated": arm.ravel().astype(float),
                         "y": y.ravel()})
    return data[rng.random(len(data)) >= 0.05].reset_index(drop=True)


def model_of(data: pd.DataFrame):
    return smf.mixedlm("y ~ treated", data, groups=data["task_id"], re_formula="~treated")


def test_the_independent_likelihood_is_the_one_statsmodels_maximises():
    data = held_out_grid(0, 0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = model_of(data).fit(reml=True, method=["powell"])
    assert reported_llf(data, fit) == pytest.approx(float(fit.llf), abs=1e-5)


@pytest.mark.parametrize(("seed", "interaction_sd"), [(1, 0.0), (2, 0.005), (3, 0.01), (17, 0.0), (17, 0.01), (5, 0.05)])
def test_the_reported_fit_is_at_the_best_reml_optimum_near_the_boundary(seed, interaction_sd):
    data = held_out_grid(seed, interaction_sd)
    fit = fit_robustly(model_of(data))
    assert reported_llf(data, fit.result) >= best_reml(data) - LLF_TOLERANCE
    assert fit.result.llf >= max(v for v in fit.llf.values() if v is not None) - LLF_TOLERANCE
    smallest = np.linalg.eigvalsh(np.asarray(fit.result.cov_re, dtype=float)).min()
    assert ("mixedlm_boundary" in fit.flags) == (smallest <= 1e-3 * float(fit.result.scale))


def test_a_fit_stopped_short_on_purpose_is_reported_at_the_optimum():
    data = held_out_grid(6, 0.01)
    model = model_of(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        short = model.fit(reml=True, method=["bfgs"], maxiter=2)  # the premise, made here
    best = best_reml(data)
    assert short.llf < best - 0.01
    # the short optimiser alone, no fallbacks: the polish must finish its work
    alone = fit_robustly(model, optimisers=("bfgs",), fallbacks=(), options={"bfgs": {"maxiter": 2}})
    assert alone.llf["bfgs"] == pytest.approx(float(short.llf))
    assert alone.result.llf >= best - LLF_TOLERANCE and alone.optimiser == "bfgs+polish"
    assert "mixedlm_default_failed" in alone.flags or "mixedlm_default_short" in alone.flags
    # beside a second optimiser: the better fit is kept whatever either reports about convergence
    both = fit_robustly(model, options={"bfgs": {"maxiter": 2}})
    assert both.result.llf >= best - LLF_TOLERANCE
    assert {"mixedlm_default_failed", "mixedlm_default_short"} & set(both.flags)


def test_the_reported_contrast_is_the_best_fits():
    data = held_out_grid(7, 0.01)
    fit = fit_robustly(model_of(data))
    reported = slope_model_contrast(data)
    assert reported["mixed_optimiser"] == fit.optimiser and reported["mixed_flags"] == ";".join(fit.flags)
    assert reported["mixed_se"] == pytest.approx(float(fit.result.bse_fe["treated"]))


def profile_reml(tasks: list[tuple[np.ndarray, np.ndarray]], cov_unscaled: np.ndarray) -> tuple[float, np.ndarray]:
    """(REML log-likelihood, GLS fixed effects) with the scale profiled out: V_g = s (Z C Z' + I)
    for C = `cov_unscaled`, s = r' H^-1 r / (n - p); each V_g inverted whole (no Woodbury)."""
    n, p = sum(len(y) for _, y in tasks), 2
    xhx, xhy, logdet, parts = np.zeros((p, p)), np.zeros(p), 0.0, []
    for x, y in tasks:
        h = x @ cov_unscaled @ x.T + np.eye(len(y))
        logdet += np.linalg.slogdet(h)[1]
        hi = np.linalg.inv(h)
        xhx, xhy = xhx + x.T @ hi @ x, xhy + x.T @ hi @ y
        parts.append((x, y, hi))
    b = np.linalg.solve(xhx, xhy)
    scale = sum(float((y - x @ b) @ hi @ (y - x @ b)) for x, y, hi in parts) / (n - p)
    return float(-0.5 * ((n - p) * (1 + np.log(2 * np.pi * scale)) + logdet + np.linalg.slogdet(xhx)[1])), b


def random_intercept_optimum(tasks: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """The random-intercept model's REML optimum: one ratio (intercept variance / scale), bounded 1-D search."""
    result = optimize.minimize_scalar(lambda t: -profile_reml(tasks, np.diag([np.exp(t), 0.0]))[0],
                                      bounds=(-20, 8), method="bounded", options={"xatol": 1e-10})
    return max(-float(result.fun), profile_reml(tasks, np.zeros((2, 2)))[0])


def boundary_optimum(tasks: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float, np.ndarray]:
    """The REML optimum over the boundary (C = v v', rank <= 1) from six starts (L-BFGS-B, then
    Nelder-Mead from the best), and the zero covariance; with the fixed effects there."""
    def negative(v: np.ndarray) -> float:
        return -profile_reml(tasks, np.outer(v, v))[0]

    starts = [np.array(v) for v in ((1, 0), (1, 0.3), (1, -0.3), (0, 1), (0.3, 0.3), (3, 0))]
    first = min((optimize.minimize(negative, v, method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-10})
                 for v in starts), key=lambda r: r.fun)
    final = optimize.minimize(negative, first.x, method="Nelder-Mead",
                              options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000})
    v = min((np.zeros(2), first.x, final.x), key=negative)
    return profile_reml(tasks, np.outer(v, v))


@pytest.mark.parametrize("seed", [0, 2])
def test_a_boundary_fit_is_at_the_reml_optimum_from_several_starts(seed):
    data = held_out_grid(seed, 0.0)  # no task x variant effect: the slope variance's optimum sits at zero
    tasks = by_task(data)
    optimum, fixed = boundary_optimum(tasks)
    # the premise: the data sit at the boundary (no interior point is higher) and the boundary is
    # not the random intercept alone (which is lower: a refit of it would not reach the optimum)
    assert best_reml(data) <= optimum + BOUNDARY_TOLERANCE
    assert random_intercept_optimum(tasks) < optimum - 1e-3
    starts = [{}, {"optimisers": ("lbfgs",), "fallbacks": ()}, {"optimisers": ("powell",), "fallbacks": ()}]
    for start in starts[: 3 if seed == 0 else 1]:
        fit = fit_robustly(model_of(data), **start)
        assert "mixedlm_boundary" in fit.flags
        reached = reported_llf(data, fit.result)
        assert reached >= optimum - BOUNDARY_TOLERANCE, (start, optimum - reached)
        assert float(fit.result.llf) == pytest.approx(reached, abs=1e-8)  # the reported llf is the true one
        np.testing.assert_allclose(np.asarray(fit.result.fe_params, dtype=float), fixed, atol=1e-5)


def test_an_interior_fit_is_not_replaced_by_the_boundary():
    data = held_out_grid(5, 0.05)
    fit = fit_robustly(model_of(data))
    assert "mixedlm_boundary" not in fit.flags and "boundary" not in fit.llf
    assert not fit.optimiser.endswith("+boundary")
