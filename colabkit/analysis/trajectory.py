"""One stored session as HTML: every event, and the workspace as it stood at each step.

The explorer notebook steps through a session with widgets, but everything it shows comes
from the functions here as plain HTML strings, so the same views render statically in an
executed notebook (and in tests) without a kernel. Sessions are read through the store's
loaders (the events table), plus the two JSON files beside it (the record and the workspace
snapshot), which are read as plain data: the viewer must keep working on sessions stored by
an older schema version, so it only uses fields when present.

What "the workspace at step i" means: the cells, chat messages and editor versions that
existed when event i was logged (their clock reading is not later than the event's).
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from colabkit.analysis.memory_dynamics import memory_versions
from colabkit.errors import ColabkitError
from colabkit.evaluation import stored_scores
from colabkit.store import SESSION_FILE, SNAPSHOT_FILE, load_events

ALL = "all"
PHASES = (ALL, "build", "task")
COLOURS = {"ai": "#1f6fb4", "D": "#2a8a3e", "R": "#c2610c", "system": "#666666"}
MAX_TEXT = 4000
# Slot names and texts read from the left, top-aligned and wrapped (notebook CSS right-aligns cells).
_MEMORY_CELL = "text-align:left;vertical-align:top;white-space:pre-wrap;padding:2px 8px"


@dataclass(frozen=True)
class Trajectory:
    """A stored session: its record, its events (store table) and its final workspace."""

    session_id: str
    record: dict[str, Any]
    events: pd.DataFrame
    snapshot: dict[str, Any]
    folder: Path | None = None
    """The session's folder (its scores are read from there); None for a trajectory built in memory."""

    @property
    def participants(self) -> list[str]:
        seen = list(dict.fromkeys(self.events["participant"]))
        return [p for p in seen if p != "system"] + (["system"] if "system" in seen else [])


def experiments(root: Path | str) -> list[Path]:
    """Results folders under `root` (and `root` itself) that hold at least one finished session."""
    root = Path(root)
    if not root.is_dir():
        return []
    candidates = [root, *sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))]
    return [c for c in candidates if any((s / SESSION_FILE).is_file() for s in c.iterdir() if s.is_dir())]


def load_trajectory(results: Path | str, session_id: str) -> Trajectory:
    """Read one finished session of `results`; fail naming the session if it is not there."""
    folder = Path(results) / session_id
    if not (folder / SESSION_FILE).is_file():
        raise ColabkitError(f"no finished session {session_id!r} in {results}")
    record = json.loads((folder / SESSION_FILE).read_text(encoding="utf-8"))
    snapshot_path = folder / SNAPSHOT_FILE
    snapshot = json.loads(snapshot_path.read_text(encoding="utf-8")) if snapshot_path.is_file() else {}
    return Trajectory(session_id, record, load_events(results, [session_id]), snapshot, folder)


def select_steps(traj: Trajectory, participant: str = ALL, phase: str = ALL) -> list[int]:
    """Positions (rows of `traj.events`) of the events of `participant` in `phase`."""
    events = traj.events
    keep = pd.Series(True, index=events.index)
    if participant != ALL:
        keep &= events["participant"] == participant
    if phase != ALL:
        keep &= events["phase"] == phase
    return [int(i) for i in events.index[keep]]


def _esc(value: object, limit: int = MAX_TEXT) -> str:
    text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    return html.escape(text if len(text) <= limit else text[:limit] + f" … [{len(text) - limit} more characters]")


def _pre(text: object, css: str = "") -> str:
    return f'<pre style="white-space:pre-wrap;margin:2px 0;padding:4px;background:#f6f6f6;{css}">{_esc(text)}</pre>'


def _who(participant: str) -> str:
    return f'<b style="color:{COLOURS.get(participant, "#333")}">{_esc(participant)}</b>'


def _present(row: pd.Series, field: str) -> Any:
    """The field's value, or None when the column is absent or the value missing (None/NaN/NA)."""
    value = row.get(field)
    return None if value is None or (pd.api.types.is_scalar(value) and pd.isna(value)) else value


