"""Who made the difference: each member's counterfactual contribution, from paired replays.

A member's **contribution** to a stored team session is what the session loses without it:
the session is replayed from event N with the member's seat empty (`remove_member`) and,
beside it, without any change (the control), under the same seeds; the contribution is the
paired difference **control minus removal** (same parent, fork point and seed: the seeds are
the continuations' common random numbers, as in `counterfactual`), so a positive value means
the member helped. The structure's machinery is a "member" too: `structure_off` replays the
session with the variant's Default twin from N, and its contribution is control minus that.
This is leave-one-out attribution (docs/contributions.md): it says what removing one member
changes given the others, not a share of the outcome (the members' contributions need not
sum to anything).

Outcomes come from the evaluation layer's score table (Performance, HMS, S_hyp where
scored: `with_scores`), process counts from each continuation's record
(`counterfactual.session_values`). A missing value is missing: a pair lacking the metric on
either side is left out of that metric, never read as 0.

Three levels, each with its interval:
- `contribution_pairs`: one row per (continuation pair, metric);
- `session_contributions`: per parent session, fork point and member: the mean over seeds
  with a t interval over the seeds (`counterfactual.paired_interval`);
- `variant_contributions`: per variant and member: the mean over every pair of every session,
  its SE clustered by task (CR1, `clustered_standard_error`) with a t interval on tasks - 1 df,
  so sessions and seeds of one task count as one cluster; with pairs from one task only the
  interval is the t over pairs, and `interval` says it is not task-clustered.
These are descriptions with 95% intervals, not decisions of the analysis plan.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from scipy import stats as scipy_stats

from colabkit.analysis.counterfactual import PROCESS_METRICS, continuations, paired_interval, session_values
from colabkit.analysis.inference.estimation.stats import clustered_standard_error

OUTCOME_METRICS = ("performance", "hms", "s_hyp")
CONTRIBUTION_METRICS = (*OUTCOME_METRICS, *PROCESS_METRICS)
STRUCTURE = "structure"
"""The `member` of a `structure_off` continuation: the structure's machinery."""
CONTROL = "control"
RUN_COLUMNS = ("session_id", "parent_id", "task_id", "variant", "member", "at", "seed", "ended_by",
               *PROCESS_METRICS)
PAIR_COLUMNS = ("parent_id", "task_id", "variant", "member", "at", "seed", "metric", "control", "removed",
                "contribution")
SESSION_COLUMNS = ("parent_id", "task_id", "variant", "member", "at", "metric", "n_seeds", "contribution",
                   "ci_low", "ci_high")
VARIANT_COLUMNS = ("variant", "member", "metric", "n_pairs", "n_sessions", "n_tasks", "contribution", "se_task",
                   "ci_low", "ci_high", "interval")


def member_of(kind: str, role: str | None) -> str | None:
    """The member a continuation's change removes: a seat, the structure, the control, or None
    (a change that is not a contribution replay)."""
    if kind == "remove_member":
        return role
    return {"structure_off": STRUCTURE, "none": CONTROL}.get(kind)


