"""What one participant sees before a step: built as a typed object, then rendered as text.

Visibility follows the study: a participant acts on the last observation of the shared
workspace, the frozen memory and its own action history; only the AI agent sees the whole
team's action history. So everyone sees every code cell with its output, the result editor
and the public chat (plus the messages addressed to it). The AI agent also sees the
messages between others and the team's activity list (edits, decisions, requests); a
simulated human sees its own activity only. A thought is seen by its owner only, nobody
else (the AI agent included). The frozen memory, when there is one, is in every task-phase
observation, and so are the gate rules in force, when the variant has gates (one section,
the same for Scaffolded and Preassigned but for its "Set by" line; see `gating.gate_rules_text`).

A signatory deciding a request sees the proposed action in full and the cells it depends
on. "Depends on" means the cells run before the request was made, by anyone: the kernel
state the action was proposed on and the evidence it was proposed from. They are shown
most recent first, up to the profile's `request_cells`, each by index only when it is
already in the notebook section.

How much of each section is shown is the session's `ObservationProfile` (one per run, from
the models' context window; see `profile.py`): under "full" nothing is cut and the notebook
is shown whole up to a budget, summarising the oldest outputs first; under "compact" every
section shows its most recent items, each clipped, and says how many were left out. The
items themselves (views of cells, messages, requests, activity lines, thoughts) are built
in `views.py`.

The order serves prefix caching (a provider's, or the embedded model's per-caller
context): a step's prompt should equal the participant's previous prompt plus what
happened since, so only the new part is billed and prefilled at full price. The stable
parts (briefing, memory, team, the valid actions: exactly the answer schema's actions, so
they change only when a request opens or closes for the participant or its budget is spent)
come first, then the timeline, which
grows by appending: code cells and chat messages in the order they happened. Under "full"
(`ObservationProfile.timeline`) the timeline also holds the participant's activity list and
its own thoughts (each where it was formed, before the cell or message it led to), the most
recent that fit one budget as large as the chat's; after it come only what is current: the
result editor, open requests, a failed last step, round and budget. Under "compact" the
activity list, the `notes` most recent thoughts and the last step's outcome are sections
after the timeline.

Common part and structure part (issue 42): the activity list holds only common lines, what a
Default twin shows too (a member's own steps that took effect, and an approved action taking
effect, shown as its twin's step without the request id). Structure bookkeeping (requests
held, decisions, closing steps: `Event.kind`) never takes room from a common line: it is the
section "Requests and decisions" after the common part, with a budget of its own (the
activity list's under "compact", the chat's under "full"), and a member's own requests are
the section "Your requests" (the profile's `requests` most recent), never timeline entries. `benchmarks/prompts.py`
measures the reuse this gives. Whether a participant has anything new in view is the
scheduler's (`scheduler.acts_in_view`: its teammates' acts, never what a structure adds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from colabkit.session.actions import action_help
from colabkit.session.actions import valid_actions as valid_actions_for
from colabkit.session.events import SYSTEM, Event
from colabkit.session.prompting.profile import ObservationProfile
from colabkit.session.prompting.views import (
    ActivityView,
    CellView,
    MessageView,
    RequestView,
    Thought,
    activity_line,
    cell_text,
    cell_view,
    clip,
    message_line,
    notebook,
    recent,
    request_for_signatory,
    request_line,
    request_view,
    unstated_query,
)
from colabkit.session.structure.gating import BOOKKEEPING_TITLE, Gatekeeper, Request

_DECISIONS = ("approve", "reject")
class Observation(BaseModel):
    """Everything one participant may see at one moment, already sized by the profile."""

    model_config = ConfigDict(frozen=True)

    participant: str
    team: tuple[str, ...]
    names: tuple[str, ...]
    round: int
    actions_left: int
    budget_holder: str
    ai_actions_left: int | None = None  # the AI agent's steps left, shown to every other member (None: the AI itself)
    closing: bool = False  # the engine's closing pass: the session has ended, only open requests are decided
    deciding: bool = False  # a decision step (at its turn, or right after a proposal under `gate_latency: at_once`)
    end_rule: str = ""  # when the session ends (`SessionSettings.end_rule`), the same text in every variant
    query: str  # "" when the briefing already states it
    briefing: str
    memory: str | None
    gate_rules: str | None
    sections: tuple[tuple[str, str], ...] = ()  # a plugin structure's own sections (title, text), after the gate rules
    editor: str
    messages: tuple[MessageView, ...]
    older_messages: int
    cells: tuple[CellView, ...]
    older_cells: int
    activity: tuple[ActivityView, ...]
    older_activity: int
    bookkeeping: tuple[ActivityView, ...] = ()  # requests and decisions (machinery), apart from `activity`
    older_bookkeeping: int = 0
    requests_for_me: tuple[RequestView, ...]  # newest first
    other_requests_for_me: int = 0  # open for it but cut by the profile (the oldest)
    open_ids: tuple[str, ...] = ()  # every request and memory update open for it: what approve/reject may name
    my_requests: tuple[RequestView, ...]
    older_requests: int
    scratchpad: tuple[Thought, ...]
    older_thoughts: int
    timeline: bool  # the full profile's layout (`ObservationProfile.timeline`)
    feedback: str
    valid_actions: tuple[str, ...]
    standing_actions: tuple[str, ...]  # what it may do while its side has budget (a person's form reads these)
    updates_for_me: tuple[str, ...] = ()  # a living memory's open updates awaiting this participant's answer
    my_updates: tuple[str, ...] = ()  # the updates it proposed, with their fate

    def render(self) -> str:
        """The observation as the prompt text the participant's model reads."""
        parts = [f"# Task\n{self.query}"] if self.query else []
        parts.append(f"# Your private briefing\n{self.briefing or '(none)'}")
        if self.memory is not None:
            parts.append(f"# {self.memory}")  # its first line is its own title
        if self.gate_rules is not None:
            parts.append(f"# {self.gate_rules}")  # likewise
        parts += [f"# {title}\n{text}" for title, text in self.sections]
        members = ", ".join(f"{pid} ({name})" for pid, name in zip(self.team, self.names))
        parts.append(f"# Team\nYou are {self.participant}. Team: {members}."
                     + (f"\n{self.end_rule}" if self.end_rule else ""))
        # Exactly the actions the answer's schema offers (its enum), approve/reject included while
        # a request is open for you: one list, so the text and the grammar cannot disagree.
        help_lines = action_help(self.valid_actions, self.participant, self.team, self.open_ids)
        reply = "Reply with JSON: thought, action, content, to (one of the valid actions above)."
        # In the timeline layout the reply format, the same every step, is said here, so the
        # prompt ends on what changes: round and budget.
        parts.append("# Valid actions\n" + "\n".join(f"- {line}" for line in help_lines)
                     + (f"\n{reply}" if self.timeline else ""))
        # What grows by appending next, then the editor, which is rewritten in place.
        parts.append(self._timeline())
        if not self.timeline:
            parts.append(_section("Activity", self.older_activity, "actions", [a.line for a in self.activity]))
        if self.bookkeeping:  # after the common part, in a budget of its own (`build_observation`)
            parts.append(_section(BOOKKEEPING_TITLE, self.older_bookkeeping, "lines",
                                  [a.line for a in self.bookkeeping]))
        parts.append(f"# Result editor (the submitted hypothesis)\n{self.editor or '(empty)'}")
        if self.requests_for_me:
            shown = {c.index for c in self.cells}
            listed = {r.request_id for r in self.requests_for_me}
            older = [i for i in self.open_ids if i.startswith("req-") and i not in listed]  # every id `to` may name
            rest = (f"\n({self.other_requests_for_me} older requests for you not shown: {', '.join(older)}; they "
                    "come next)" if self.other_requests_for_me else "")
            parts.append(f"# Approval requests for you (newest first; {self._how_decided()})\n"
                         + "\n".join(request_for_signatory(r, shown) for r in self.requests_for_me) + rest)
        if self.my_requests:  # structure bookkeeping: never an entry of the common timeline
            parts.append("# Your requests\n" + "\n".join(request_line(r) for r in self.my_requests))
        if self.updates_for_me:
            parts.append(f"# Memory updates for you ({self._how_decided()}; to = the update id)\n"
                         + "\n".join(f"- {line}" for line in self.updates_for_me))
        if self.my_updates:
            parts.append("# Your memory updates\n" + "\n".join(f"- {line}" for line in self.my_updates))
        if self.scratchpad and not self.timeline:
            # Not "private notes": the briefing calls what the persona knows that, and a model
            # told to answer from its notes must not mistake its own guesses for them.
            parts.append("# Your recent thoughts (private)\n"
                         + "\n".join(f"- {note.line()}" for note in self.scratchpad))
        if self.feedback:
            parts.append(f"# Your last step\n{self.feedback}")
        if self.closing:
            parts.append(f"# Now (round {self.round}: the session is ending)\nThis is a closing step, off your "
                         "budget: approve or reject a request open for you. The session ends once every open "
                         "request is decided; then the result editor is submitted."
                         + ("" if self.timeline else f"\n{reply}"))
            return "\n\n".join(parts)
        if self.deciding:
            parts.append(f"# Now (round {self.round}: a decision step)\nA request is open for you. This step is not "
                         "one of your steps and spends none of your budget: approve or reject one request open for "
                         "you, or wait to leave them open for now (you are asked again at your next turn, and "
                         "once more when the session ends)."
                         + ("" if self.timeline else f"\n{reply}"))
            return "\n\n".join(parts)
        ai_left = "" if self.ai_actions_left is None else f"; {self.ai_actions_left} for the AI agent (ai)"
        parts.append(f"# Now (round {self.round}, {self.actions_left} actions left for {self.budget_holder}{ai_left})"
                     + ("" if self.timeline else f"\n{reply}"))
        return "\n\n".join(parts)

    def _how_decided(self) -> str:
        """How the requests listed for this member are decided: in this step, or in steps of their own."""
        if self.closing or self.deciding:
            return "approve or reject one in this step"
        return "you decide them in decision steps of their own, before your own step; not in this step"

    def _timeline(self) -> str:
        """Code cells and chat messages (under "full" also the activity list and the participant's
        own thoughts) in one list, oldest first: a new one is appended at its end."""
        thoughts, activity = (self.scratchpad, self.activity) if self.timeline else ((), ())
        items = sorted([(c.time, 0, c.index, cell_text(c)) for c in self.cells]
                       + [(m.time, 1, m.index, message_line(m)) for m in self.messages]
                       + [(a.time, 2, i, f"[activity] {a.line}") for i, a in enumerate(activity)]
                       + [(t.time, 3, i, f"[your private thought, r{t.round} -> {t.action}] {t.text}")
                          for i, t in enumerate(thoughts)])
        kinds = [(True, "chat", self.older_messages, "messages"),
                 (self.timeline, "activity", self.older_activity, "actions"),
                 (self.timeline, "your private thoughts", self.older_thoughts, "thoughts")]
        names = ["code cells"] + [name for shown, name, _, _ in kinds if shown]
        title = (", ".join(names[:-1]) + " and " + names[-1]).capitalize()
        older = [f"{n} older {noun} not shown" for n, noun in [(self.older_cells, "cells")]
                 + [(n, noun) for shown, _, n, noun in kinds if shown] if n]
        head = f"# {title}, oldest first" + (f" ({'; '.join(older)})" if older else "")
        return head + "\n" + ("\n".join(item[-1] for item in items) if items else "(none)")


