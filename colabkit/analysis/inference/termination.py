"""Session-end rules side by side: does a result depend on when budgets end a session?

Co-Gym, the study's substrate, ends a session when either side has spent its budget
(`either_side`, the suite's default); `all_sides` runs until every side has. An experiment
with both arms (`experiments/sensitivity.yaml`) has every (variant, task, seed) under both,
told apart by the score table's `termination` column (read from each session's spec). The
study's tables take one rule at a time (`by_termination`); `termination_contrast` pairs the
same variant, task and seed across the two rules.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from colabkit.analysis.inference.contrasts import task_contrast
from colabkit.analysis.inference.families import holm
from colabkit.analysis.inference.plan import AnalysisPlan, with_plan
from colabkit.analysis.scores import STUDY_METRICS, check_scores, variant_order

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
