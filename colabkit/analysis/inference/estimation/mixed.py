"""The model-based estimate of a contrast: a mixed model with a random treatment slope by task.

    y = b0 + b1 * treated + u0[task] + u1[task] * treated + e,   (u0, u1) ~ N(0, Sigma), REML

Why the slope: the grid samples tasks, and a structure helps on some tasks more than on
others (a task x variant interaction). With a random intercept alone, the seeds of a task
count as independent replicates of that task's effect and the SE of b1 is too small: in a
null simulation with a task x variant SD of 0.05 against noise 0.08, `(1 | task)` rejected at
10% at alpha 0.05. The random slope puts the between-task variance of the effect into the SE
of b1, and its p-value uses a t reference on G - 1 df (G tasks: the df of a between-task
contrast), not statsmodels' normal reference, which is too liberal with a few dozen tasks.
`benchmarks/inference.py` measures the level.

Why several optimisers and a polish: statsmodels' optimisers can stop short of the REML
optimum and still report "converged", or report "not converged" after getting further than
one that did (most often near a variance component at zero). So convergence reports are not
trusted to pick the fit: `OPTIMISERS` (BFGS, statsmodels' first choice and the default, and
L-BFGS, both with analytic gradients) are always run, each on its own; when they disagree
(REML log-likelihoods further apart than `LLF_TOLERANCE`) or either reports "not converged",
`FALLBACKS` (Powell, Nelder-Mead: derivative-free) are run too. Every attempt with a finite
likelihood is a candidate, converged or not; the one with the highest REML log-likelihood is
polished (L-BFGS restarted from it, `POLISH`) and the better of the two is reported, so no
reported fit is beaten by any fit that was tried.

Why a boundary refit: at a variance boundary statsmodels stops short (its likelihood inverts
the random-effect covariance, which is then near singular) by up to ~7e-4 REML
log-likelihood. When the reported fit has a variance component at zero, the reduced model
(cov_re of rank <= 1: for intercept and slope, the two perfectly correlated, which includes
the random intercept alone and no random effect) is fitted too, from several starts
(`colabkit.analysis.inference.estimation.reml`), and reported when its REML log-likelihood, computed
there without inverting the covariance, is higher (`mixed_optimiser` ends in "+boundary").
`flags` says what happened:
`mixedlm_default_failed` (BFGS did not report convergence), `mixedlm_default_short` (its fit
is below the reported optimum), `mixedlm_boundary` (the reported fit has a variance
component at zero: the estimate stands, the model is at the edge of its space),
`mixedlm_not_converged` / `mixedlm_too_little_data` / `mixedlm_nonfinite` (no estimate).
`mixed_optimiser` names the optimiser of the best attempt, "+polish" when the polish
improved it. `tests/test_analysis_mixed.py` checks the reported fit against an independent
REML likelihood maximised from several starts, inside and at the boundary (to 1e-6).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from colabkit.analysis.inference.estimation.reml import BoundaryFit, Crossproducts, factor_of, llf_at, rank_one_fit

OPTIMISERS = ("bfgs", "lbfgs")
"""Always run; the first (statsmodels' own first choice) is the default whose shortfalls are flagged."""
FALLBACKS = ("powell", "nm")
"""Run as well when the `OPTIMISERS` disagree or one of them does not report convergence."""
POLISH = "lbfgs"
"""Restarted from the best attempt: a gradient method finishes what another left short."""
LLF_TOLERANCE = 1e-4
"""Two optima closer than this (REML log-likelihood) are the same optimum."""
BOUNDARY_SHARE = 1e-3
"""A random-effect variance under this share of the residual variance is at zero."""


@dataclass
class RobustFit:
    """The reported fit (None when no attempt gave standard errors) and what every attempt reached."""

    result: Any
    optimiser: str | None
    llf: dict[str, float | None] = field(default_factory=dict)
    """REML log-likelihood per attempt (optimisers, then "polish"); None when it failed outright."""
    converged: dict[str, bool] = field(default_factory=dict)
    """What each attempt's optimiser reported; not used to choose."""
    flags: list[str] = field(default_factory=list)


def _finite(fit: Any) -> bool:
    return bool(np.isfinite(fit.llf) and np.isfinite(np.asarray(fit.fe_params, dtype=float)).all())


def _reportable(fit: Any) -> bool:
    bse = np.asarray(fit.bse_fe, dtype=float)
    return _finite(fit) and bool(np.isfinite(bse).all() and (bse > 0).all())


def _attempt(model: Any, name: str, start: Any = None, options: Mapping[str, Any] | None = None) -> Any | None:
    """One REML fit with optimiser `name`; None when it raised or its likelihood is not finite."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence and boundary warnings: judged by the likelihood
        try:
            fit = model.fit(reml=True, method=[name], start_params=start, **dict(options or {}))
            return fit if _finite(fit) else None
        except (np.linalg.LinAlgError, ValueError, ZeroDivisionError, OverflowError):
            return None


def fit_robustly(model: Any, optimisers: Sequence[str] = OPTIMISERS, fallbacks: Sequence[str] = FALLBACKS,
                 options: Mapping[str, Mapping[str, Any]] | None = None) -> RobustFit:
    """Fit `model` (a statsmodels MixedLM) by REML with each optimiser (and the fallbacks when
    needed), polish the best attempt and report the best (module docstring).

    `options` passes keyword arguments to one optimiser's fit (e.g. {"bfgs": {"maxiter": 2}}:
    how a test makes an optimiser stop short on purpose).
    """
    options = options or {}
    fits: dict[str, Any] = {}
    fit_record = RobustFit(None, None)

    def run(name: str, label: str, start: Any = None) -> None:
        fit = _attempt(model, name, start, options.get(label))
        fit_record.llf[label] = float(fit.llf) if fit is not None else None
        fit_record.converged[label] = bool(fit is not None and getattr(fit, "converged", False))
        if fit is not None:
            fits[label] = fit

    for name in optimisers:
        run(name, name)
    reached = [float(fits[n].llf) for n in optimisers if fit_record.converged[n]]
    if len(reached) < len(optimisers) or max(reached) - min(reached) > LLF_TOLERANCE:
        for name in fallbacks:
            run(name, name)
    if not fits:
        return _done(fit_record, None, None, ["mixedlm_not_converged"])
    best = max(fits, key=lambda n: fits[n].llf)
    run(POLISH, "polish", fits[best].params_object)
    polished = fits.get("polish")
    chosen, label = fits[best], best
    if polished is not None and polished.llf > chosen.llf - LLF_TOLERANCE / 10 and _reportable(polished):
        chosen = polished
        label = f"{best}+polish" if polished.llf > fits[best].llf + LLF_TOLERANCE else best
    if not _reportable(chosen):
        usable = [n for n in fits if _reportable(fits[n])]
        if not usable:
            return _done(fit_record, None, None, ["mixedlm_not_converged"])
        label = max(usable, key=lambda n: fits[n].llf)
        chosen = fits[label]
    flags = []
    default = optimisers[0]
    if not fit_record.converged.get(default, False):
        flags.append("mixedlm_default_failed")
    elif chosen.llf - fits[default].llf > LLF_TOLERANCE:
        flags.append("mixedlm_default_short")
    cov_re = np.atleast_2d(np.asarray(chosen.cov_re, dtype=float))
    if np.linalg.eigvalsh(cov_re).min() <= BOUNDARY_SHARE * float(chosen.scale):
        flags.append("mixedlm_boundary")
        if cov_re.shape[0] <= 2:
            boundary = _boundary_fit(model, chosen, list(fits.values()))
            fit_record.llf["boundary"] = boundary.llf
            if boundary.llf > llf_at(Crossproducts.of(model), cov_re, float(chosen.scale)) and _reportable(boundary):
                chosen, label = boundary, f"{label}+boundary"
    return _done(fit_record, chosen, label, flags)


def _boundary_fit(model: Any, chosen: Any, attempts: list[Any]) -> BoundaryFit:
    """The reduced model at the boundary (cov_re of rank <= 1, `reml`), from several starts: the
    leading direction of every attempt's covariance, intercept alone and slope alone."""
    starts = []
    for fit in [chosen, *attempts]:
        root = factor_of(np.atleast_2d(np.asarray(fit.cov_re, dtype=float)) / float(fit.scale))
        starts.append(root[:, -1])  # eigh orders ascending: the last column is the leading direction
    diagonal = np.sqrt(np.clip(np.diag(np.atleast_2d(np.asarray(chosen.cov_re, dtype=float))), 0, None)
                       / float(chosen.scale))
    starts += [np.where(np.arange(len(diagonal)) == i, diagonal[i], 0.0) for i in range(len(diagonal))]
    return rank_one_fit(Crossproducts.of(model), starts, list(model.exog_names))[0]


