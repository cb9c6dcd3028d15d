"""Contrasts between variants, with inference at the unit the study samples: the task.

Two variants of one composition ran the same tasks with the same seeds, so a contrast is
paired: d = y(A, task, seed) - y(B, task, seed) over the (task, seed) pairs both scored. The
study samples tasks, and the effect of a structure varies between tasks (a task x variant
interaction), so the seeds of one task are not independent replicates of the effect. Every
p-value and interval reported here accounts for that:

- **Decision** (`p_adjusted`, `declared`, `decision`): every planned test goes through the
  plan's one graph (`colabkit.analysis.inference.decisions.decide`): the mean paired difference with its
  task-clustered (CR1) SE and a t reference on G - 1 df (G tasks), `p_unadjusted` its
  two-sided p, `p_test` what it contributes in its claimed direction, `p_adjusted` the
  procedure's adjusted p; declared when that is <= alpha. With the same seeds on every task
  the t is exactly the one-sample t test on the G task means of d. A naive SE over all pairs
  (seeds as replicates) is not reported: in a null simulation it rejected at 10% at alpha
  0.05 (`benchmarks/inference.py`).
- **Model-based estimate** (`mixed_coef`, `mixed_se`, `mixed_p_unadjusted`): a mixed model
  with a random intercept and a random treatment slope by task (`colabkit.analysis.inference.estimation.mixed`),
  fitted with several optimisers; unadjusted, it corroborates, the clustered test decides.
  Fitted for Scaffolded - Default (`mixed_families`) by default; other rows say
  `mixedlm_not_requested`.
- **Robustness test** (`p_signflip`): the studentized sign-flip test over tasks
  (`colabkit.analysis.inference.estimation.signflip`), exact when 2^G is small; unadjusted, beside the
  decision, never one.
- **Intervals**: `ci_low`/`ci_high` are unadjusted 95% intervals (`ci` says so);
  `sim_ci_low`/`sim_ci_high` are drawn at the level the procedure gave the test (`interval`),
  so they exclude 0 exactly when a two-sided test is declared.

A test whose variants or scores are absent counts as p = 1 in the procedure, so a failure never
makes another test easier, and no decision depends on which pairs or metrics are asked.
Fewer than two tasks give no interval and no p-value (`note` says why). No spread between
tasks (a constant shift, within the plan's tolerance) has no t: its p is the exact sign-flip
p, 2/2^G for a non-zero shift, and `note` flags it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd
from scipy import stats as scipy_stats

from colabkit.analysis.inference.decisions.decide import pair_differences, score_grid, study_decisions
from colabkit.analysis.inference.estimation.mixed import slope_model_contrast
from colabkit.analysis.inference.estimation.signflip import sign_flip_p
from colabkit.analysis.inference.estimation.stats import clustered_standard_error
from colabkit.analysis.inference.planning.families import DECOMPOSITION
from colabkit.analysis.inference.planning.plan import AnalysisPlan, with_plan
from colabkit.analysis.judging import with_judge_columns
from colabkit.analysis.scores import check_scores
from colabkit.errors import ColabkitError

__all__ = ["CONTRAST_COLUMNS", "DECOMPOSITION", "contrasts", "hypothesis_table", "mixed_model_contrast", "paired_differences",
           "task_contrast"]

CONTRAST_COLUMNS = ("hypothesis", "family", "composition", "metric", "a", "b", "component", "direction", "n_pairs",
                    "n_tasks", "diff", "se_task", "df", "ci", "ci_low", "ci_high", "sim_ci_low", "sim_ci_high",
                    "interval", "p_unadjusted", "p_test", "p_adjusted", "declared", "decision", "local_alpha",
                    "p_signflip", "signflip", "mixed_coef", "mixed_se", "mixed_p_unadjusted", "mixed_optimiser",
                    "mixed_flags", "note")
SHOWN_COLUMNS = ("hypothesis", "composition", "metric", "component", "n_tasks", "diff", "sim_ci_low", "sim_ci_high",
                 "p_unadjusted", "p_adjusted", "decision", "p_signflip", "mixed_p_unadjusted", "mixed_flags", "note")
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
    """The model-based estimate of A - B on both variants' sessions (`colabkit.analysis.inference.estimation.mixed`)."""
    data = scores.loc[scores["variant"].isin([a, b]), ["task_id", "variant", metric]].dropna(subset=[metric])
    data = data.assign(treated=(data["variant"] == a).astype(float), y=data[metric].astype(float))
    return slope_model_contrast(data)


