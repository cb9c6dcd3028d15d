"""What the missing scores could change: a worst-case and best-case fill-in per variant.

A session whose metrics are missing (a crash or a provider refusal, `INFRASTRUCTURE_ENDINGS`;
a judge that could not answer) drops out of a variant's mean. If such sessions are not
random (one structure crashes more), the means are biased. `missing_score_bounds` bounds
that: per variant and metric, the mean over observed sessions beside the mean with every
missing value set to the metric's lowest observed value in the whole table (worst case)
and to its highest (best case). A contrast whose sign survives both fill-ins does not
depend on the missing sessions.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from colabkit.analysis.scores import STUDY_METRICS, check_scores, variant_order

MISSING_COLUMNS = ("variant", "metric", "sessions", "n_missing", "mean_observed", "mean_worst", "mean_best")


def missing_score_bounds(scores: pd.DataFrame, metrics: Iterable[str] = STUDY_METRICS) -> pd.DataFrame:
    """Per variant and metric: sessions, how many lack the metric, and the mean observed, with
    the missing ones at the metric's table-wide minimum (worst) and maximum (best).

    A metric undefined for a whole variant by design (H_init,norm of the single agent: no
    value in any of its sessions) is not filled in: its bounds stay NaN.
    """
    metrics = list(metrics)
    table = check_scores(scores, metrics)
    rows = []
    for metric in metrics:
        low, high = table[metric].min(), table[metric].max()
        for variant in variant_order(table["variant"]):
            values = table.loc[table["variant"] == variant, metric]
            missing = int(values.isna().sum())
            defined = values.notna().any()
            rows.append({
                "variant": variant, "metric": metric, "sessions": len(values), "n_missing": missing,
                "mean_observed": values.mean(),
                "mean_worst": values.fillna(low).mean() if defined else float("nan"),
                "mean_best": values.fillna(high).mean() if defined else float("nan"),
            })
    return pd.DataFrame(rows, columns=list(MISSING_COLUMNS))


MISSING_REASONS = ("crash", "provider refusal", "context overflow", "provider unreachable", "not scored", "absent")
"""Why a session's score is missing: its ending (`ended_by`: "error" a crash, "provider_error"
a refusal, one whose flags name the context window an overflow, "provider_unavailable"), a
finished session the evaluator left unscored, or a planned (task, seed) with no row at all."""


def missing_reason(ended_by: object, flags: object) -> str:
    """One missing score's reason (`MISSING_REASONS`)."""
    if ended_by == "error":
        return "crash"
    if ended_by == "provider_error":
        text = str(flags).lower()
        return "context overflow" if "context" in text and ("window" in text or "length" in text) else \
            "provider refusal"
    if ended_by == "provider_unavailable":
        return "provider unreachable"
    return "not scored"


def planned_cells(scores: pd.DataFrame) -> pd.MultiIndex:
    """The (task_id, seed) cells the table's grid plans: every task crossed with every seed seen."""
    return pd.MultiIndex.from_product([sorted(scores["task_id"].unique()), sorted(scores["seed"].unique())],
                                      names=["task_id", "seed"])


def missing_sessions(scores: pd.DataFrame, metric: str = "performance",
                     variants: Iterable[str] | None = None) -> pd.DataFrame:
    """Per variant: the planned sessions (every task x seed of the table), how many have
    `metric`, and how many are missing, by reason (`MISSING_REASONS`)."""
    table = check_scores(scores, [metric])
    cells = planned_cells(table)
    rows = []
    for variant in variants if variants is not None else variant_order(table["variant"]):
        mine = table[table["variant"] == variant]
        lacking = mine[mine[metric].isna()]
        reasons = [missing_reason(e, f) for e, f in zip(lacking.get("ended_by", pd.Series(None, index=lacking.index)),
                                                        lacking.get("flags", pd.Series("", index=lacking.index)))]
        present = pd.MultiIndex.from_frame(mine[["task_id", "seed"]]) if len(mine) else cells[:0]
        absent = len(cells.difference(present))
        counts = {reason: reasons.count(reason) for reason in MISSING_REASONS[:-1]} | {"absent": absent}
        rows.append({"variant": variant, "metric": metric, "planned": len(cells),
                     "scored": int(mine[metric].notna().sum()), "missing": len(lacking) + absent, **counts})
    return pd.DataFrame(rows, columns=["variant", "metric", "planned", "scored", "missing", *MISSING_REASONS])


def worst_case_within_task(scores: pd.DataFrame, metric: str, against: dict[str, float]) -> pd.DataFrame:
    """`scores` with every missing `metric` of the variants in `against` filled in against a
    claim, within its task: a variant whose sign is +1 (the claim wants it high) gets the
    task's lowest observed value of the metric, -1 the highest (the table's when the task has
    none); planned (task, seed) cells with no row are added as such rows."""
    table = check_scores(scores, [metric])
    cells = planned_cells(table)
    added = []
    for variant in against:
        mine = table[table["variant"] == variant]
        if mine.empty:
            continue
        present = pd.MultiIndex.from_frame(mine[["task_id", "seed"]])
        template = mine.iloc[0].to_dict() | dict.fromkeys([m for m in STUDY_METRICS if m in table.columns])
        added += [template | {"task_id": t, "seed": s, "session_id": f"{variant}/{t}/{s}/absent"}
                  for t, s in cells.difference(present)]
    if added:
        table = pd.concat([table, pd.DataFrame(added)], ignore_index=True)
    low = table.groupby("task_id")[metric].transform("min").fillna(table[metric].min())
    high = table.groupby("task_id")[metric].transform("max").fillna(table[metric].max())
    for variant, sign in against.items():
        fill = (table["variant"] == variant) & table[metric].isna()
        table.loc[fill, metric] = (low if sign > 0 else high)[fill]
    return table