def _cell_of(traj: Trajectory, row: pd.Series, args: dict[str, Any]) -> dict[str, Any] | None:
    """The snapshot cell an execute_code event produced (by `cell_index`, else by code and time)."""
    cells = traj.snapshot.get("cells", [])
    index = _present(row, "cell_index")
    if index is not None:
        return next((c for c in cells if c["index"] == int(index)), None)
    if row["status"] not in ("ok", "error"):
        return None
    matching = [c for c in cells if c["code"] == args.get("code") and c.get("time", 0) <= row["time"]]
    return matching[-1] if matching else None


def render_event(traj: Trajectory, position: int) -> str:
    """One event as a card: who did what, their private thought, arguments, result, gate."""
    row = traj.events.loc[position]
    args = json.loads(row["args_json"]) if row["args_json"] else {}
    head = (f'#{row["seq"]} · {_esc(row["phase"])} · round {row["round"]} · {_who(row["participant"])} '
            f'<code>{_esc(row["action"])}</code> <i>[{_esc(row["status"])}]</i>')
    if row.get("actor_kind") == "person":  # a step a real person took in this seat (or that timed out on one)
        head += ' <span class="ck-person" style="background:#ffe9a8;padding:0 4px;border-radius:3px">👤 person</span>'
    parts = [f"<div>{head}</div>"]
    if _present(row, "thought"):
        parts.append(f'<div style="color:#555">💭 <i>{_esc(row["thought"])}</i> (private)</div>')
    action = row["action"]
    if action == "execute_code":
        parts.append(_pre(args.get("code", "")))
        cell = _cell_of(traj, row, args)
        if cell is not None:
            output = cell.get("output", "") + (cell.get("error") or "")
            images = f" · {len(cell.get('images', []))} image(s)" if cell.get("images") else ""
            parts.append(f"<div>cell {cell['index']} → {_esc(cell['status'])}{images}</div>{_pre(output, 'background:#eef')}")
    elif action == "send_message":
        parts.append(f"<div>to {_esc(recipients(args.get('to')))}: «{_esc(args.get('text', args.get('content', '')))}»</div>")
    elif action == "edit_result":
        parts.append(_pre(args.get("text", ""), "background:#fff8e0"))
    elif action in ("propose_memory", "consolidate_memory"):
        parts.append(_pre(json.dumps(args, indent=1, ensure_ascii=False)))
    elif args and action not in ("session_start", "memory_frozen"):
        parts.append(f"<div>{_esc(json.dumps(args, ensure_ascii=False))}</div>")
    if _present(row, "request_id"):
        gate = [f"request {_esc(row['request_id'])}"]
        gate += [f"signatory {_esc(row['signatory'])}"] if _present(row, "signatory") else []
        gate += [f"proposer {_esc(row['proposer'])}"] if _present(row, "proposer") else []
        gate += [f"scope {_esc(row['gate_scope'])}"] if _present(row, "gate_scope") else []
        gate += [f"note «{_esc(row['gate_note'])}»"] if _present(row, "gate_note") else []
        gate += [f"<b>{_esc(row['decision'])}</b>: {_esc(row['decision_reason'])}"] if _present(row, "decision") else []
        parts.append(f'<div style="color:#7a2e8a">🔒 {" · ".join(gate)}</div>')
    if _present(row, "result"):
        parts.append(f'<div style="color:#333">→ {_esc(row["result"], 600)}</div>')
    return ('<div class="ck-event" style="border-left:4px solid '
            f'{COLOURS.get(row["participant"], "#333")};padding:4px 8px;margin:6px 0">{"".join(parts)}</div>')


def recipients(to: object) -> str:
    """A message's recipients as names: a list of ids joined, "all" for none, and the text a
    failed step wrote as it stands (it is a string, e.g. "none;", never split into letters)."""
    if isinstance(to, str) and to.strip():
        return f"{to!r} (as written)"
    if isinstance(to, list | tuple) and to:
        return ", ".join(map(str, to))
    return "all"