def _done(record: RobustFit, result: Any, optimiser: str | None, flags: list[str]) -> RobustFit:
    """`record` (what every attempt reached) with the reported fit and its flags."""
    record.result, record.optimiser, record.flags = result, optimiser, flags
    return record


def slope_model_contrast(data: pd.DataFrame) -> dict[str, object]:
    """b1 of the random-slope model on `data` (columns task_id, treated 0/1, y), its SE and p.

    Returns `mixed_coef`, `mixed_se`, `mixed_p_unadjusted` (t on G - 1 df), `mixed_optimiser`
    and `mixed_flags` (module docstring); missing values with a flag when there is no fit.
    """
    import statsmodels.formula.api as smf

    failed: dict[str, object] = {"mixed_coef": math.nan, "mixed_se": math.nan, "mixed_p_unadjusted": math.nan,
                                 "mixed_optimiser": ""}
    tasks = data["task_id"].nunique()
    if data["treated"].nunique() < 2 or tasks < 2 or data["y"].nunique() < 2:
        return failed | {"mixed_flags": "mixedlm_too_little_data"}
    model = smf.mixedlm("y ~ treated", data, groups=data["task_id"], re_formula="~treated")
    fit = fit_robustly(model)
    if fit.result is None:
        return failed | {"mixed_flags": ";".join(fit.flags)}
    coef, se = float(fit.result.fe_params["treated"]), float(fit.result.bse_fe["treated"])
    p = float(2 * scipy_stats.t.sf(abs(coef / se), tasks - 1))
    if not np.isfinite([coef, se, p]).all():
        return failed | {"mixed_flags": ";".join([*fit.flags, "mixedlm_nonfinite"])}
    return {"mixed_coef": coef, "mixed_se": se, "mixed_p_unadjusted": p, "mixed_optimiser": fit.optimiser,
            "mixed_flags": ";".join(fit.flags)}
