"""What one participant sees before a step: built as a typed object, then rendered as text.

Visibility follows the study. The AI agent sees the whole team's history: every code cell
with its output, every message (also those between humans), every action in the activity
list (edits, decisions, requests). A simulated human sees its own cells and actions, the
messages addressed to it or to all, the current editor text and the approval requests
addressed to it, never another member's code, outputs or thoughts. Thoughts appear only in
their owner's scratchpad. The frozen memory, when there is one, is in every task-phase
observation.

The rendered prompt must fit a tiny local model (~2000 tokens with the persona), so every
section shows only its most recent items, each clipped, and says how many older ones were
left out. `view_key` hashes only the shared-world part, so the scheduler can tell whether a
participant has anything new in view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from colabkit.hashing import sha256_hex
from colabkit.session.actions import action_help
from colabkit.session.events import SYSTEM, Event
from colabkit.session.gating import Gatekeeper, Request

# Per-section caps (characters or items). Briefings arrive capped at 1,600 characters by the
# team layer. With a ~900-character persona the worst-case prompt stays near 2,500 tokens
# and a typical one under 1,500. The stable parts (briefing, memory, team) come first so
# the embedded model can reuse its cached prefix from one step to the next.
QUERY_CHARS, BRIEFING_CHARS, MEMORY_CHARS, EDITOR_CHARS = 400, 1600, 1400, 400
MESSAGES, MESSAGE_CHARS = 5, 200
CELLS, CODE_CHARS, OUTPUT_CHARS = 2, 250, 350
ACTIVITY, ACTIVITY_CHARS = 6, 100
REQUESTS, REQUEST_CHARS = 3, 250
NOTES, NOTE_CHARS, FEEDBACK_CHARS = 4, 160, 200
_WORLD_FIELDS = {"messages", "older_messages", "cells", "older_cells", "activity", "older_activity",
                 "editor", "requests_for_me", "my_requests"}


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()} ...[+{len(text) - limit} chars]"


class MessageView(BaseModel):
    model_config = ConfigDict(frozen=True)
    index: int
    sender: str
    to: tuple[str, ...] | None
    text: str


class CellView(BaseModel):
    model_config = ConfigDict(frozen=True)
    index: int
    author: str
    status: str
    code: str
    output: str


class RequestView(BaseModel):
    model_config = ConfigDict(frozen=True)
    request_id: str
    proposer: str
    signatory: str
    action: str
    condition: str
    status: str
    reason: str


class Observation(BaseModel):
    """Everything one participant may see at one moment (before clipping for the prompt)."""

    model_config = ConfigDict(frozen=True)

    participant: str
    team: tuple[str, ...]
    names: tuple[str, ...]
    round: int
    actions_left: int
    query: str
    briefing: str
    memory: str | None
    editor: str
    messages: tuple[MessageView, ...]
    older_messages: int
    cells: tuple[CellView, ...]
    older_cells: int
    activity: tuple[str, ...]
    older_activity: int
    requests_for_me: tuple[RequestView, ...]
    my_requests: tuple[RequestView, ...]
    scratchpad: tuple[str, ...]
    feedback: str
    valid_actions: tuple[str, ...]

    def view_key(self) -> str:
        """Hash of what the team's actions can change in this view (not notes or counters)."""
        return sha256_hex(self.model_dump(mode="json", include=_WORLD_FIELDS))

    def render(self) -> str:
        """The observation as the prompt text the participant's model reads."""
        # The team layer's briefings already open with the query; do not spend tokens twice.
        parts = [] if self.query.strip() in self.briefing else [f"# Task\n{clip(self.query, QUERY_CHARS)}"]
        parts.append(f"# Your private briefing\n{clip(self.briefing, BRIEFING_CHARS) or '(none)'}")
        if self.memory is not None:
            parts.append(f"# {clip(self.memory, MEMORY_CHARS)}")  # its first line is its own title
        members = ", ".join(f"{pid} ({name})" for pid, name in zip(self.team, self.names))
        parts.append(f"# Team\nYou are {self.participant}. Team: {members}.")
        parts.append(f"# Result editor (the submitted hypothesis)\n{clip(self.editor, EDITOR_CHARS) or '(empty)'}")
        parts.append(_section("Chat", self.older_messages, "messages",
                              [_message_line(m) for m in self.messages]))
        parts.append(_section("Code cells", self.older_cells, "cells", [_cell_text(c) for c in self.cells]))
        parts.append(_section("Activity", self.older_activity, "actions", list(self.activity)))
        if self.requests_for_me:
            parts.append("# Approval requests for you (approve or reject each)\n"
                         + "\n".join(_request_line(r) for r in self.requests_for_me))
        if self.my_requests:
            parts.append("# Your requests\n" + "\n".join(_request_line(r) for r in self.my_requests))
        if self.scratchpad:
            # Not "private notes": the briefing calls what the persona knows that, and a model
            # told to answer from its notes must not mistake its own guesses for them.
            parts.append("# Your recent thoughts (private)\n"
                         + "\n".join(f"- {note}" for note in self.scratchpad))
        if self.feedback:
            parts.append(f"# Your last step\n{self.feedback}")
        help_lines = action_help(self.valid_actions, self.participant, self.team)
        parts.append(f"# Now (round {self.round}, {self.actions_left} team actions left)\n"
                     "Reply with JSON: thought, action, content, to. Valid actions:\n"
                     + "\n".join(f"- {line}" for line in help_lines))
        return "\n\n".join(parts)


