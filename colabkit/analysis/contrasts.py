"""Contrasts between variants: paired differences, a mixed model, a correction, and power.

Two variants of one composition ran the same tasks with the same seeds, so the natural
contrast is paired: d_i = y(A, task, seed) - y(B, task, seed) over the (task, seed) pairs
where both have a value, with SE = sd(d)/sqrt(n) and a t test on n-1 df. The confirmatory
estimate is a linear mixed model on both variants' sessions, `metric ~ treated` with a random
intercept per task (statsmodels MixedLM), which uses unpaired sessions too and models the
task effect instead of differencing it away. A model that fails or does not converge gives a
NaN estimate and a flag, never a number. The family of tests (every metric x composition x
contrast) is corrected with `statsmodels.stats.multitest.multipletests` (Holm by default).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestIndPower, TTestPower

from colabkit.analysis.scores import COMPOSITIONS, RATE_METRICS, STUDY_METRICS, check_scores
from colabkit.analysis.stats import clustered_standard_error

# (A, B, what A - B isolates), per composition: the diagnostic decomposition of Scaffolded.
DECOMPOSITION = (
    ("scaffolded", "default", "memory + self-chosen gates (total)"),
    ("memory", "default", "memory alone"),
    ("preassigned", "default", "externally assigned gates alone"),
    ("scaffolded", "memory", "self-chosen gates, given memory"),
    ("scaffolded", "preassigned", "self-chosen vs assigned gates"),
)
# Beyond the study (experiments/dynamic.yaml): Dynamic differs from Scaffolded only in its living
# memory. Its own family of tests; skipped, like any pair, where a variant is absent.
DYNAMIC_CONTRASTS = (("dynamic", "scaffolded", "living vs frozen memory"),)
CONTRAST_COLUMNS = ("composition", "metric", "a", "b", "component", "n_pairs", "diff", "se", "se_task",
                    "ci_low", "ci_high", "p_paired", "mixed_coef", "mixed_se", "mixed_p", "mixed_flags",
                    "p_adjusted", "significant")


def paired_differences(scores: pd.DataFrame, a: str, b: str, metric: str) -> pd.DataFrame:
    """task_id, seed and d = A - B for every (task, seed) both variants scored."""
    keep = ["task_id", "seed", metric]
    left = scores.loc[scores["variant"] == a, keep].dropna(subset=[metric])
    right = scores.loc[scores["variant"] == b, keep].dropna(subset=[metric])
    pairs = left.merge(right, on=["task_id", "seed"], suffixes=("_a", "_b"), validate="one_to_one")
    return pairs.assign(d=pairs[f"{metric}_a"] - pairs[f"{metric}_b"])[["task_id", "seed", "d"]]


def paired_contrast(scores: pd.DataFrame, a: str, b: str, metric: str) -> dict[str, float]:
    """Mean paired difference A - B, its SE (and task-clustered SE), a 95% CI and the t-test p."""
    d = paired_differences(scores, a, b, metric)
    n = len(d)
    mean = float(d["d"].mean()) if n else math.nan
    se = float(d["d"].std(ddof=1) / math.sqrt(n)) if n >= 2 else math.nan
    if n >= 2 and se > 0:
        t_crit = float(scipy_stats.t.ppf(0.975, n - 1))
        p = float(2 * scipy_stats.t.sf(abs(mean / se), n - 1))
        low, high = mean - t_crit * se, mean + t_crit * se
    else:  # no spread (or no pairs): no test to report
        p = low = high = math.nan
    return {"n_pairs": n, "diff": mean, "se": se, "se_task": clustered_standard_error(d["d"], d["task_id"]),
            "ci_low": low, "ci_high": high, "p_paired": p}


BOUNDARY_SHARE = 1e-3  # a task variance under this share of the residual variance is zero


def mixed_model_contrast(scores: pd.DataFrame, a: str, b: str, metric: str) -> dict[str, object]:
    """The coefficient of "variant is A" in `metric ~ treated + (1 | task)`, with SE and p.

    `mixed_flags` says how far to trust it: "" a clean fit; `mixedlm_warned` converged after
    statsmodels warned (e.g. it retried another optimiser); `mixedlm_boundary` the task
    variance is zero, so the pooled estimate of `metric ~ treated` is reported; missing values
    with `mixedlm_not_converged`, `mixedlm_nonfinite`, `mixedlm_failed: ...` or
    `mixedlm_too_little_data`.
    """
    import statsmodels.formula.api as smf
    from statsmodels.tools.sm_exceptions import ConvergenceWarning

    data = scores.loc[scores["variant"].isin([a, b]), ["task_id", "variant", metric]].dropna(subset=[metric])
    data = data.assign(treated=(data["variant"] == a).astype(float), y=data[metric])
    failed = {"mixed_coef": math.nan, "mixed_se": math.nan, "mixed_p": math.nan}
    if data["treated"].nunique() < 2 or data["task_id"].nunique() < 2 or data["y"].nunique() < 2:
        return failed | {"mixed_flags": "mixedlm_too_little_data"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = smf.mixedlm("y ~ treated", data, groups=data["task_id"]).fit(reml=True)
        except (np.linalg.LinAlgError, ValueError) as exc:
            return failed | {"mixed_flags": f"mixedlm_failed: {type(exc).__name__}"}
    warned = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    task_var, scale = float(np.asarray(fit.cov_re).ravel()[0]), float(fit.scale)
    if np.isfinite(task_var) and task_var <= BOUNDARY_SHARE * scale:
        # The task variance is estimated at zero, the boundary of its space, where statsmodels'
        # optimisers often stop "not converged". The model is then y ~ treated without a task
        # term, so the pooled estimate is reported and flagged (lme4's "singular fit").
        pooled = smf.ols("y ~ treated", data).fit()
        coef, se, p = float(pooled.params["treated"]), float(pooled.bse["treated"]), float(pooled.pvalues["treated"])
        flags = ["mixedlm_boundary"]
    elif not getattr(fit, "converged", False):
        return failed | {"mixed_flags": "mixedlm_not_converged"}
    else:
        coef, se, p = float(fit.params["treated"]), float(fit.bse["treated"]), float(fit.pvalues["treated"])
        flags = ["mixedlm_warned"] if warned else []
    if not np.isfinite([coef, se, p]).all():
        return failed | {"mixed_flags": ";".join([*flags, "mixedlm_nonfinite"])}
    return {"mixed_coef": coef, "mixed_se": se, "mixed_p": p, "mixed_flags": ";".join(flags)}


def correct(p_values: Sequence[float], method: str = "holm", alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Adjusted p-values and rejections; NaN p-values stay NaN and are not in the family."""
    p = np.asarray(p_values, dtype="float64")
    adjusted, reject = np.full(p.shape, np.nan), np.zeros(p.shape, dtype=bool)
    present = ~np.isnan(p)
    if present.any():
        reject[present], adjusted[present], _, _ = multipletests(p[present], alpha=alpha, method=method)
    return adjusted, reject


