"""The explorer's first view: a table of an experiment's sessions, team sessions first.

One row per finished session: its variant, task and seed, how it ended, the AI's and the
humans' task-phase steps, messages, the delivered hypothesis (shortened) and, once the
experiment is scored, its performance and HMS. The AI's steps are two columns, as the
record's `Totals` counts them: `ai_turns` every turn it took, its waits included (what the
"ai_budget" termination rule spends), and `ai_actions` the turns it did something (no waits;
what the score table's `ai_steps` and the study table's run columns count); `human_actions`
is the humans' non-wait steps together. Team sessions come first (variants with
simulated humans, the point of the study), then the single agent, each by variant, task,
seed; so the first row, which the explorer selects by default, is a team session when
there is one.
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from colabkit.evaluation import load_scores
from colabkit.store import load_sessions

COLUMNS = ("session_id", "variant", "task_id", "seed", "ending", "ai_turns", "ai_actions", "human_actions",
           "messages", "hypothesis", "performance", "hms")
HYPOTHESIS_CHARS = 90


def session_table(results: Path | str) -> pd.DataFrame:
    """The finished sessions of `results`, team sessions first (see the module docstring)."""
    sessions = load_sessions(results)
    table = pd.DataFrame({
        "session_id": sessions["session_id"], "variant": sessions["variant"], "task_id": sessions["task_id"],
        "seed": sessions["seed"], "ending": sessions["ended_by"],
        "ai_turns": sessions["ai_turns"].astype("Int64"), "ai_actions": sessions["ai_actions"].astype("Int64"),
        "human_actions": sessions["human_actions"].astype("Int64"),
        "messages": sessions["messages"].astype("Int64"),
        "hypothesis": sessions["final_hypothesis"].map(_short), "team": sessions["humans"] != ""})
    scores = _scores(results)
    table = table.merge(scores, on="session_id", how="left") if len(scores) else table.assign(performance=None, hms=None)
    table = table.sort_values(["team", "variant", "task_id", "seed"], ascending=[False, True, True, True])
    return table[list(COLUMNS)].reset_index(drop=True)


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= HYPOTHESIS_CHARS else text[:HYPOTHESIS_CHARS - 1] + "…"


def _scores(results: Path | str) -> pd.DataFrame:
    """Performance and HMS per session (the first judge's, when several judged it); empty unscored."""
    scores = load_scores(results)
    present = [c for c in ("performance", "hms") if c in scores.columns]
    if not len(scores) or not present:
        return pd.DataFrame()
    return scores.groupby("session_id", as_index=False)[present].first()


def render_session_table(table: pd.DataFrame, selected: str | None = None) -> str:
    """The table as HTML; the `selected` session's row is marked."""
    head = "".join(f"<th>{html.escape(c.replace('_', ' '))}</th>" for c in COLUMNS)
    rows = []
    for row in table.itertuples(index=False):
        cells = "".join(f"<td>{html.escape(_cell(getattr(row, c)))}</td>" for c in COLUMNS)
        mark = ' class="ck-selected" style="background:#fff3c4"' if row.session_id == selected else ""
        rows.append(f"<tr{mark}>{cells}</tr>")
    return ('<table class="ck-sessions" style="border-collapse:collapse;font-size:12px">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _cell(value: object) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "–"
    return f"{value:.2f}" if isinstance(value, float) else str(value)
