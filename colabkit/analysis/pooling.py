"""Pooling per variant: how much private knowledge reached the team, by which channel, how late.

The evaluation layer's pooling scorers (`colabkit.evaluation.metrics.pooling`) give each session
its pooling rate, the share its hypothesis uses, the mean round of first appearance and how many
items first appeared in each channel; this module turns the score table into the study's view:

- `pooling_table(scores, decider)`: one row per team variant: sessions, tasks, the mean pooling
  rate with its task-clustered SE (the study's convention, `inference.estimation.stats`), the
  share used in the hypothesis, the delay, and each channel's share of the first appearances;
- `pooling_figure(scores, decider)`: a stacked bar per variant whose segments are the mean share
  of the private items first shared through each channel, so a bar's height is the pooling rate;
  a variant without values says why (the scorers' flags) instead of leaving a silent gap;
- `pooling_items(results)`: the item-level table (one row per private item, session and
  decider) read from the stored score files, for joins across sessions (item ids are stable).

`decider` is "judge" (columns `pooling*`) or "lexical" (the judge-free lower bound, `pooling_lex*`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from colabkit.analysis.figures import caption
from colabkit.analysis.inference.estimation.stats import clustered_standard_error
from colabkit.analysis.judging import scores_warning, with_judge_columns
from colabkit.analysis.scores import check_scores, variant_order
from colabkit.analysis.why_missing import why_missing
from colabkit.errors import ColabkitError
from colabkit.evaluation.metrics.pooling import columns as pooling_columns
from colabkit.evaluation.metrics.private_items import CHANNELS
from colabkit.evaluation.storage import finished_sessions, stored_scores
from colabkit.evaluation.tables import session_keys

Decider = Literal["judge", "lexical"]
PREFIX: dict[str, str] = {"judge": "pooling", "lexical": "pooling_lex"}
SCORER: dict[str, str] = {"judge": "pooling", "lexical": "pooling_lexical"}
CHANNEL_COLOURS = {"chat": "#1f6fb4", "memory": "#8c564b", "cell": "#2a8a3e", "reason": "#c2610c",
                   "editor": "#9467bd"}
TABLE_COLUMNS = ("variant", "structure", "composition", "n", "n_tasks", "pooling", "se_task", "pooling_hyp",
                 "delay_rounds", *(f"share_{c}" for c in CHANNELS))
ITEM_COLUMNS = ("session_id", "task_id", "variant", "structure", "composition", "seed", "decider", "item_id",
                "holder", "kind", "digest", "pooled", "first_seq", "first_round", "first_phase", "channel",
                "first_by", "in_hypothesis", "text")


def _prefix(decider: str) -> str:
    if decider not in PREFIX:
        raise ColabkitError(f"decider must be one of {', '.join(PREFIX)}, got {decider!r}")
    return PREFIX[decider]


def pooling_table(scores: pd.DataFrame, decider: Decider = "judge") -> pd.DataFrame:
    """One row per variant with humans (`TABLE_COLUMNS`; the judge's grade and reliability added
    for the judge's numbers). A channel's share is over the variant's first appearances."""
    p = _prefix(decider)
    table = check_scores(scores, [*pooling_columns(p), "private_items"])
    rows = []
    for name in variant_order(table["variant"]):
        sessions = table[table["variant"] == name]
        if sessions["composition"].iloc[0] == "none":
            continue
        valued = sessions.dropna(subset=[p])
        firsts = {c: sessions[f"{p}_first_{c}"].sum(min_count=1) for c in CHANNELS}
        total = sum(v for v in firsts.values() if pd.notna(v))
        rows.append({"variant": name, "structure": sessions["structure"].iloc[0],
                     "composition": sessions["composition"].iloc[0], "n": len(valued),
                     "n_tasks": valued["task_id"].nunique(), "pooling": valued[p].mean(),
                     "se_task": clustered_standard_error(valued[p], valued["task_id"]),
                     "pooling_hyp": sessions[f"{p}_hyp"].mean(), "delay_rounds": sessions[f"{p}_delay"].mean(),
                     **{f"share_{c}": (v / total if total and pd.notna(v) else np.nan) for c, v in firsts.items()}})
    out = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    return with_judge_columns(out, table) if decider == "judge" else out


def pooling_figure(scores: pd.DataFrame, decider: Decider = "judge") -> Figure:
    """Stacked bars: per variant, the mean share of private items first shared via each channel."""
    p = _prefix(decider)
    table = check_scores(scores, [*pooling_columns(p), "private_items"])
    teams = [v for v in variant_order(table["variant"])
             if table.loc[table["variant"] == v, "composition"].iloc[0] != "none"]
    fig = Figure(figsize=(max(6.0, 0.9 * len(teams) + 2), 4.2), layout="constrained")
    ax = fig.subplots()
    bottoms = np.zeros(len(teams))
    empty: list[str] = []
    for c in CHANNELS:
        heights = []
        for v in teams:
            rows = table[(table["variant"] == v)].dropna(subset=[f"{p}_first_{c}", "private_items"])
            rows = rows[rows["private_items"] > 0]
            heights.append(float((rows[f"{p}_first_{c}"] / rows["private_items"]).mean()) if len(rows) else 0.0)
            if c == CHANNELS[0] and rows.empty:
                empty.append(v)
        ax.bar(teams, heights, bottom=bottoms, label=c, color=CHANNEL_COLOURS[c])
        bottoms += np.array(heights)
    for v in empty:
        reason = why_missing(table[table["variant"] == v], f"{p}_first_chat") or "no values"
        ax.text(teams.index(v), 0.02, f"no values: {reason}", rotation=90, ha="center", va="bottom", fontsize=7,
                color="grey", wrap=True)
    if not teams:
        ax.text(0.5, 0.5, "no values: no variant with simulated humans (pooling is not defined for the single agent)",
                transform=ax.transAxes, ha="center", va="center", fontsize=9, color="grey", wrap=True)
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of private items (bar height = pooling rate)")
    ax.set_title(f"Where private knowledge first appeared ({'judge' if decider == 'judge' else 'lexical bound'})")
    ax.tick_params(axis="x", rotation=45)
    ax.legend(title="first channel", fontsize=8, loc="upper right")
    lines = ["Bars: mean over sessions of the share of the humans' private items whose first appearance in "
             "the shared record was in each channel; see docs/pooling.md."]
    if decider == "judge":
        lines.append(scores_warning(table) or "")
    else:
        lines.append("Lexical lower bound: distinctive-token overlap, errs toward 'not conveyed' (no judge).")
    return caption(fig, *lines)


def pooling_items(results: Path | str, decider: Decider | None = None) -> pd.DataFrame:
    """Per private item and session, its fate as stored by the pooling scorers (`ITEM_COLUMNS`;
    each scorer's newest file; `decider` keeps one)."""
    rows = []
    wanted = {SCORER[decider]} if decider is not None else set(SCORER.values())
    for folder in finished_sessions(Path(results)):
        keys, _ = session_keys(folder)
        latest = {s.scorer: s for s in stored_scores(folder) if s.scorer in wanted}
        for name, score in sorted(latest.items()):
            for item in score.result.details.get("items", ()):
                rows.append({**{k: keys[k] for k in ITEM_COLUMNS[:6]},
                             "decider": "judge" if name == SCORER["judge"] else "lexical",
                             **{k: item.get(k) for k in ITEM_COLUMNS[7:]}})
    return pd.DataFrame(rows, columns=list(ITEM_COLUMNS))
