"""Session-end rules side by side: does a result depend on when budgets end a session?

The suite's default, `ai_budget`, ends a session when the AI agent has spent its budget
(each human with a cap of its own); Co-Gym, the study's substrate, ends it when either side
has spent its budget, the humans pooled (`either_side`); `all_sides` runs until every side
has. An experiment with several arms (`experiments/sensitivity.yaml`: all three) has every
(variant, task, seed) under each, told apart by the score table's `termination` column
(read from each session's spec). The study's tables take one rule at a time
(`by_termination`: the default when it ran); `termination_contrast` pairs the same variant,
task and seed under each other rule with the baseline rule (the first of `RULES` present).
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from colabkit.analysis.inference.contrasts import task_contrast
from colabkit.analysis.inference.families import holm
from colabkit.analysis.scores import STUDY_METRICS, check_scores, variant_order

COLUMN = "termination"
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


def termination_contrast(scores: pd.DataFrame, metrics: Iterable[str] = STUDY_METRICS) -> pd.DataFrame:
    """Per variant, metric and other rule: the baseline's mean, the rule's mean and the paired
    difference rule - baseline.

    Pairs are the same (task, seed) under both rules, tested at the task level like every
    contrast (`task_contrast`: task-clustered SE, t on tasks - 1 df); p-values are Holm-adjusted
    over the whole table, its own family ("does any result depend on the rule?"). Empty
    with fewer than two rules.
    """
    metrics = list(metrics)
    columns = ["variant", "metric", "baseline", "rule", "mean_baseline", "mean_rule", "n_pairs", "n_tasks", "diff",
               "se_task", "ci_low", "ci_high", "p_unadjusted", "p_holm"]
    rules = termination_rules(scores)
    if len(rules) < 2:
        return pd.DataFrame(columns=columns)
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
    return out[columns]
