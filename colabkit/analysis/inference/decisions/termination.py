"""Session-end rules side by side: does a result depend on when budgets end a session?

The suite's default, `ai_budget`, ends a session when the AI agent has spent its budget
(each human with a cap of its own); Co-Gym, the study's substrate, ends it when either side
has spent its budget, the humans pooled (`either_side`); `all_sides` runs until every side
has. An experiment with several arms (`experiments/sensitivity.yaml`: all three) has every
(variant, task, seed) under each, told apart by the score table's `termination` column
(read from each session's spec). The study's tables take one rule at a time
(`by_termination`: the default when it ran); `termination_contrast` pairs the same variant,
task and seed under each other rule with the baseline rule (the first of `RULES` present):
how far each variant's level moves, a description. Whether a *result* depends on the rule is
a different question, answered by `termination_interaction`: the rule x variant interaction of
every planned contrast, each other rule against the baseline, with an equivalence test (TOST)
against the plan's margins.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd
from scipy import stats as scipy_stats

from colabkit.analysis.inference.decisions.contrasts import paired_differences, task_contrast
from colabkit.analysis.inference.decisions.decide import equivalence_verdict
from colabkit.analysis.inference.estimation.stats import clustered_standard_error
from colabkit.analysis.inference.planning.families import DECOMPOSITION, holm
from colabkit.analysis.inference.planning.plan import AnalysisPlan, with_plan
from colabkit.analysis.scores import COMPOSITIONS, STUDY_METRICS, check_scores, variant_order

COLUMN = "termination"
DESCRIPTION = "Holm over this table: a description of how levels move, not a decision of the plan"
"""Said on every row of a level-shift table (here and `realism.simulator_effect`): its adjusted p
is not the study's procedure, and a shift it does not find is not shown to be absent."""
PRIMARY = "ai_budget"  # the suite's default
RULES = (PRIMARY, "either_side", "all_sides")  # the baseline order: the first present is the baseline


def termination_rules(scores: pd.DataFrame) -> list[str]:
    """The rules present in the table, in `RULES` order ([] for a table without the column)."""
    if COLUMN not in scores.columns:
        return []
    present = set(scores[COLUMN].dropna())
    return [r for r in RULES if r in present] + sorted(present - set(RULES))


def by_termination(scores: pd.DataFrame, rule: str | None = None) -> pd.DataFrame:
    """The sessions run under `rule` (default: the baseline rule present), or the table as it
    is when it holds one rule only."""
    rules = termination_rules(scores)
    if len(rules) < 2:
        return scores
    return scores[scores[COLUMN] == (rule or rules[0])]


def termination_contrast(scores: pd.DataFrame, metrics: Iterable[str] = STUDY_METRICS,
                         plan: AnalysisPlan | None = None) -> pd.DataFrame:
    """Per variant, metric and other rule: the baseline's mean, the rule's mean and the paired
    difference rule - baseline.

    Pairs are the same (task, seed) under both rules, tested at the task level like every
    contrast (`task_contrast`: task-clustered SE, t on tasks - 1 df); p-values are Holm-adjusted
    over the whole table, a description of how far levels move (`adjustment` says so on every
    row: the plan's procedure decides nothing here). A level that does not move
    significantly is not shown to be unchanged (`termination_interaction` asks whether a
    *result* changes, by equivalence). Empty with fewer than two rules.
    """
    metrics = list(metrics)
    columns = ["variant", "metric", "baseline", "rule", "mean_baseline", "mean_rule", "n_pairs", "n_tasks", "diff",
               "se_task", "ci_low", "ci_high", "p_unadjusted", "p_holm", "adjustment"]
    rules = termination_rules(scores)
    if len(rules) < 2:
        return with_plan(pd.DataFrame(columns=columns), plan or AnalysisPlan())
    baseline = rules[0]
    table = check_scores(scores, metrics)
    rows = []
    for variant in variant_order(table["variant"]):
        runs = table[table["variant"] == variant].assign(variant=lambda t: t[COLUMN])
        for rule in rules[1:]:
            for metric in metrics:
                means = runs.groupby("variant")[metric].mean()
                rows.append({"variant": variant, "metric": metric, "baseline": baseline, "rule": rule,
                             "mean_baseline": means.get(baseline), "mean_rule": means.get(rule),
                             **task_contrast(runs, rule, baseline, metric)})
    out = pd.DataFrame(rows)
    out["p_holm"], _ = holm(out["p_unadjusted"].to_numpy(dtype="float64"))
    return with_plan(out.assign(adjustment=DESCRIPTION)[columns], plan or AnalysisPlan())