def workspace_at(traj: Trajectory, position: int) -> dict[str, list[dict[str, Any]]]:
    """Cells, messages and editor versions that existed when the event at `position` was logged."""
    when = float(traj.events.loc[position, "time"])
    return {kind: [item for item in traj.snapshot.get(kind, []) if item.get("time", 0) <= when]
            for kind in ("cells", "messages", "editor_versions")}


def render_workspace(traj: Trajectory, position: int) -> str:
    """The chat so far, the number of cells, and the editor's text at that step."""
    state = workspace_at(traj, position)
    chat = "".join(f"<div>{_who(m['sender'])} → {_esc(recipients(m.get('to')))}: {_esc(m['text'])}</div>"
                   for m in state["messages"]) or "<div><i>no messages yet</i></div>"
    versions = state["editor_versions"]
    editor = (f"<div>editor version {versions[-1]['index']} by {_who(versions[-1]['author'])}</div>"
              + _pre(versions[-1]["text"], "background:#fff8e0")) if versions else "<div><i>editor empty</i></div>"
    return (f'<div class="ck-workspace"><h4 style="margin:4px 0">Workspace at this step: '
            f'{len(state["cells"])} cell(s), {len(state["messages"])} message(s)</h4>'
            f"<b>Chat</b>{chat}<b>Result editor</b>{editor}</div>")


def render_step(traj: Trajectory, steps: list[int], index: int) -> str:
    """Step `index` of the filtered `steps`: its event card and the workspace at that moment."""
    if not steps:
        return '<div class="ck-step"><i>no events match the filter</i></div>'
    index = max(0, min(index, len(steps) - 1))
    return (f'<div class="ck-step"><div class="ck-step-counter"><b>step {index + 1} of {len(steps)}</b></div>'
            f"{render_event(traj, steps[index])}{render_workspace(traj, steps[index])}</div>")


def render_memory(traj: Trajectory) -> str:
    """The Shared Group Memory as the build froze it (slots and gate table) and, for a living
    memory, every later version with the change that made it; or a note that there was none."""
    memory = traj.record.get("memory")
    if not memory:
        return "<div><i>this variant has no Shared Group Memory</i></div>"
    rows = "".join(f"<tr><th style='{_MEMORY_CELL}'>{_esc(k.replace('_', ' '))}</th>"
                   f"<td style='{_MEMORY_CELL}'>{_esc(v)}</td></tr>" for k, v in memory.items() if k != "gates")
    gates = (memory.get("gates") or {}).get("rules", [])
    gate_rows = "".join(f"<li><code>{_esc(g['action'])}</code> signed by {_who(g['signatory'])}"
                        f"{' when ' + _esc(g['condition']) if g.get('condition') else ''}</li>" for g in gates)
    digest = _esc((traj.record.get("memory_digest") or "")[:12])
    gate_part = f"<b>Gates</b><ul>{gate_rows}</ul>" if memory.get("gates") is not None else ""
    versions = memory_versions(traj.events, traj.session_id)
    title = "Memory as built (version 1)" if versions else "Frozen memory"
    later = "".join(f"<li>version {v['version']} <code>{_esc(v['digest'][:12])}</code>, round {v['round']}: "
                    f"{_esc(v['update_id'])} by {_who(v['proposer'])} set <b>{_esc(v['slot'].replace('_', ' '))}</b>"
                    f" to {_esc(_slot_text(v['memory'], v['slot']))}</li>" for v in versions)
    later_part = f"<b>Later versions (approved by the team)</b><ol>{later}</ol>" if versions else ""
    return (f'<div class="ck-memory"><b>{title} {digest}</b><table style="border-collapse:collapse">{rows}</table>'
            f"{gate_part}{later_part}</div>")


def _slot_text(memory: dict[str, Any], slot: str) -> str:
    if slot != "gates":
        return str(memory.get(slot, ""))
    rules = (memory.get("gates") or {}).get("rules", [])
    return "; ".join(f"{r['action']} -> {r['signatory']}" for r in rules) or "no gates"


