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

Why several optimisers: statsmodels' optimisers can stop short of the REML optimum, or stop
"not converged" on an easy fit whose variance component sits at zero. `OPTIMISERS` (L-BFGS,
the default, and BFGS, both with analytic gradients) are always run, each on its own; when
they disagree (REML log-likelihoods further apart than `LLF_TOLERANCE`) or either fails,
`FALLBACKS` (Powell, Nelder-Mead: derivative-free) are run too. The fit with the highest REML
log-likelihood among the converged ones is reported, so no reported fit is beaten by another
optimiser that was tried. `flags` says what happened: `mixedlm_default_failed` (L-BFGS did
not converge), `mixedlm_default_short` (it converged below the best optimum),
`mixedlm_boundary` (a variance component is estimated at zero: the estimate stands, the
model is at the edge of its space), `mixedlm_not_converged` / `mixedlm_too_little_data` /
`mixedlm_nonfinite` (no estimate). `mixed_optimiser` names the optimiser reported.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

OPTIMISERS = ("bfgs", "lbfgs")
"""Always run; the first (statsmodels' own first choice) is the default whose shortfalls are flagged."""
FALLBACKS = ("powell", "nm")
"""Run as well when the `OPTIMISERS` disagree or one of them fails."""
LLF_TOLERANCE = 1e-4
"""Two optima closer than this (REML log-likelihood) are the same optimum."""
BOUNDARY_SHARE = 1e-3
"""A random-effect variance under this share of the residual variance is at zero."""


@dataclass
class RobustFit:
    """The best converged fit (None when none converged) and what every optimiser reached."""

    result: Any
    optimiser: str | None
    llf: dict[str, float | None] = field(default_factory=dict)
    """REML log-likelihood per optimiser; None when it failed or did not converge."""
    flags: list[str] = field(default_factory=list)


def _usable(fit: Any) -> bool:
    fe, bse = np.asarray(fit.fe_params, dtype=float), np.asarray(fit.bse_fe, dtype=float)
    return bool(getattr(fit, "converged", False) and np.isfinite(fit.llf) and np.isfinite(fe).all()
                and np.isfinite(bse).all() and (bse > 0).all())


def _fit(model: Any, name: str) -> Any | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence and boundary warnings: judged by `_usable`
        try:
            fit = model.fit(reml=True, method=[name])
            return fit if _usable(fit) else None
        except (np.linalg.LinAlgError, ValueError, ZeroDivisionError, OverflowError):
            return None


def fit_robustly(model: Any, optimisers: Sequence[str] = OPTIMISERS,
                 fallbacks: Sequence[str] = FALLBACKS) -> RobustFit:
    """Fit `model` (a statsmodels MixedLM) by REML with each optimiser (and the fallbacks when
    needed, module docstring); keep the best converged fit."""
    fits: dict[str, Any] = {}
    llf: dict[str, float | None] = {}
    for name in optimisers:
        fit = _fit(model, name)
        llf[name] = float(fit.llf) if fit is not None else None
        if fit is not None:
            fits[name] = fit
    reached = [v for v in llf.values() if v is not None]
    if len(reached) < len(optimisers) or max(reached) - min(reached) > LLF_TOLERANCE:
        for name in fallbacks:
            fit = _fit(model, name)
            llf[name] = float(fit.llf) if fit is not None else None
            if fit is not None:
                fits[name] = fit
    if not fits:
        return RobustFit(None, None, llf, ["mixedlm_not_converged"])
    best = max(fits, key=lambda n: fits[n].llf)
    flags = []
    default = optimisers[0]
    if llf.get(default) is None:
        flags.append("mixedlm_default_failed")
    elif fits[best].llf - fits[default].llf > LLF_TOLERANCE:
        flags.append("mixedlm_default_short")
    else:
        best = default  # the default reached the optimum: report it
    best_fit = fits[best]
    cov_re = np.atleast_2d(np.asarray(best_fit.cov_re, dtype=float))
    if np.linalg.eigvalsh(cov_re).min() <= BOUNDARY_SHARE * float(best_fit.scale):
        flags.append("mixedlm_boundary")
    return RobustFit(best_fit, best, llf, flags)


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
