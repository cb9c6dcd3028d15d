"""Where each private note first appeared, for the explorer: a table per session and a step marker.

The explorer's "Private notes" tab lists every item of the simulated humans' briefings
(`colabkit.evaluation.metrics.private_items`) with where it first reached the shared record:
by the lexical lower bound, recomputed here from the stored record and events (it needs no
judge, so every session shows it, scored or not), and by the judge when the session has a
stored `pooling` score (its newest file). The step view marks an event that is the first
appearance of an item, so stepping through a session shows the hidden profile being pooled.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from colabkit.analysis.trajectory import Trajectory
from colabkit.errors import ColabkitError
from colabkit.evaluation.metrics.pooling import ItemFate, lexical_fates, session_items
from colabkit.evaluation.metrics.private_items import shared_record
from colabkit.evaluation.storage import load_context, stored_scores


@dataclass(frozen=True)
class NoteFates:
    """A session's private items with their lexical fate and, if scored, the judge's."""

    lexical: list[ItemFate]
    judged: dict[str, dict[str, Any]]
    """item id -> the stored judged fate (empty when the session has no pooling score)."""
    note: str = ""
    """Why there is nothing to show ("" when there is)."""


def note_fates(traj: Trajectory) -> NoteFates:
    """The fates of `traj`'s private items (module docstring)."""
    if traj.folder is None:
        return NoteFates([], {}, "private notes need a stored session")
    try:
        ctx = load_context(traj.folder, None, None)
        scored = [s for s in stored_scores(traj.folder) if s.scorer == "pooling"]
    except ColabkitError as exc:
        return NoteFates([], {}, f"private notes unavailable: {exc}")
    items, flags = session_items(ctx.record)
    if items is None:
        return NoteFates([], {}, "; ".join(flags))
    if not items:
        return NoteFates([], {}, "no private notes (no simulated human in this team)")
    judged = {f["item_id"]: f for f in scored[-1].result.details.get("items", ())} if scored else {}
    return NoteFates(lexical_fates(items, shared_record(ctx.events), ctx.hypothesis), judged)


def _where(fate: dict[str, Any] | None) -> str:
    if fate is None:
        return '<span style="color:#666">not scored</span>'
    if fate["pooled"] is None:
        return '<span style="color:#666">? unknown (judge gave no answer)</span>'
    if not fate["pooled"]:
        return '<span style="color:#b3261e">never shared</span>'
    if fate["channel"] is None:
        return "shared; first appearance unknown"
    return (f'<b>{html.escape(str(fate["channel"]))}</b> · event #{fate["first_seq"]} · round {fate["first_round"]} '
            f'({html.escape(str(fate["first_phase"]))}) · by {html.escape(str(fate["first_by"]))}')


def _used(fate: dict[str, Any] | None) -> str:
    value = None if fate is None else fate.get("in_hypothesis")
    return "?" if value is None else "✔" if value else ""


def render_private_notes(fates: NoteFates) -> str:
    """A table: each private item, where it first appeared (lexical bound, judge) and whether
    the submitted hypothesis uses it."""
    if fates.note:
        return f'<div class="ck-private"><i>{html.escape(fates.note)}</i></div>'
    rows = []
    for fate in fates.lexical:
        lexical = fate.model_dump(mode="json")
        judged = fates.judged.get(fate.item_id) if fates.judged else None
        rows.append(f"<tr><td><code>{html.escape(fate.item_id)}</code></td><td>{html.escape(fate.text)}</td>"
                    f"<td>{_where(lexical)}</td><td>{_used(lexical)}</td><td>{_where(judged)}</td>"
                    f"<td>{_used(judged)}</td></tr>")
    head = ("<tr><th>item</th><th>private note</th><th>first appeared (lexical bound)</th><th>in hypothesis</th>"
            "<th>first appeared (judge)</th><th>in hypothesis</th></tr>")
    return (f'<div class="ck-private"><b>Private notes: where each first reached the shared record</b>'
            f'<table style="text-align:left">{head}{"".join(rows)}</table></div>')


def first_appearances(fates: NoteFates) -> dict[int, list[str]]:
    """Event number -> the items whose first appearance it is (lexical bound, and the judge's)."""
    marks: dict[int, list[str]] = {}
    for fate in fates.lexical:
        if fate.first_seq is not None:
            marks.setdefault(fate.first_seq, []).append(f"{fate.item_id} (lexical)")
    for item_id, judged in fates.judged.items():
        if judged.get("first_seq") is not None:
            marks.setdefault(int(judged["first_seq"]), []).append(f"{item_id} (judge)")
    return marks


def render_step_marks(marks: dict[int, list[str]], seq: int) -> str:
    """The marker under a step that first shares private items ("" for any other step)."""
    if seq not in marks:
        return ""
    return ('<div class="ck-first-appearance" style="background:#e8f5e9;padding:4px">first appearance of private '
            f'note(s): {html.escape(", ".join(marks[seq]))}</div>')