def render_thoughts(traj: Trajectory, participant: str) -> str:
    """Every private thought of one participant, in order, with the action it led to."""
    rows = traj.events[(traj.events["participant"] == participant) & traj.events["thought"].notna()]
    items = "".join(f"<li>#{r.seq} {_esc(r.phase)} r{r.round} <code>{_esc(r.action)}</code>: {_esc(r.thought)}</li>"
                    for r in rows.itertuples())
    return f"<div>{_who(participant)}'s thoughts<ol>{items or '<i>none</i>'}</ol></div>"


def render_header(traj: Trajectory) -> str:
    """Task, variant, seed, how the session ended and the submitted hypothesis."""
    rec = traj.record
    return (f'<div class="ck-header"><h3 style="margin:4px 0">Session {_esc(traj.session_id)}</h3>'
            f"<div>task <code>{_esc(rec.get('task_id'))}</code> · variant <b>{_esc(rec['spec']['variant']['name'])}</b>"
            f" · seed {_esc(rec.get('seed'))} · ended by <b>{_esc(rec.get('ended_by'))}</b>"
            f" · {len(traj.events)} events</div><div>submitted hypothesis:</div>"
            f"{_pre(rec.get('final_hypothesis') or '(empty)', 'background:#fff8e0')}</div>")


def stored_claim_links(folder: Path) -> list[dict[str, Any]] | None:
    """The newest S_hyp score's claims with their verdicts and supporting cells, or None when
    the session has no S_hyp score that stores them (unscored, or scored before version 2)."""
    scored = [s for s in stored_scores(folder) if s.scorer == "s_hyp" and "evidence" in s.result.details]
    return list(scored[-1].result.details["evidence"]) if scored else None


def render_claims(traj: Trajectory) -> str:
    """The submitted hypothesis claim by claim, each linked to the cell the judge found supports
    it (its code and output), or marked unsupported or not judged."""
    try:
        evidence = stored_claim_links(traj.folder) if traj.folder is not None else None
    except ColabkitError as exc:  # a damaged score file: the rest of the session still shows
        return f'<div class="ck-claims"><i>claims unavailable: {_esc(exc)}</i></div>'
    if evidence is None:
        return '<div class="ck-claims"><i>no S_hyp score with claim links for this session (run colabkit score)</i></div>'
    cells = {c["index"]: c for c in traj.snapshot.get("cells", [])}
    items = []
    for claim in evidence:
        if claim["supported"] is None:
            verdict = '<span style="color:#666">? not judged (missing)</span>'
            body = ""
        elif not claim["supported"]:
            verdict, body = '<span style="color:#b3261e">✘ unsupported</span>', ""
        else:
            ids = ", ".join(claim.get("event_ids") or ()) or "no event"
            verdict = f'<span style="color:#2a8a3e">✔ supported by cell {claim["cell"]}</span> <code>{_esc(ids)}</code>'
            cell = cells.get(claim["cell"], {})
            body = _pre(cell.get("code", "")) + _pre(cell.get("output", ""), "background:#eef")
        reason = f'<div style="color:#555"><i>{_esc(claim.get("reason"))}</i></div>' if claim.get("reason") else ""
        items.append(f'<li class="ck-claim"><b>{_esc(claim["claim"])}</b> {verdict}{reason}{body}</li>')
    return f'<div class="ck-claims"><b>Claims of the submitted hypothesis</b><ol>{"".join(items) or "<i>no claims</i>"}</ol></div>'


def render_session(traj: Trajectory, participant: str = ALL, phase: str = ALL) -> str:
    """The whole session statically: header, claims, memory, every (filtered) event, each one's thoughts."""
    cards = "".join(render_event(traj, p) for p in select_steps(traj, participant, phase))
    thoughts = "".join(render_thoughts(traj, p) for p in traj.participants if p != "system")
    return (f'<div class="ck-session">{render_header(traj)}{render_claims(traj)}{render_memory(traj)}'
            f"<h4>Events ({_esc(participant)}, phase {_esc(phase)})</h4>{cards}<h4>Thoughts</h4>{thoughts}</div>")
