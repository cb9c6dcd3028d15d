"""Session-end rules side by side: does a result depend on when budgets end a session?

Co-Gym, the study's substrate, ends a session when either side has spent its budget
(`either_side`, the suite's default); `all_sides` runs until every side has. An experiment
with both arms (`experiments/sensitivity.yaml`) has every (variant, task, seed) under both,
told apart by the score table's `termination` column (read from each session's spec). The
study's tables take one rule at a time (`by_termination`); `termination_contrast` pairs the
same variant, task and seed across the two rules (how far each variant's level moves: a
description). Whether a *result* depends on the rule is a different question, answered by
`termination_interaction`: the rule x variant interaction of every planned contrast with an
equivalence test (TOST) against the plan's margins.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd
from scipy import stats as scipy_stats

from colabkit.analysis.inference.contrasts import paired_differences, task_contrast
from colabkit.analysis.inference.families import DECOMPOSITION, holm
from colabkit.analysis.inference.plan import AnalysisPlan, with_plan
from colabkit.analysis.inference.stats import clustered_standard_error
from colabkit.analysis.scores import COMPOSITIONS, STUDY_METRICS, check_scores, variant_order

COLUMN = "termination"
PRIMARY = "either_side"  # the substrate's rule, the suite's default
ALTERNATIVE = "all_sides"


def termination_rules(scores: pd.DataFrame) -> list[str]:
    """The rules present in the table, the default first ([] for a table without the column)."""
    if COLUMN not in scores.columns:
        return []
    present = set(scores[COLUMN].dropna())
    return [r for r in (PRIMARY, ALTERNATIVE) if r in present] + sorted(present - {PRIMARY, ALTERNATIVE})


def by_termination(scores: pd.DataFrame, rule: str = PRIMARY) -> pd.DataFrame:
    """The sessions run under `rule`, or the table as it is when it holds one rule only."""
    if len(termination_rules(scores)) < 2:
        return scores
    return scores[scores[COLUMN] == rule]


def termination_contrast(scores: pd.DataFrame, metrics: Iterable[str] = STUDY_METRICS,
                         plan: AnalysisPlan | None = None) -> pd.DataFrame:
    """Per variant and metric: mean under each rule and the paired difference all_sides - either_side.

    Pairs are the same (task, seed) under both rules, tested at the task level like every
    contrast (`task_contrast`: task-clustered SE, t on tasks - 1 df); p-values are Holm-adjusted
    over the whole table, its own family ("does any result depend on the rule?"). Empty
    without both rules.
    """
    metrics = list(metrics)
    columns = ["variant", "metric", f"mean_{PRIMARY}", f"mean_{ALTERNATIVE}", "n_pairs", "n_tasks", "diff",
               "se_task", "ci_low", "ci_high", "p_unadjusted", "p_holm"]
    if not {PRIMARY, ALTERNATIVE} <= set(termination_rules(scores)):
        return with_plan(pd.DataFrame(columns=columns), plan or AnalysisPlan())
    table = check_scores(scores, metrics)
    rows = []
    for variant in variant_order(table["variant"]):
        runs = table[table["variant"] == variant].assign(variant=lambda t: t[COLUMN])
        for metric in metrics:
            means = runs.groupby("variant")[metric].mean()
            rows.append({"variant": variant, "metric": metric, f"mean_{PRIMARY}": means.get(PRIMARY),
                         f"mean_{ALTERNATIVE}": means.get(ALTERNATIVE),
                         **task_contrast(runs, ALTERNATIVE, PRIMARY, metric)})
    out = pd.DataFrame(rows)
    out["p_holm"], _ = holm(out["p_unadjusted"].to_numpy(dtype="float64"))
    return with_plan(out[columns], plan or AnalysisPlan())


INTERACTION_COLUMNS = ("composition", "metric", "a", "b", "component", "n_pairs", "n_tasks", "diff_either_side",
                       "diff_all_sides", "interaction", "se_task", "ci90_low", "ci90_high", "margin", "p_tost",
                       "equivalent", "note")


def _interaction_row(runs: pd.DataFrame, a: str, b: str, metric: str, margin: float, alpha: float) -> dict[str, object]:
    by_rule = {rule: paired_differences(runs[runs[COLUMN] == rule], a, b, metric) for rule in (PRIMARY, ALTERNATIVE)}
    both = by_rule[ALTERNATIVE].merge(by_rule[PRIMARY], on=["task_id", "seed"], suffixes=("_all", "_either"))
    change = both["d_all"] - both["d_either"]
    tasks = both["task_id"].nunique()
    out: dict[str, object] = {"n_pairs": len(both), "n_tasks": tasks,
                              "diff_either_side": float(by_rule[PRIMARY]["d"].mean()),
                              "diff_all_sides": float(by_rule[ALTERNATIVE]["d"].mean()),
                              "interaction": float(change.mean()) if len(both) else math.nan, "margin": margin,
                              "se_task": math.nan, "ci90_low": math.nan, "ci90_high": math.nan, "p_tost": math.nan,
                              "equivalent": False, "note": ""}
    if tasks < 2:
        return out | {"note": f"no test: {tasks} task(s) under both rules"}
    mean, se = float(change.mean()), clustered_standard_error(change, both["task_id"])
    if not se > 0:  # no spread: the change is known exactly
        return out | {"se_task": 0.0, "p_tost": 0.0 if abs(mean) < margin else 1.0, "equivalent": abs(mean) < margin,
                      "note": "zero spread between tasks"}
    df = tasks - 1
    half = float(scipy_stats.t.ppf(1 - alpha, df)) * se
    p_tost = max(float(scipy_stats.t.sf((mean + margin) / se, df)), float(scipy_stats.t.cdf((mean - margin) / se, df)))
    return out | {"se_task": se, "ci90_low": mean - half, "ci90_high": mean + half, "p_tost": p_tost,
                  "equivalent": p_tost < alpha}


def termination_interaction(scores: pd.DataFrame, pairs: Iterable[tuple[str, str, str]] = DECOMPOSITION,
                            metrics: Iterable[str] | None = None, plan: AnalysisPlan | None = None) -> pd.DataFrame:
    """Does a contrast change between the session-end rules? Per planned pair, composition and
    metric: the rule x variant interaction, (A - B under all_sides) - (A - B under either_side)
    on the same task and seed, its task-clustered SE and (1 - 2 alpha) CI, and a TOST against the
    plan's equivalence margin: `equivalent` when the CI lies inside +/- margin (p_tost < alpha).
    Not a search for a difference (which Holm would make easier to miss): each row must show
    equivalence on its own. Empty without both rules."""
    plan = plan or AnalysisPlan()
    metrics = list(plan.metrics if metrics is None else metrics)
    if not {PRIMARY, ALTERNATIVE} <= set(termination_rules(scores)):
        return with_plan(pd.DataFrame(columns=list(INTERACTION_COLUMNS)), plan)
    table = check_scores(scores, metrics)
    present, rows = set(table["variant"]), list[dict[str, object]]()
    for structure_a, structure_b, label in pairs:
        for composition in COMPOSITIONS[1:]:
            a, b = f"{structure_a}-{composition}", f"{structure_b}-{composition}"
            if a in present and b in present:
                rows.extend({"composition": composition, "metric": metric, "a": a, "b": b, "component": label,
                             **_interaction_row(table, a, b, metric, plan.equivalence_margins.get(metric, math.nan),
                                                plan.alpha)} for metric in metrics)
    return with_plan(pd.DataFrame(rows, columns=list(INTERACTION_COLUMNS)), plan)
