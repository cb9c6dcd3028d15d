"""The items an observation is made of, each already sized by the profile, and their text.

Views of chat messages, code cells (and the notebook fitted to its budget), approval
requests, activity lines and thoughts; `clip` and `recent` are the two ways a section is
kept within the profile (cut one item, keep the most recent that fit). Each view carries
the time it happened, so the timeline can show them in order. `observation.py` puts them
together for one participant.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from colabkit.session.events import Event
from colabkit.session.prompting.profile import ObservationProfile
from colabkit.session.structure.gating import Request

T = TypeVar("T")


def unstated_query(query: str, briefing: str) -> str:
    """The query, or "" when the briefing already states it (the team layer's briefings open
    with it): a prompt says it once, in the build phase and the task phase alike."""
    return "" if query.strip() in briefing else query


def clip(text: str, limit: int | None) -> str:
    """`text` cut to `limit` characters (None: whole), saying how much was cut."""
    text = text.strip()
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()} ...[+{len(text) - limit} chars]"


class MessageView(BaseModel):
    model_config = ConfigDict(frozen=True)
    index: int
    sender: str
    to: tuple[str, ...] | None
    text: str
    time: float = 0.0


class CellView(BaseModel):
    model_config = ConfigDict(frozen=True)
    index: int
    author: str
    status: str
    code: str
    output: str
    summarised: bool = False
    time: float = 0.0


class Thought(BaseModel):
    """One private thought as its owner's scratchpad holds it: when it was formed (so it can
    take its place in the timeline) and the action it led to."""

    model_config = ConfigDict(frozen=True)
    round: int
    action: str
    text: str
    time: float = 0.0

    def line(self) -> str:
        return f"{self._head()}{self.text}"

    def clipped(self, limit: int | None) -> Thought:
        """The thought with its line (what the compact profile shows) cut to `limit` characters."""
        return self.model_copy(update={"text": clip(self.line(), limit)[len(self._head()):]})

    def _head(self) -> str:
        return f"r{self.round} {self.action}: "


class ActivityView(BaseModel):
    model_config = ConfigDict(frozen=True)
    line: str
    time: float = 0.0


class RequestView(BaseModel):
    model_config = ConfigDict(frozen=True)
    request_id: str
    proposer: str
    signatory: str
    action: str
    condition: str
    status: str
    reason: str
    proposal: str = ""  # the proposed action in full (for its signatory)
    depends_on: tuple[CellView, ...] = ()
    time: float = 0.0  # when it was decided (its place in the proposer's timeline)


def message_line(message: MessageView) -> str:
    to = ",".join(message.to) if message.to else "all"
    return f"[#{message.index} {message.sender} -> {to}] {message.text}"


def cell_text(cell: CellView) -> str:
    output = f"(output summarised) {cell.output}" if cell.summarised else cell.output or "(no output)"
    return f"[cell {cell.index} by {cell.author}: {cell.status}]\n>>> {cell.code}\n{output}"


def request_line(request: RequestView) -> str:
    line = f"{request.request_id} from {request.proposer} to {request.signatory} [{request.status}]: {request.action}"
    if request.condition:
        line += f" (rule: {request.condition})"
    if request.reason:
        line += f" -- reason: {request.reason}"
    return line


def request_for_signatory(request: RequestView, shown: set[int]) -> str:
    """The request, the proposed action whole, and the cells it depends on (by index if above)."""
    lines = [request_line(request), f"Proposed action in full:\n{request.proposal}"]
    if request.depends_on:
        above = [str(c.index) for c in request.depends_on if c.index in shown]
        rest = [c for c in request.depends_on if c.index not in shown]
        head = "It depends on the cells run before it, most recent first"
        noun = "cell" if len(above) == 1 else "cells"
        lines.append(head + (f": {noun} {', '.join(above)} (shown above)" if above else ":"))
        lines.extend(cell_text(c) for c in rest)
    else:
        lines.append("No cells had been run when it was proposed.")
    return "\n".join(lines)


def request_view(request: Request, profile: ObservationProfile,
                 depends_on: Sequence[CellView] = (), time: float = 0.0) -> RequestView:
    payload = request.action.payload.strip()
    target = f" to {','.join(request.action.to)}" if request.action.to else ""
    return RequestView(
        request_id=request.request_id,
        proposer=request.proposer,
        signatory=request.signatory,
        action=request.action.describe(profile.activity_chars),
        condition=request.condition,  # whole: the team's note is bounded when written (NOTE_MAX_CHARS)
        status=request.status,
        reason=clip(request.reason, profile.message_chars),  # a signatory's word to the proposer
        proposal=f"{request.action.type}{target}:\n{clip(payload, profile.request_chars)}" if payload
        else request.action.type,
        depends_on=tuple(depends_on),
        time=time,
    )


def activity_line(event: Event, limit: int) -> str:
    """One event as a short line without its thought (thoughts are private); an approved action
    taking effect (`Event.kind` "effect") without its request id, as the common part shows it."""
    line = f"r{event.round} {event.participant} {event.action}"
    if event.request_id and event.kind != "effect":  # an effect reads as its Default twin's step
        line += f" {event.request_id}"
    line += f" -> {event.status}"
    payload = next((str(event.args[k]) for k in ("text", "code", "reason") if event.args.get(k)), "")
    if payload:
        line += ": " + " ".join(payload.split())
    return clip(line, limit)


def recent(items: Sequence[T], keep: int | None, budget: int | None = None,
            size: Callable[[T], int] = lambda _: 0) -> tuple[list[T], int]:
    """The most recent `keep` items (None: all) that fit `budget` by `size`; and how many are left out."""
    kept: list[T] = []
    used = 0
    for item in reversed(items[-keep:] if keep is not None else items):
        used += size(item)
        if budget is not None and kept and used > budget:
            break
        kept.append(item)
    kept.reverse()
    return kept, len(items) - len(kept)


def cell_output(cell: Any) -> str:
    """A cell's output plus the first line of its error (the traceback is too long to show)."""
    return f"{cell.output}\n{cell.error.splitlines()[0]}".strip() if cell.error else cell.output.strip()


def cell_view(cell: Any, profile: ObservationProfile) -> CellView:
    return CellView(index=cell.index, author=cell.author, status=cell.status, time=cell.time,
                    code=clip(cell.code, profile.code_chars), output=clip(cell_output(cell), profile.output_chars))


def _summarised(cell: CellView, limit: int) -> CellView:
    """The cell with its output cut to its first line (at most `limit` chars) and its size."""
    first = next((line for line in cell.output.splitlines() if line.strip()), "")
    summary = f"{clip(first, limit)} [{len(cell.output)} chars, {len(cell.output.splitlines())} lines]"
    return cell.model_copy(update={"output": summary, "summarised": True})


def _cell_size(cell: CellView) -> int:
    return len(cell.code) + len(cell.output) + 40


def notebook(cells: Sequence[Any], profile: ObservationProfile) -> tuple[list[CellView], int]:
    """The notebook within the profile: the newest `cells`, oldest outputs summarised first to fit
    `notebook_chars`, then the oldest cells left out; returns the views and how many were left out."""
    views = [cell_view(c, profile) for c in (cells[-profile.cells:] if profile.cells is not None else cells)]
    total = sum(_cell_size(v) for v in views)
    for i, view in enumerate(views):
        if total <= profile.notebook_chars:
            break
        short = _summarised(view, profile.summary_chars)
        if _cell_size(short) < _cell_size(view):
            total += _cell_size(short) - _cell_size(view)
            views[i] = short
    kept, _ = recent(views, None, profile.notebook_chars, _cell_size)
    return kept, len(cells) - len(kept)