def contrasts(scores: pd.DataFrame, pairs: Iterable[tuple[str, str, str]] = DECOMPOSITION[:1],
              metrics: Iterable[str] = STUDY_METRICS, method: str = "holm", alpha: float = 0.05) -> pd.DataFrame:
    """Per composition, metric and (A, B, label) structure pair: paired and mixed-model A - B.

    The default is the study's contrast, Scaffolded - Default; `DECOMPOSITION` gives the
    diagnostic decomposition. Pairs whose variants are absent are skipped. The mixed model's
    p-values are corrected over all rows together.
    """
    metrics, pairs = list(metrics), list(pairs)
    table = check_scores(scores, metrics)
    present = set(table["variant"])
    rows = []
    for composition in COMPOSITIONS[1:]:
        for structure_a, structure_b, label in pairs:
            a, b = f"{structure_a}-{composition}", f"{structure_b}-{composition}"
            if a not in present or b not in present:
                continue
            for metric in metrics:
                rows.append({"composition": composition, "metric": metric, "a": a, "b": b, "component": label,
                             **paired_contrast(table, a, b, metric), **mixed_model_contrast(table, a, b, metric)})
    result = pd.DataFrame(rows, columns=list(CONTRAST_COLUMNS[:-2]))
    result["p_adjusted"], result["significant"] = correct(result["mixed_p"].to_numpy(), method, alpha)
    return result


def pooled_sd(scores: pd.DataFrame, metric: str) -> float:
    """Within-variant SD pooled over variants: sqrt(sum (n_v - 1) s_v^2 / sum (n_v - 1))."""
    groups = scores.dropna(subset=[metric]).groupby("variant")[metric]
    dof = groups.count() - 1
    dof = dof[dof > 0]
    if dof.empty:
        return math.nan
    variances = groups.var(ddof=1)[dof.index]
    return float(math.sqrt(float((dof * variances).sum()) / float(dof.sum())))


def _needed(solver: TTestIndPower | TTestPower, sd: float, delta: float, alpha: float, power: float) -> float:
    if not np.isfinite(sd) or sd <= 0:
        return math.nan
    return float(math.ceil(solver.solve_power(effect_size=delta / sd, alpha=alpha, power=power,
                                              alternative="two-sided")))


def power_table(scores: pd.DataFrame, metrics: Iterable[str] = RATE_METRICS, delta: float = 0.05,
                alpha: float = 0.05, power: float = 0.8) -> pd.DataFrame:
    """Sessions per variant needed to detect a difference `delta`, from the observed variance.

    `n_per_variant`: two independent groups with the pooled within-variant SD (two-sided t
    test). `n_pairs`: the paired design the grid actually has, from the SD of the Scaffolded -
    Default paired differences (pooled over compositions). Also the sessions per variant now.
    """
    metrics = list(metrics)
    table = check_scores(scores, metrics)
    rows = []
    for metric in metrics:
        sd = pooled_sd(table, metric)
        diffs = [paired_differences(table, f"scaffolded-{c}", f"default-{c}", metric).assign(variant=c)
                 for c in COMPOSITIONS[1:]]
        paired = pd.concat(diffs, ignore_index=True).rename(columns={"d": metric})
        sd_diff = pooled_sd(paired, metric)
        rows.append({"metric": metric, "delta": delta, "sd": sd, "effect_size": delta / sd if sd else math.nan,
                     "n_per_variant": _needed(TTestIndPower(), sd, delta, alpha, power),
                     "sd_paired_diff": sd_diff, "n_pairs": _needed(TTestPower(), sd_diff, delta, alpha, power),
                     "sessions_per_variant_now": float(table.dropna(subset=[metric]).groupby("variant").size().median())})
    return pd.DataFrame(rows)