INTERACTION_COLUMNS = ("composition", "metric", "a", "b", "component", "baseline", "rule", "n_pairs", "n_tasks",
                       "diff_baseline", "diff_rule", "interaction", "se_task", "ci90_low", "ci90_high", "margin",
                       "margin_sd", "p_tost", "tost_power", "equivalent", "verdict", "note")


def _interaction_row(runs: pd.DataFrame, a: str, b: str, metric: str, baseline: str, rule: str, margin_sd: float,
                     alpha: float) -> dict[str, object]:
    by_rule = {r: paired_differences(runs[runs[COLUMN] == r], a, b, metric) for r in (baseline, rule)}
    both = by_rule[rule].merge(by_rule[baseline], on=["task_id", "seed"], suffixes=("_rule", "_baseline"))
    change = both.assign(d=both["d_rule"] - both["d_baseline"])[["task_id", "seed", "d"]]
    tasks = both["task_id"].nunique()
    out: dict[str, object] = {"baseline": baseline, "rule": rule, "n_pairs": len(both), "n_tasks": tasks,
                              "diff_baseline": float(by_rule[baseline]["d"].mean()),
                              "diff_rule": float(by_rule[rule]["d"].mean()),
                              "interaction": float(change["d"].mean()) if len(both) else math.nan,
                              "margin": math.nan, "margin_sd": margin_sd, "se_task": math.nan, "ci90_low": math.nan,
                              "ci90_high": math.nan, "p_tost": math.nan, "tost_power": math.nan,
                              "equivalent": False, "verdict": "inconclusive", "note": ""}
    if tasks < 2:
        return out | {"note": f"no test: {tasks} task(s) under both rules"}
    mean, se = float(change["d"].mean()), clustered_standard_error(change["d"], change["task_id"])
    if not se > 0:  # no spread: the change is known exactly, and no SD scales a margin
        return out | {"se_task": 0.0, "margin": 0.0, "equivalent": mean == 0, "verdict": "equivalent" if mean == 0 else "differs",
                      "p_tost": 0.0 if mean == 0 else 1.0, "note": "zero spread between tasks"}
    half = float(scipy_stats.t.ppf(1 - alpha, tasks - 1)) * se
    verdict = equivalence_verdict(change, margin_sd, alpha)
    return out | verdict | {"se_task": se, "ci90_low": mean - half, "ci90_high": mean + half,
                            "equivalent": verdict["verdict"] == "equivalent"}


def termination_interaction(scores: pd.DataFrame, pairs: Iterable[tuple[str, str, str]] = DECOMPOSITION,
                            metrics: Iterable[str] | None = None, plan: AnalysisPlan | None = None) -> pd.DataFrame:
    """Does a contrast change between the session-end rules? Per planned pair, composition,
    metric and other rule: the rule x variant interaction, (A - B under the rule) - (A - B under
    the baseline rule) on the same task and seed, its task-clustered SE and (1 - 2 alpha) CI,
    and the standardised TOST (`decide.equivalence_verdict`): the margin is the plan's
    `equivalence_margin_sd` of the between-task SD of the change; `verdict` says "equivalent",
    "not shown equivalent", or "inconclusive" when the TOST's power at this many tasks is
    below 80%. Never "no difference" from a test that did not reject: each row must show
    equivalence on its own. Empty with fewer than two rules."""
    plan = plan or AnalysisPlan()
    metrics = list(plan.metrics if metrics is None else metrics)
    rules = termination_rules(scores)
    if len(rules) < 2:
        return with_plan(pd.DataFrame(columns=list(INTERACTION_COLUMNS)), plan)
    table = check_scores(scores, metrics)
    present, rows = set(table["variant"]), list[dict[str, object]]()
    for structure_a, structure_b, label in pairs:
        for composition in COMPOSITIONS[1:]:
            a, b = f"{structure_a}-{composition}", f"{structure_b}-{composition}"
            if a in present and b in present:
                rows.extend({"composition": composition, "metric": metric, "a": a, "b": b, "component": label,
                             **_interaction_row(table, a, b, metric, rules[0], rule,
                                                plan.equivalence_margin_sd, plan.alpha)}
                            for rule in rules[1:] for metric in metrics)
    return with_plan(pd.DataFrame(rows, columns=list(INTERACTION_COLUMNS)), plan)
