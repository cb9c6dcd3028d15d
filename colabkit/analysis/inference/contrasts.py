"""Contrasts between variants, with inference at the unit the study samples: the task.

Two variants of one composition ran the same tasks with the same seeds, so a contrast is
paired: d = y(A, task, seed) - y(B, task, seed) over the (task, seed) pairs both scored. The
study samples tasks, and the effect of a structure varies between tasks (a task x variant
interaction), so the seeds of one task are not independent replicates of the effect. Every
p-value and interval reported here accounts for that:

- **Confirmatory test** (`p_unadjusted`, `ci_low`/`ci_high`, Holm-adjusted `p_holm`): the mean
  paired difference with its task-clustered (CR1) SE and a t reference on G - 1 df (G tasks).
  With the same seeds on every task this is exactly the one-sample t test on the G task means
  of d, the textbook test when tasks are the sampled unit; with unequal seeds it weights
  tasks by their pairs. A naive SE over all pairs (seeds as replicates) is not reported: in a
  null simulation it rejected at 10% at alpha 0.05 (`benchmarks/inference.py`).
- **Model-based estimate** (`mixed_coef`, `mixed_se`, `mixed_p_unadjusted`): a mixed model
  with a random intercept and a random treatment slope by task (`colabkit.analysis.inference.mixed`),
  which also uses sessions without a partner, fitted with several optimisers. Not adjusted;
  it corroborates, the clustered test decides. It is fitted for the study's contrast (the
  `scaffolded-default` family) by default; `mixed_families` names others (each fit runs two
  to four optimisers, so the 84 diagnostic tests are left to the clustered test unless
  asked; their `mixed_flags` say `mixedlm_not_requested`).

- **Robustness test** (`p_signflip`, Holm-adjusted `p_signflip_holm`): the studentized
  sign-flip test over tasks (`colabkit.analysis.inference.signflip`), exact when 2^G is small.
- **Intervals**: `ci_low`/`ci_high` are unadjusted 95% intervals (their `ci` column says so);
  `sim_ci_low`/`sim_ci_high` are simultaneous over the test's planned family (Bonferroni,
  level 1 - alpha/m): the interval that matches a familywise decision.

Families come from the analysis plan (`colabkit.analysis.inference.plan`), never from the data:
a planned test whose variants or scores are absent counts as p = 1 in its family, so a test's
adjusted p is the same whatever metrics are asked and whatever variants are present. Secondary
families are significant only through the plan's gate (`gate`: "primary", or "open" / "closed"
for a secondary family, by the plan's rule). Fewer than two tasks
give no interval and no p-value (`note` says why; p = 1 in the family). No spread between
tasks (a constant shift, exact or in floating point, within the plan's tolerance) has no t:
its p is the exact sign-flip p, 2/2^G for a non-zero shift, and `note` flags it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from colabkit.analysis.inference.families import DECOMPOSITION, adjust_by_family
from colabkit.analysis.inference.mixed import slope_model_contrast
from colabkit.analysis.inference.plan import AnalysisPlan, planned_tests, with_plan
from colabkit.analysis.inference.signflip import sign_flip_p
from colabkit.analysis.inference.stats import clustered_standard_error
from colabkit.analysis.judging import with_judge_columns
from colabkit.analysis.scores import check_scores
from colabkit.errors import ColabkitError

__all__ = ["CONTRAST_COLUMNS", "DECOMPOSITION", "contrasts", "mixed_model_contrast", "paired_differences",
           "task_contrast"]

CONTRAST_COLUMNS = ("family", "composition", "metric", "a", "b", "component", "n_pairs", "n_tasks", "diff",
                    "se_task", "df", "ci", "ci_low", "ci_high", "sim_ci_low", "sim_ci_high", "p_unadjusted",
                    "p_holm", "significant_holm", "gate", "p_signflip", "p_signflip_holm", "signflip", "mixed_coef", "mixed_se", "mixed_p_unadjusted", "mixed_optimiser", "mixed_flags", "note")
SHOWN_COLUMNS = ("composition", "metric", "component", "n_tasks", "diff", "sim_ci_low", "sim_ci_high", "p_unadjusted",
                 "p_holm", "significant_holm", "p_signflip", "p_signflip_holm", "gate", "mixed_p_unadjusted",
                 "mixed_flags", "note")
"""The columns a notebook displays (the CSV keeps them all)."""
DEFAULT_PLAN = AnalysisPlan()
"""Every variant, the study's metrics: what a table made without an experiment's plan uses."""


def paired_differences(scores: pd.DataFrame, a: str, b: str, metric: str) -> pd.DataFrame:
    """task_id, seed and d = A - B for every (task, seed) both variants scored."""
    keep = ["task_id", "seed", metric]
    left = scores.loc[scores["variant"] == a, keep].dropna(subset=[metric])
    right = scores.loc[scores["variant"] == b, keep].dropna(subset=[metric])
    pairs = left.merge(right, on=["task_id", "seed"], suffixes=("_a", "_b"), validate="one_to_one")
    return pairs.assign(d=pairs[f"{metric}_a"] - pairs[f"{metric}_b"])[["task_id", "seed", "d"]]


def task_contrast(scores: pd.DataFrame, a: str, b: str, metric: str, plan: AnalysisPlan | None = None,
                  flips: int | None = None) -> dict[str, object]:
    """The confirmatory test of A - B: mean paired difference, task-clustered SE, t on G - 1 df,
    and the sign-flip test beside it (`flips` random flips, default the plan's)."""
    plan = plan or DEFAULT_PLAN
    d = paired_differences(scores, a, b, metric)
    n, tasks = len(d), d["task_id"].nunique()
    mean = float(d["d"].mean()) if n else math.nan
    se = clustered_standard_error(d["d"], d["task_id"])
    p_flip, how = sign_flip_p(d["d"], d["task_id"], flips or plan.sign_flips, plan.sign_flip_seed,
                              plan.exact_flips, plan.zero_tolerance)
    out: dict[str, object] = {"n_pairs": n, "n_tasks": tasks, "diff": mean, "se_task": se,
                              "df": tasks - 1 if tasks >= 2 else math.nan,
                              "ci_low": math.nan, "ci_high": math.nan, "p_unadjusted": math.nan,
                              "p_signflip": p_flip, "signflip": how, "note": ""}
    if tasks < 2:
        return out | {"note": f"no interval: {tasks} task(s) with pairs"}
    if how == "zero spread":
        return out | {"p_unadjusted": p_flip, "se_task": 0.0,
                      "note": "zero spread between tasks: no t; p is the exact sign-flip p"}
    t_crit = float(scipy_stats.t.ppf(0.975, tasks - 1))
    return out | {"ci_low": mean - t_crit * se, "ci_high": mean + t_crit * se,
                  "p_unadjusted": float(2 * scipy_stats.t.sf(abs(mean / se), tasks - 1))}


def mixed_model_contrast(scores: pd.DataFrame, a: str, b: str, metric: str) -> dict[str, object]:
    """The model-based estimate of A - B on both variants' sessions (`colabkit.analysis.inference.mixed`)."""
    data = scores.loc[scores["variant"].isin([a, b]), ["task_id", "variant", metric]].dropna(subset=[metric])
    data = data.assign(treated=(data["variant"] == a).astype(float), y=data[metric].astype(float))
    return slope_model_contrast(data)


NOT_REQUESTED: dict[str, object] = {"mixed_coef": math.nan, "mixed_se": math.nan, "mixed_p_unadjusted": math.nan,
                                    "mixed_optimiser": "", "mixed_flags": "mixedlm_not_requested"}
TASK_COLUMNS = ("n_pairs", "n_tasks", "diff", "se_task", "df", "ci_low", "ci_high", "p_unadjusted", "p_signflip",
                "signflip", "note")
ABSENT = "not in the data: counts as p = 1 in its family"


def _planned_results(table: pd.DataFrame, planned: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Every planned test of the families asked: run where its variants and metric are in the data."""
    present, rows = set(table["variant"]), []
    for test in planned.to_dict("records"):
        ran = test["a"] in present and test["b"] in present and test["metric"] in table.columns
        rows.append(test | (task_contrast(table, test["a"], test["b"], test["metric"], plan) if ran
                            else {"note": ABSENT}))
    return pd.DataFrame(rows).reindex(columns=[*planned.columns, *TASK_COLUMNS])


def _decide(result: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Holm per family (t and sign-flip), the gate, and simultaneous intervals per family."""
    result["p_holm"], result["significant_holm"] = adjust_by_family(result, "p_unadjusted", plan.alpha)
    result["p_signflip_holm"], _ = adjust_by_family(result, "p_signflip", plan.alpha)
    primary = result["significant_holm"][result["family"] == "primary"]
    opened = bool(len(primary)) and bool(primary.all() if plan.gate == "all" else primary.any())
    secondary = result["family"] != "primary"
    result["gate"] = np.where(secondary, "open" if opened else "closed", "primary")
    result.loc[secondary, "significant_holm"] = result.loc[secondary, "significant_holm"] & opened
    size = result.groupby("family")["family"].transform("size").to_numpy(float)
    df, se, diff, low = (result[c].astype("float64").to_numpy() for c in ("df", "se_task", "diff", "ci_low"))
    with np.errstate(invalid="ignore"):
        half = np.where(np.isnan(low), np.nan, scipy_stats.t.ppf(1 - plan.alpha / (2 * size), df) * se)
    result["sim_ci_low"], result["sim_ci_high"] = diff - half, diff + half
    result["ci"] = "95% unadjusted"
    return result


def contrasts(scores: pd.DataFrame, pairs: Iterable[tuple[str, str, str]] = DECOMPOSITION[:1],
              metrics: Iterable[str] | None = None, plan: AnalysisPlan | None = None,
              mixed_families: Iterable[str] = ("primary", "scaffolded-default")) -> pd.DataFrame:
    """Per composition, metric and (A, B, label) structure pair: the contrast A - B.

    The default is the study's contrast, Scaffolded - Default; `DECOMPOSITION` gives the
    diagnostic decomposition too. Every family touched is tested whole as `plan` fixes it
    (default: every variant, the study's metrics), so a test's adjusted p is the same in every
    table that shows it; rows are shown for the pairs and `metrics` (default: the plan's)
    asked whose variants are in the data. The mixed model is fitted for the rows shown of the
    families in `mixed_families` (module docstring). Every row names the plan's hash.
    """
    plan = plan or DEFAULT_PLAN
    metrics = list(plan.metrics if metrics is None else metrics)
    outside = sorted(set(metrics) - set(plan.metrics))
    if outside:
        raise ColabkitError(f"metric(s) {', '.join(outside)} not in the analysis plan ({', '.join(plan.metrics)})")
    table = check_scores(scores, metrics)
    table = check_scores(table, [m for m in plan.metrics if m in table.columns])
    wanted = {(a, b) for a, b, _ in pairs}
    planned = planned_tests(plan)
    structures = list(zip(planned["a"].str.split("-").str[0], planned["b"].str.split("-").str[0]))
    families = set(planned.loc[[s in wanted for s in structures], "family"])
    result = _decide(_planned_results(table, planned[planned["family"].isin(families)], plan)
                     .reset_index(drop=True), plan)
    present = set(table["variant"])
    keep = [(a.split("-")[0], b.split("-")[0]) in wanted and m in metrics and a in present and b in present
            for a, b, m in zip(result["a"], result["b"], result["metric"])]
    result = result.loc[keep].reset_index(drop=True)
    fitted = set(mixed_families)
    mixed = [mixed_model_contrast(table, a, b, m) if f in fitted else NOT_REQUESTED
             for f, a, b, m in zip(result["family"], result["a"], result["b"], result["metric"])]
    result = pd.concat([result, pd.DataFrame(mixed, columns=list(NOT_REQUESTED), index=result.index)], axis=1)
    return with_plan(with_judge_columns(result.reindex(columns=list(CONTRAST_COLUMNS)), table), plan)
