"""The replication report: the seed paper's published numbers beside this run's, claim by claim.

Two tables. `replication_table`: every number the paper published (`colabkit.analysis.reference`,
with its source) beside this run's mean of the same variant and metric and its 95% interval
(task-clustered SE, t on tasks - 1 df, the study table's), and n tasks; a published number
this run has no sessions for says so. `claim_verdicts`: each hypothesis of the plan
(`hypothesis_table`) with the paper's direction, this run's estimate and decision, and a
verdict: "replicated" (declared, in the paper's direction), "same direction, not declared",
"contradicted" (this run's estimate is in the other direction), or for an equivalence claim
"replicated (equivalent)" / the TOST's own verdict; "not in the paper" where the paper gave no
number for the claim's variants. Non-declaration is never read as "no effect".
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from colabkit.analysis.inference.estimation.stats import study_table
from colabkit.analysis.inference.planning.hypotheses import variant_pairs
from colabkit.analysis.inference.planning.plan import AnalysisPlan
from colabkit.analysis.reference import seed_paper
from colabkit.analysis.scores import check_scores

REPLICATION_COLUMNS = ("variant", "metric", "published", "published_se", "estimate", "ci_low", "ci_high", "n_tasks",
                       "note")


def published_values() -> pd.DataFrame:
    """The paper's table, long: variant, metric, published (missing numbers left out)."""
    rows = [{"variant": v, "metric": m, "published": value}
            for v, metrics in seed_paper()["table"].items() for m, value in metrics.items() if value is not None]
    return pd.DataFrame(rows)


def replication_table(scores: pd.DataFrame, plan: AnalysisPlan | None = None) -> pd.DataFrame:
    """Each published number beside this run's estimate and 95% interval (module docstring)."""
    published = published_values()
    metrics = [m for m in dict.fromkeys(published["metric"]) if m in scores.columns]
    here = study_table(check_scores(scores, metrics), metrics, plan=plan)[["variant", "metric", "mean", "se_task",
                                                                            "n_tasks"]]
    table = published.merge(here, on=["variant", "metric"], how="left")
    with np.errstate(invalid="ignore"):
        half = scipy_stats.t.ppf(0.975, table["n_tasks"].astype(float) - 1) * table["se_task"]
    ses = seed_paper().get("standard_errors", {})
    return pd.DataFrame({
        "variant": table["variant"], "metric": table["metric"], "published": table["published"],
        "published_se": [ses.get(v, {}).get(m, math.nan) for v, m in zip(table["variant"], table["metric"])],
        "estimate": table["mean"], "ci_low": table["mean"] - half, "ci_high": table["mean"] + half,
        "n_tasks": table["n_tasks"],
        "note": np.where(table["mean"].isna(), "no sessions of this variant scored on this metric", "")},
        columns=list(REPLICATION_COLUMNS))


def _paper_effect(a: str, b: str, metric: str) -> float:
    table = seed_paper()["table"]

    def value(variant: str) -> float:
        found = table.get(variant, {}).get(metric)
        return float(found) if found is not None else math.nan

    return value(a) - value(b)


def claim_verdicts(hypotheses: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Each hypothesis: the paper's effect, this run's estimate and decision, a verdict."""
    rows = []
    for h in plan.hypotheses:
        row = hypotheses[hypotheses["hypothesis"] == h.name]
        if row.empty:
            continue
        found = row.iloc[0]
        pairs = variant_pairs(h, plan.variants)
        effects = [_paper_effect(a, b, h.metric) for a, b in pairs]
        paper = float(np.mean(effects)) if effects and not any(math.isnan(e) for e in effects) else math.nan
        estimate, declared = float(found["diff"]), bool(found["declared"])
        rows.append({"hypothesis": h.name, "claim": h.claim, "direction": h.direction, "paper_effect": paper,
                     "estimate": estimate, "sim_ci_low": found["sim_ci_low"], "sim_ci_high": found["sim_ci_high"],
                     "p_adjusted": found["p_adjusted"], "decision": found["decision"],
                     "verdict": _verdict(h.direction, paper, estimate, declared, str(found["decision"]))})
    return pd.DataFrame(rows)


def _verdict(direction: str, paper: float, estimate: float, declared: bool, decision: str) -> str:
    if math.isnan(estimate):
        return "not run (no data)"
    if direction == "equivalent":
        return "replicated (equivalent)" if declared else decision
    sign = {"greater": 1.0, "less": -1.0}.get(direction, float(np.sign(paper)) if not math.isnan(paper) else 0.0)
    if sign == 0.0:
        return "declared (no published direction)" if declared else "not declared (no published direction)"
    if estimate * sign < 0:
        return "contradicted (opposite direction)"
    prefix = "" if not math.isnan(paper) else "not in the paper; "
    return prefix + ("replicated (declared, same direction)" if declared else "same direction, not declared")