def _section(title: str, older: int, noun: str, lines: list[str]) -> str:
    if not lines:
        return f"# {title}\n(none)"
    head = f"# {title} ({older} older {noun} not shown)" if older else f"# {title}"
    return head + "\n" + "\n".join(lines)


def build_observation(
    *,
    participant: str,
    team: Sequence[str],
    names: Sequence[str],
    sees_all: bool,
    profile: ObservationProfile,
    round: int,
    actions_left: int,
    budget_holder: str,
    query: str,
    ai_actions_left: int | None = None,
    end_rule: str = "",
    closing: bool = False,
    deciding: bool = False,
    briefing: str,
    workspace: Any,
    memory: str | None = None,
    gate_rules: str | None = None,
    sections: Sequence[tuple[str, str]] = (),
    gatekeeper: Gatekeeper,
    cells_at_request: Mapping[str, int],
    events: Sequence[Event],
    scratchpad: Sequence[Thought],
    valid_actions: Sequence[str],
    standing_actions: Sequence[str] | None = None,
    added: Sequence[str] = (),
    updates_for_me: Sequence[str] = (),
    update_ids: Sequence[str] = (),
    my_updates: Sequence[str] = (),
) -> Observation:
    """Assemble `participant`'s view from the workspace, the gates and the event log.

    `cells_at_request` maps a request id to the number of cells run when it was made. The
    structures' parts (`memory`, `gate_rules`, `sections`, the updates) are their `Structure.view`s.
    """
    chat = workspace.chat.messages if sees_all else workspace.chat.visible_to(participant)
    messages, older_messages = recent(chat, profile.messages, profile.chat_chars,
                                       lambda m: min(len(m.text), profile.message_chars or len(m.text)) + 20)
    all_cells = list(workspace.cells)
    cells, older_cells = notebook(all_cells, profile)
    task_events = [e for e in events if e.phase == "task" and e.participant != SYSTEM]
    own = [e for e in task_events if e.participant == participant]
    # Waits and failed steps change nothing, so they are not news to anyone (the actor
    # learns of its own through `feedback`); listing them would wake everyone forever.
    # Delivered messages and run cells are already shown in full in their own sections.
    done = [e for e in task_events if e.action != "wait" and e.status != "failed_step"
            and not (e.action in ("send_message", "execute_code") and e.status in ("ok", "error"))]
    seen = done if sees_all else [e for e in done if e.participant == participant]
    # The common part (issue 42): a member's own steps that took effect and approved actions
    # taking effect, what a Default twin shows too; a request, a decision and every closing
    # step are structure bookkeeping (`Event.kind`), kept apart in a budget of their own.
    common = [e for e in seen if e.kind in ("step", "effect") and e.status != "pending"]
    lines = [ActivityView(line=activity_line(e, profile.activity_chars), time=e.time) for e in common]
    booked = [ActivityView(line=activity_line(e, profile.activity_chars), time=e.time)
              for e in seen if e.kind == "machinery" or e.status == "pending"]
    decided_at = {e.request_id: e.time for e in task_events if e.action in _DECISIONS and e.status != "failed_step"}
    last = _last_step(own)
    proposed = [request_view(r, profile, time=decided_at.get(r.request_id, 0.0))
                for r in gatekeeper.proposed_by(participant)]
    notes = [t.clipped(profile.note_chars) for t in scratchpad]
    if profile.timeline:
        activity, thoughts = _own_history(lines, notes, profile.chat_chars)
        bookkeeping = recent(booked, None, profile.chat_chars, lambda a: len(a.line) + 20)[0]
    else:  # the most recent few of each, in sections after the timeline
        activity, thoughts = recent(lines, profile.activity)[0], recent(notes, profile.notes)[0]
        bookkeeping = recent(booked, profile.activity)[0]
    my_requests = recent(proposed, profile.requests)[0]

    for_me = gatekeeper.addressed_to(participant)[::-1]  # newest first: the profile cuts the oldest

    def depends_on(request: Request) -> list[CellView]:
        before = all_cells[: cells_at_request.get(request.request_id, 0)]
        return [cell_view(c, profile) for c in reversed(before[-profile.request_cells:])]

    return Observation(
        participant=participant,
        team=tuple(team),
        names=tuple(names),
        round=round,
        actions_left=actions_left,
        budget_holder=budget_holder,
        ai_actions_left=ai_actions_left,
        end_rule=end_rule,
        closing=closing,
        deciding=deciding,
        query=clip(unstated_query(query, briefing), profile.query_chars),
        briefing=clip(briefing, profile.briefing_chars),
        memory=memory,
        gate_rules=gate_rules,
        sections=tuple(sections),
        editor=clip(workspace.editor.text, profile.editor_chars),
        messages=tuple(MessageView(index=m.index, sender=m.sender, to=m.to, time=m.time,
                                   text=clip(m.text, profile.message_chars))
                       for m in messages),
        older_messages=older_messages,
        cells=tuple(cells),
        older_cells=older_cells,
        activity=tuple(activity),
        older_activity=len(lines) - len(activity),
        bookkeeping=tuple(bookkeeping),
        older_bookkeeping=len(booked) - len(bookkeeping),
        requests_for_me=tuple(request_view(r, profile, depends_on(r)) for r in for_me[: profile.requests]),
        other_requests_for_me=max(len(for_me) - profile.requests, 0),
        open_ids=tuple(r.request_id for r in for_me) + tuple(update_ids),
        my_requests=tuple(my_requests),
        older_requests=len(proposed) - len(my_requests),
        scratchpad=tuple(thoughts),
        older_thoughts=len(notes) - len(thoughts),
        timeline=profile.timeline,
        # In the timeline layout a step that took effect is there already (its thought, then
        # its cell, message or activity line): only a failed one needs saying.
        feedback=clip(_feedback(last, {c.index for c in cells}), profile.feedback_chars)
        if last is not None and (last.status == "failed_step" or not profile.timeline) else "",
        valid_actions=tuple(valid_actions),
        standing_actions=tuple(standing_actions) if standing_actions is not None else
        valid_actions_for(participant, team, has_requests=False, added=added),
        updates_for_me=tuple(updates_for_me),
        my_updates=tuple(my_updates),
    )


