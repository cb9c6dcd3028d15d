"""Summaries of the gated-event annotations: how teams used their gates, and how well.

Input: the gated-events table (`colabkit.evaluation.load_gate_annotations`), one row per gated
request. The judge's four labels (expertise_fit, grounded, correct_in_hindsight,
changed_course) are booleans, NaN where the judge could not answer (or the request expired
undecided); every rate counts only the rows with a label. A *rubber stamp* is an approval the judge found not grounded (it cites
no data, evidence or evidence standard), the failure TeamBench reports for verifiers.
"""

from __future__ import annotations

import math

import pandas as pd

from colabkit.errors import ColabkitError

GATE_COLUMNS = ("session_id", "variant", "request_id", "action", "proposer", "signatory", "decision",
                "latency_events", "latency_rounds", "expertise_fit", "grounded", "correct_in_hindsight",
                "changed_course")
JUDGE_LABELS = ("expertise_fit", "grounded", "correct_in_hindsight", "changed_course")
DECIDED = ("approved", "rejected")
SUMMARY_COLUMNS = ("n_gated", "n_sessions", "approval_rate", "rejection_rate", "undecided_rate",
                   "latency_rounds", "rubber_stamp_rate", *(f"{label}_rate" for label in JUDGE_LABELS))


def check_gates(gates: pd.DataFrame) -> pd.DataFrame:
    """The table with its judge labels as floats (1/0/NaN), or fail naming the missing columns."""
    missing = [c for c in GATE_COLUMNS if c not in gates.columns]
    if missing:
        raise ColabkitError(f"gated-events table lacks column(s): {', '.join(missing)}")
    table = gates.copy()
    for label in JUDGE_LABELS:
        # Missing labels arrive as None, NaN or pandas' NA (nullable boolean columns from parquet).
        table[label] = table[label].map(lambda v: math.nan if pd.isna(v) else float(bool(v)))
    return table


def _rate(values: pd.Series) -> float:
    present = values.dropna()
    return float(present.mean()) if len(present) else math.nan


def rubber_stamp_rate(gates: pd.DataFrame) -> float:
    """Share of judged approvals that were not grounded; NaN if no approval was judged."""
    approved = check_gates(gates)
    approved = approved[approved["decision"] == "approved"]
    return _rate(1.0 - approved["grounded"])


def gate_summary(gates: pd.DataFrame, by: str = "variant") -> pd.DataFrame:
    """Per `by` value (variant, action, signatory, ...): counts, decision rates, judge rates."""
    table = check_gates(gates)
    rows = []
    for key, group in table.groupby(by, sort=True):
        row = {by: key, "n_gated": len(group), "n_sessions": group["session_id"].nunique(),
               "approval_rate": float((group["decision"] == "approved").mean()),
               "rejection_rate": float((group["decision"] == "rejected").mean()),
               "undecided_rate": float((~group["decision"].isin(DECIDED)).mean()),
               "latency_rounds": float(pd.to_numeric(group["latency_rounds"], errors="coerce").mean()),
               "rubber_stamp_rate": rubber_stamp_rate(group)}
        row |= {f"{label}_rate": _rate(group[label]) for label in JUDGE_LABELS}
        rows.append(row)
    return pd.DataFrame(rows, columns=[by, *SUMMARY_COLUMNS])


def decision_counts(gates: pd.DataFrame) -> pd.DataFrame:
    """Counts of decisions (approved / rejected / expired or undecided) per action type and signatory."""
    table = check_gates(gates).assign(decision=lambda t: t["decision"].fillna("undecided"))
    counts = table.groupby(["action", "signatory", "decision"]).size().rename("count").reset_index()
    return counts.sort_values(["action", "signatory", "decision"], ignore_index=True)