def _section(title: str, older: int, noun: str, lines: list[str]) -> str:
    if not lines:
        return f"# {title}\n(none)"
    head = f"# {title} ({older} older {noun} not shown)" if older else f"# {title}"
    return head + "\n" + "\n".join(lines)


def _message_line(message: MessageView) -> str:
    to = ",".join(message.to) if message.to else "all"
    return f"[#{message.index} {message.sender} -> {to}] {message.text}"


def _cell_text(cell: CellView) -> str:
    return f"[cell {cell.index} by {cell.author}: {cell.status}]\n>>> {cell.code}\n{cell.output or '(no output)'}"


def _request_line(request: RequestView) -> str:
    line = f"{request.request_id} from {request.proposer} to {request.signatory} [{request.status}]: {request.action}"
    if request.condition:
        line += f" (rule: {request.condition})"
    if request.reason:
        line += f" -- reason: {request.reason}"
    return line


def request_view(request: Request) -> RequestView:
    return RequestView(
        request_id=request.request_id,
        proposer=request.proposer,
        signatory=request.signatory,
        action=request.action.describe(REQUEST_CHARS),
        condition=clip(request.condition, 120),
        status=request.status,
        reason=clip(request.reason, 120),
    )


def activity_line(event: Event) -> str:
    """One event as a short line without its thought (thoughts are private)."""
    line = f"r{event.round} {event.participant} {event.action}"
    if event.request_id:
        line += f" {event.request_id}"
    line += f" -> {event.status}"
    payload = next((str(event.args[k]) for k in ("text", "code", "reason") if event.args.get(k)), "")
    if payload:
        line += ": " + " ".join(payload.split())
    return clip(line, ACTIVITY_CHARS)


def _recent(items: Sequence[Any], keep: int) -> tuple[list[Any], int]:
    kept = list(items[-keep:]) if keep else []
    return kept, len(items) - len(kept)


def build_observation(
    *,
    participant: str,
    team: Sequence[str],
    names: Sequence[str],
    sees_all: bool,
    round: int,
    actions_left: int,
    query: str,
    briefing: str,
    memory: str | None,
    workspace: Any,
    gatekeeper: Gatekeeper,
    events: Sequence[Event],
    scratchpad: Sequence[str],
    valid_actions: Sequence[str],
) -> Observation:
    """Assemble `participant`'s view from the workspace, the gates and the event log."""
    chat = workspace.chat.messages if sees_all else workspace.chat.visible_to(participant)
    messages, older_messages = _recent(chat, MESSAGES)
    cells, older_cells = _recent(workspace.cells_visible_to(participant, sees_all=sees_all), CELLS)
    task_events = [e for e in events if e.phase == "task" and e.participant != SYSTEM]
    own = [e for e in task_events if e.participant == participant]
    # Waits and failed steps change nothing, so they are not news to anyone (the actor
    # learns of its own through `feedback`); listing them would wake everyone forever.
    # Delivered messages and run cells are already shown in full in their own sections.
    done = [e for e in task_events if e.action != "wait" and e.status != "failed_step"
            and not (e.action in ("send_message", "execute_code") and e.status in ("ok", "error"))]
    activity, older_activity = _recent(done if sees_all else [e for e in done if e.participant == participant],
                                       ACTIVITY)
    my_requests, _ = _recent(gatekeeper.proposed_by(participant), REQUESTS)
    return Observation(
        participant=participant,
        team=tuple(team),
        names=tuple(names),
        round=round,
        actions_left=actions_left,
        query=query,
        briefing=briefing,
        memory=memory,
        editor=workspace.editor.text,
        messages=tuple(
            MessageView(index=m.index, sender=m.sender, to=m.to, text=clip(m.text, MESSAGE_CHARS)) for m in messages
        ),
        older_messages=older_messages,
        cells=tuple(_cell_view(c) for c in cells),
        older_cells=older_cells,
        activity=tuple(activity_line(e) for e in activity),
        older_activity=older_activity,
        requests_for_me=tuple(request_view(r) for r in gatekeeper.addressed_to(participant)[:REQUESTS]),
        my_requests=tuple(request_view(r) for r in my_requests),
        scratchpad=tuple(clip(note, NOTE_CHARS) for note in scratchpad[-NOTES:]),
        feedback=clip(_feedback(own[-1]), FEEDBACK_CHARS) if own else "",
        valid_actions=tuple(valid_actions),
    )


def cell_output(cell: Any) -> str:
    """A cell's output plus the first line of its error (the traceback is too long to show)."""
    return f"{cell.output}\n{cell.error.splitlines()[0]}".strip() if cell.error else cell.output.strip()


def _cell_view(cell: Any) -> CellView:
    return CellView(index=cell.index, author=cell.author, status=cell.status,
                    code=clip(cell.code, CODE_CHARS), output=clip(cell_output(cell), OUTPUT_CHARS))


def _feedback(event: Event) -> str:
    """What the participant's own last step came to, so failures can be corrected."""
    text = f"{event.action} -> {event.status}"
    return f"{text}: {event.result}" if event.result else text