def _own_history(activity: Sequence[ActivityView], thoughts: Sequence[Thought],
                 budget: int | None) -> tuple[list[ActivityView], list[Thought]]:
    """The timeline layout's share of the participant's own history: its activity lines and its
    thoughts, the most recent that fit `budget` together (trimmed like the chat, within one
    budget as large as the chat's). Only common lines: structure bookkeeping has its own budget."""
    def size(entry: ActivityView | Thought) -> int:
        return len(entry.line) + 20 if isinstance(entry, ActivityView) else len(entry.text) + 40

    history: list[ActivityView | Thought] = sorted([*activity, *thoughts], key=lambda entry: entry.time)
    kept = {id(entry) for entry in recent(history, None, budget, size)[0]}
    return [a for a in activity if id(a) in kept], [t for t in thoughts if id(t) in kept]


def _last_step(own: Sequence[Event]) -> Event | None:
    """The outcome of the member's own last step (`Event.kind` "step"), what its feedback says:
    never a decision or a closing step (machinery, which a Default twin never takes); a held
    step once it took effect is its effect, as the twin's step took effect at once."""
    steps = [e for e in own if e.kind == "step"]
    if not steps:
        return None
    last = steps[-1]
    if last.status == "pending" and last.request_id is not None:
        return next((e for e in own if e.kind == "effect" and e.request_id == last.request_id), last)
    return last


def _feedback(event: Event, shown_cells: set[int]) -> str:
    """What the participant's own last step came to, so failures can be corrected.

    A cell it ran that is shown above is referred to by index, not repeated.
    """
    text = f"{event.action} -> {event.status}"
    if event.cell_index is not None and event.cell_index in shown_cells:
        return f"{text}: cell {event.cell_index} (shown above)"
    return f"{text}: {event.result}" if event.result else text