def contribution_runs(forks: Path | str | Iterable[Path | str], scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per contribution continuation (`RUN_COLUMNS`, with the score table's metrics
    joined on session id) under the forks folder(s) `forks`. `variant` is the parent's (a
    structure-off continuation plays its twin, its control the parent's own variant)."""
    folders = [Path(forks)] if isinstance(forks, (str, Path)) else [Path(f) for f in forks]
    rows = []
    for root in folders:
        for record, fork in continuations(root):
            point = fork.point
            member = member_of(point.change.kind, getattr(point.change, "role", None))
            if member is None:
                continue
            rows.append({"parent_id": point.parent_id, "task_id": record.task_id, "member": member,
                         "variant": record.spec.variant.name, "at": point.at, "seed": point.seed,
                         "ended_by": record.ended_by, **session_values(record)})
    runs = pd.DataFrame(rows, columns=list(RUN_COLUMNS))
    own = runs[runs["member"] != STRUCTURE].groupby("parent_id")["variant"].first()
    runs["variant"] = [own.get(p, v) for p, v in zip(runs["parent_id"], runs["variant"])]
    if scores is None or scores.empty:
        return runs
    metrics = [m for m in scores.columns if m in CONTRIBUTION_METRICS and m not in runs.columns]
    per_session = scores.groupby("session_id", sort=False)[metrics].first().reset_index()
    return runs.merge(per_session, on="session_id", how="left")


def contribution_pairs(runs: pd.DataFrame, metrics: Iterable[str] = CONTRIBUTION_METRICS) -> pd.DataFrame:
    """Each removal paired with the control of the same parent, fork point and seed, per metric:
    `contribution` = control - removed. A metric missing on either side leaves the pair out of it."""
    metrics = [m for m in metrics if m in runs.columns]
    keys = ["parent_id", "at", "seed"]
    controls = runs[runs["member"] == CONTROL].drop_duplicates(keys).set_index(keys)
    rows = []
    for row in runs[runs["member"] != CONTROL].itertuples(index=False):
        key = (row.parent_id, row.at, row.seed)
        if key not in controls.index:
            continue
        control = controls.loc[key]
        for metric in metrics:
            c, r = _number(control[metric]), _number(getattr(row, metric))
            if math.isnan(c) or math.isnan(r):
                continue
            rows.append({"parent_id": row.parent_id, "task_id": row.task_id, "variant": row.variant,
                         "member": row.member, "at": row.at, "seed": row.seed, "metric": metric,
                         "control": c, "removed": r, "contribution": c - r})
    return pd.DataFrame(rows, columns=list(PAIR_COLUMNS))


def session_contributions(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per parent session, fork point, member and metric: the mean contribution over seeds and
    its 95% t interval over the seeds (NaN bounds below two seeds)."""
    rows = []
    keys = ["parent_id", "task_id", "variant", "member", "at", "metric"]
    for key, group in pairs.groupby(keys, sort=True):
        mean, low, high = paired_interval(group["contribution"])
        rows.append({**dict(zip(keys, key)), "n_seeds": len(group), "contribution": mean,
                     "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows, columns=list(SESSION_COLUMNS))


def variant_contributions(pairs: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Per variant, member and metric: the average contribution over sessions and seeds, with its
    task-clustered interval (module docstring); `member` is D, R or `structure`."""
    rows = []
    for (variant, member, metric), group in pairs.groupby(["variant", "member", "metric"], sort=True):
        values, tasks = group["contribution"].astype("float64"), group["task_id"]
        n, g = len(values), int(tasks.nunique())
        mean = float(values.mean()) if n else math.nan
        if g >= 2:
            se, df, how = clustered_standard_error(values, tasks), g - 1, "task-clustered (CR1), t on tasks - 1 df"
        elif n >= 2:
            se, df, how = float(values.std(ddof=1)) / math.sqrt(n), n - 1, "one task: t over its pairs, not task-clustered"
        else:
            se, df, how = math.nan, 0, "one pair: no interval"
        half = float(scipy_stats.t.ppf(0.5 + level / 2, df)) * se if df >= 1 and se == se else math.nan
        rows.append({"variant": variant, "member": member, "metric": metric, "n_pairs": n,
                     "n_sessions": int(group["parent_id"].nunique()), "n_tasks": g, "contribution": mean,
                     "se_task": se, "ci_low": mean - half, "ci_high": mean + half, "interval": how})
    return pd.DataFrame(rows, columns=list(VARIANT_COLUMNS))


def contribution_figure(table: pd.DataFrame, metric: str, title: str = "") -> object:
    """Bars of each member's average contribution on `metric` per variant (`variant_contributions`),
    with their intervals; a member without an interval is drawn hollow. Returns the figure."""
    import matplotlib.pyplot as plt

    rows = table[table["metric"] == metric]
    variants, members = sorted(set(rows["variant"])), _members(rows["member"])
    fig, ax = plt.subplots(figsize=(max(3.5, 1.4 * max(len(variants), 1) * max(len(members), 1) / 2), 3.2))
    width = 0.8 / max(len(members), 1)
    for k, member in enumerate(members):
        part = rows[rows["member"] == member].set_index("variant")
        for i, variant in enumerate(variants):
            if variant not in part.index:
                continue
            r = part.loc[variant]
            x, y = i + (k - (len(members) - 1) / 2) * width, float(r["contribution"])
            solid = not math.isnan(float(r["ci_low"]))
            ax.bar(x, y, width, color=f"C{k}" if solid else "none", edgecolor=f"C{k}",
                   label=member if i == 0 or variant == variants[0] else None)
            if solid:
                ax.errorbar(x, y, yerr=[[y - float(r["ci_low"])], [float(r["ci_high"]) - y]], color="black",
                            capsize=3, linewidth=1)
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xticks(range(len(variants)), variants, rotation=20, ha="right")
    ax.set_ylabel(f"contribution to {metric}\n(control - removed)")
    ax.set_title(title, fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(dict(zip(labels, handles)).values(), dict(zip(labels, handles)).keys(), fontsize=8)
    fig.tight_layout()
    return fig


@dataclass
class Section:
    """What a notebook shows of a forks folder's contribution replays (`section`)."""

    table: pd.DataFrame
    figure: Any | None
    note: str


def section(forks: Path | str, title: str = "") -> Section:
    """The per-variant contributions of the replays under `forks` with their scores where the
    evaluation layer has scored them (else process counts only), a bar chart on the first outcome
    that has values (else `delivered`), and one line saying what was found or why nothing was."""
    from colabkit.analysis.scores import load_score_table
    from colabkit.errors import ColabkitError

    folder = Path(forks)
    empty = pd.DataFrame(columns=list(VARIANT_COLUMNS))
    how = (f"run `colabkit contributions <experiment folder> --seeds 0,1,2` (it prints the cost first), then "
           f"`colabkit score {folder}`")
    runs = contribution_runs(folder) if folder.is_dir() else pd.DataFrame(columns=list(RUN_COLUMNS))
    if runs.empty:
        return Section(empty, None, f"no contribution replays in {folder}: {how}")
    try:
        scores = load_score_table(folder)
    except (ColabkitError, OSError, ValueError) as exc:
        scores, unscored = None, f"; not scored ({' '.join(str(exc).split())[:120]}): process counts only"
    else:
        scored = [m for m in OUTCOME_METRICS if m in scores.columns and scores[m].notna().any()]
        unscored = "" if scored else "; no Performance, HMS or S_hyp scored yet: process counts only"
    table = variant_contributions(contribution_pairs(contribution_runs(folder, scores)))
    if table.empty:
        return Section(empty, None, f"replays in {folder} but no control to pair them with: {how}")
    metric = next((m for m in (*OUTCOME_METRICS, "delivered") if m in set(table["metric"])), str(table["metric"].iloc[0]))
    note = (f"{runs['parent_id'].nunique()} session(s), {len(runs)} continuation(s) in {folder}{unscored}; "
            f"the chart shows {metric}")
    return Section(table, contribution_figure(table, metric, title), note)


def _members(values: Sequence[str] | pd.Series) -> list[str]:
    found = set(values)
    return [m for m in ("D", "R", STRUCTURE) if m in found] + sorted(found - {"D", "R", STRUCTURE})


def _number(value: object) -> float:
    try:
        return float(value) if value is not None else math.nan  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
