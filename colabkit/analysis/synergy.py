"""Synergy and process loss: each team against its members working alone, same task and seed.

Per team variant whose members alone are in the score table (`single` and the solo variants
of its personas, `planning.synergy`): strong synergy (the team above every member alone, the
binding comparison shown: the best member where the data separate them), weak synergy (above
the average member alone) and process loss (below the AI agent alone), each a paired
difference on the same task and seed with its task-clustered 95% interval (CR1, t on tasks -
1 df), computed by the decision code itself (`decisions.decide.synergy_rows`).

**What is a decision and what is not.** Where the analysis plan planned the team's solo
variants, its synergy tests are exploratory tests of the plan, decided by the plan's graph
after the claims (`study_decisions`): the row shows the procedure's adjusted p and decision,
"not reached" included. Where the plan did not (the paper's plan, or no plan written), the row
is a description: `decision` says "not planned: described, not tested" and there is no p. An
interval that excludes 0 is never a decision by itself here; `interval` says what it is.
"""

from __future__ import annotations

import pandas as pd

from colabkit.analysis.inference.decisions.decide import score_grid, study_decisions, synergy_rows
from colabkit.analysis.inference.planning.plan import AnalysisPlan, analysis_plan, with_plan
from colabkit.analysis.inference.planning.synergy import SYNERGY_FAMILY, SYNERGY_METRIC, synergy_tests
from colabkit.analysis.scores import check_scores, variant_order

SYNERGY_COLUMNS = ("team", "kind", "claim", "metric", "versus", "n_pairs", "n_tasks", "diff", "ci_low", "ci_high",
                   "interval", "comparisons", "status", "p_adjusted", "decision", "plan_hash", "plan_label")
NOT_PLANNED = "not planned: described, not tested (the plan has no solo variants for this team)"


def synergy_table(scores: pd.DataFrame, plan: AnalysisPlan | None = None,
                  metric: str = SYNERGY_METRIC) -> pd.DataFrame:
    """One row per team variant and kind (strong, weak, process-loss): see the module docstring.
    `plan`: the experiment's (default: the default plan, which plans no synergy test)."""
    plan = plan or analysis_plan()
    if metric not in scores.columns:  # not scored on it: nothing to compare (missing, never 0)
        return pd.DataFrame(columns=list(SYNERGY_COLUMNS))
    table = check_scores(scores, [metric])
    present = variant_order(table["variant"].unique())
    tests = synergy_tests(present, metric)
    if not tests:
        return pd.DataFrame(columns=list(SYNERGY_COLUMNS))
    described = synergy_rows(score_grid(table, [metric]), plan, tests)
    decided = {}
    if synergy_tests(plan.variants) and metric in plan.metrics:
        decisions = study_decisions(table, plan)
        for row in decisions[decisions["family"] == f"exploratory: {SYNERGY_FAMILY}"].to_dict("records"):
            decided[(row["a"], row["component"], row["metric"])] = row
    rows = []
    for test, row in zip(tests, described):
        plan_row = decided.get((test.team, test.claim, metric))
        rows.append({"team": test.team, "kind": test.kind, "claim": test.claim, "metric": metric,
                     "versus": row["b"], "n_pairs": row.get("n_pairs"), "n_tasks": row.get("n_tasks"),
                     "diff": row.get("diff"), "ci_low": row.get("ci_low"), "ci_high": row.get("ci_high"),
                     "interval": "95%, unadjusted, task-clustered" + (" (the binding comparison)"
                                                                     if test.kind == "strong" else ""),
                     "comparisons": row.get("comparisons", row.get("note", "")),
                     "status": "exploratory test of the plan (its graph, after the claims)" if plan_row is not None
                     else "descriptive",
                     "p_adjusted": plan_row["p_adjusted"] if plan_row is not None else float("nan"),
                     "decision": plan_row["decision"] if plan_row is not None else NOT_PLANNED})
    return with_plan(pd.DataFrame(rows).reindex(columns=[c for c in SYNERGY_COLUMNS if not c.startswith("plan_")]),
                     plan)