NOT_REQUESTED: dict[str, object] = {"mixed_coef": math.nan, "mixed_se": math.nan, "mixed_p_unadjusted": math.nan,
                                    "mixed_optimiser": "", "mixed_flags": "mixedlm_not_requested"}


def _sign_flip(grid: pd.DataFrame, a: str, b: str, metric: str, plan: AnalysisPlan) -> dict[str, object]:
    d = pair_differences(grid, [(a, b)], metric)
    p, how = sign_flip_p(d["d"], d["task_id"], plan.sign_flips, plan.sign_flip_seed, plan.exact_flips,
                         plan.zero_tolerance)
    return {"p_signflip": p, "signflip": how}


def contrasts(scores: pd.DataFrame, pairs: Iterable[tuple[str, str, str]] = DECOMPOSITION[:1],
              metrics: Iterable[str] | None = None, plan: AnalysisPlan | None = None,
              mixed_families: Iterable[str] = ("structure", "exploratory: scaffolded-default")) -> pd.DataFrame:
    """Per composition, metric and (A, B, label) structure pair: the contrast A - B.

    The default is the study's contrast, Scaffolded - Default; `DECOMPOSITION` gives the
    diagnostic decomposition too. Every planned test is always run and decided by the plan's
    one procedure (default plan: every variant, the study's metrics), so a test's adjusted p
    and decision are the same in every table that shows it; rows are shown for the pairs and
    `metrics` (default: the plan's) asked whose variants are in the data. The mixed model is
    fitted for the rows shown of the families in `mixed_families` (module docstring). Every
    row names the plan's hash and status.
    """
    plan = plan or DEFAULT_PLAN
    metrics = list(plan.metrics if metrics is None else metrics)
    outside = sorted(set(metrics) - set(plan.metrics))
    if outside:
        raise ColabkitError(f"metric(s) {', '.join(outside)} not in the analysis plan ({', '.join(plan.metrics)})")
    table = check_scores(scores, metrics)
    table = check_scores(table, [m for m in plan.metrics if m in table.columns])
    result = study_decisions(table, plan)
    wanted, present = {(a, b) for a, b, _ in pairs}, set(table["variant"])
    keep = [(str(a).split("-")[0], str(b).split("-")[0]) in wanted and c not in ("pooled", "intersection")
            and m in metrics and a in present and b in present
            for a, b, c, m in zip(result["a"], result["b"], result["composition"], result["metric"])]
    result = result.loc[keep].reset_index(drop=True).assign(ci="95% unadjusted")
    grid = score_grid(table, metrics)
    flips = [_sign_flip(grid, a, b, m, plan) for a, b, m in zip(result["a"], result["b"], result["metric"])]
    result = pd.concat([result, pd.DataFrame(flips, columns=["p_signflip", "signflip"], index=result.index)], axis=1)
    fitted = set(mixed_families)
    mixed = [mixed_model_contrast(table, a, b, m) if f in fitted else NOT_REQUESTED
             for f, a, b, m in zip(result["family"], result["a"], result["b"], result["metric"])]
    result = pd.concat([result, pd.DataFrame(mixed, columns=list(NOT_REQUESTED), index=result.index)], axis=1)
    return with_plan(with_judge_columns(result.reindex(columns=list(CONTRAST_COLUMNS)), table), plan)


def hypothesis_table(scores: pd.DataFrame, plan: AnalysisPlan | None = None) -> pd.DataFrame:
    """The plan's hypotheses, each with its test, procedure-adjusted p and decision (pooled
    claims included): the study's claims, decided at one study-wise error rate."""
    plan = plan or DEFAULT_PLAN
    table = check_scores(scores, [m for m in plan.metrics if m in scores.columns])
    result = study_decisions(table, plan)
    return with_plan(with_judge_columns(result[result["hypothesis"] != ""].reset_index(drop=True), table), plan)
