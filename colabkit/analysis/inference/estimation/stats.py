"""Means with their standard errors: over sessions, and clustered by task.

The study's table reports each mean with its task-clustered SE, never an SE over sessions:
sessions of the same task are not independent (a hard task is hard for every seed), and the
SE over the 114 sessions of a variant is about 38% too small under the benchmark's generating
model. The task-clustered SE is the cluster-robust (CR1) standard error of the mean:

    SE_cl = sqrt( G/(G-1) * sum_g (sum_{i in g} (y_i - mean))^2 ) / N

with G tasks and N sessions. It equals statsmodels' `OLS(y, 1).fit(cov_type="cluster")`
(whose small-sample factor G/(G-1) * (N-1)/(N-K) reduces to G/(G-1) for K = 1), and it is
written out here so a reader can check the arithmetic. Missing values (NaN) are dropped,
never read as 0; a statistic with too few values is NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from colabkit.analysis.inference.planning.plan import AnalysisPlan, with_plan
from colabkit.analysis.judging import with_judge_columns
from colabkit.analysis.scores import METRIC_LABELS, STUDY_METRICS, check_scores, variant_order
from colabkit.store import run_outcomes

STUDY_COLUMNS = ("variant", "structure", "composition", "metric", "n", "n_tasks", "mean", "se_task",
                 "judge_grade", "judge_reliable", "plan_hash", "plan_status", "plan_label")


def clustered_standard_error(values: Sequence[float] | pd.Series, clusters: Sequence[object] | pd.Series) -> float:
    """The cluster-robust (CR1) SE of the mean (module docstring); NaN below two clusters."""
    frame = pd.DataFrame({"y": pd.Series(values, dtype="float64").to_numpy(), "g": pd.Series(clusters).to_numpy()})
    frame = frame.dropna(subset=["y"])
    n, g = len(frame), frame["g"].nunique()
    if g < 2:
        return math.nan
    residual_sums = (frame["y"] - frame["y"].mean()).groupby(frame["g"]).sum()
    return float(math.sqrt(g / (g - 1) * float((residual_sums**2).sum())) / n)


def study_table(scores: pd.DataFrame, metrics: Iterable[str] = STUDY_METRICS,
                plan: AnalysisPlan | None = None) -> pd.DataFrame:
    """One row per variant and metric: n sessions, n tasks, mean, task-clustered SE, the grade
    and reliability of the judge behind the variant's scores, and the plan's hash; with the
    score table's run columns, also the variant's run outcomes (`colabkit.store.run_outcomes`:
    the AI's steps used, mean/min/max, the endings and the expired requests), so a variant
    whose sessions gave the AI fewer steps or ended differently shows it beside its scores.

    Long format (columns `STUDY_COLUMNS`), variants in the study's order; `format_study_table`
    gives the paper's wide layout.
    """
    metrics = list(metrics)
    table = check_scores(scores, metrics)
    rows = []
    for name in variant_order(table["variant"]):
        sessions = table[table["variant"] == name]
        structure, composition = sessions["structure"].iloc[0], sessions["composition"].iloc[0]
        for metric in metrics:
            present = sessions.dropna(subset=[metric])
            rows.append({
                "variant": name, "structure": structure, "composition": composition, "metric": metric,
                "n": len(present), "n_tasks": present["task_id"].nunique(),
                "mean": float(present[metric].mean()) if len(present) else math.nan,
                "se_task": clustered_standard_error(present[metric], present["task_id"]),
            })
    out = with_judge_columns(pd.DataFrame(rows, columns=list(STUDY_COLUMNS[:-4])), table)
    if {"ended_by", "ai_steps", "expired_requests"} <= set(table.columns):  # how each variant's sessions ran
        out = out.merge(run_outcomes(table).drop(columns="sessions"), on="variant", how="left")
    return with_plan(out, plan or AnalysisPlan())


def format_study_table(table: pd.DataFrame, digits: int = 2) -> pd.DataFrame:
    """The paper's layout: a row per variant, a column per metric, "mean ± task SE (n, tasks)".

    The interval is the task-clustered SE; each cell shows its own n (sessions with a value of that metric: a judged metric can have
    fewer than the variant's sessions), a statistic that cannot be computed is left out of its
    cell, and a metric no session has (H_init,norm of the single agent) shows "–". The last
    columns are the judge's grade and reliability behind the variant's scores.
    """
    def cell(row: pd.Series) -> str:
        if np.isnan(row["mean"]):
            return "–"
        text = f"{row['mean']:.{digits}f}"  # one session has no SE: the mean alone, never "± nan"
        text += f" ± {row['se_task']:.{digits}f}" if not np.isnan(row["se_task"]) else ""
        return f"{text} (n={row['n']}, {row['n_tasks']} task{'' if row['n_tasks'] == 1 else 's'})"

    shown = table.assign(cell=table.apply(cell, axis=1),
                         label=table["metric"].map(lambda m: METRIC_LABELS.get(m, m)))
    wide = shown.pivot(index="variant", columns="label", values="cell")
    sessions = table.groupby("variant")["n"].max()
    wide.insert(0, "sessions", sessions)
    order = variant_order(table["variant"])
    labels = [METRIC_LABELS.get(m, m) for m in dict.fromkeys(table["metric"])]
    wide = wide.loc[order, ["sessions", *labels]].rename_axis(columns=None)
    if {"judge_grade", "judge_reliable"} <= set(table.columns):
        judge = table.groupby("variant")[["judge_grade", "judge_reliable"]].first()
        wide = wide.join(judge)
    if "endings" in table.columns:
        runs = table.groupby("variant")[["ai_steps_mean", "ai_steps_min", "ai_steps_max", "endings",
                                         "expired_requests"]].first()
        wide["AI steps (mean [min-max])"] = runs.apply(
            lambda r: f"{r['ai_steps_mean']:.1f} [{r['ai_steps_min']:.0f}-{r['ai_steps_max']:.0f}]"
            if not np.isnan(r["ai_steps_mean"]) else "–", axis=1)
        wide["endings"] = runs["endings"]
        wide["expired requests"] = runs["expired_requests"]
    if "plan_hash" in table.columns:
        wide["plan_hash"] = table["plan_hash"].iloc[0]
    return wide
