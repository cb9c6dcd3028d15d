"""What a person at a seat is shown: the persona's own observation, rendered as HTML.

Nothing here decides what the person may see. A task step shows the `Observation` the
engine built for the persona (the same object its model's prompt is rendered from), laid
out for a person: the private briefing, the frozen memory, the gate rules in force (with the
held drafts of the result the seat proposed or signs) and any section a structure adds, the notebook
cells with their outputs, the chat, the result editor, the requests addressed to the seat,
the seat's own requests and last step. Below, folded, is the exact text the persona's model
would read (`Observation.render()`), so any section the observation gains reaches the
person even before this layout knows it. A memory-build question
shows its prompt's own sections (briefing, the build's rules, the proposals or the draft,
the request), which is all a simulated member is given there; the members' proposals in it
are laid out slot by slot, their gates in words ("edit_result signed by D"), not as the
Python lists and dicts the prompt line carries.
"""

from __future__ import annotations

import ast
import html
import re
from typing import Any

from colabkit.session.prompting.observation import Observation
from colabkit.session.prompting.views import message_line, request_for_signatory, request_line
from colabkit.session.seats.policy import Question
from colabkit.team.briefing import SHORTENED_NOTE
from colabkit.team.memory import SLOTS

STYLE = """<style>
.ck-seat {font-family: system-ui, sans-serif; font-size: 13px; max-width: 1100px}
.ck-seat h4 {margin: 10px 0 4px 0; font-size: 14px}
.ck-seat pre {white-space: pre-wrap; background: #f6f8fa; padding: 6px; margin: 2px 0; border-radius: 4px}
.ck-seat, .ck-seat * {word-break: normal !important; overflow-wrap: break-word !important}
.ck-seat .ck-cell {border-left: 3px solid #6a9fb5; padding-left: 6px; margin: 6px 0}
.ck-seat .ck-msg {margin: 2px 0}
.ck-seat .ck-request {border-left: 3px solid #d08770; padding-left: 6px}
.ck-seat .ck-now {font-weight: bold}
.ck-seat .ck-proposal th {text-align: left; vertical-align: top; padding: 2px 8px 2px 0; white-space: nowrap}
.ck-seat .ck-proposal td {text-align: left; vertical-align: top; white-space: pre-wrap}
</style>"""


def _pre(text: str, cls: str = "") -> str:
    return f'<pre class="{cls}">{html.escape(text)}</pre>' if cls else f"<pre>{html.escape(text)}</pre>"


def _section(title: str, body: str, cls: str) -> str:
    return f'<div class="{cls}"><h4>{html.escape(title)}</h4>{body}</div>'


BRIEFING_CUT_NOTE = (
    "This briefing is shortened exactly as the model in this seat gets it: the session runs under the "
    "compact observation profile (made for the embedded model's small context), which caps every "
    "briefing. A person in a seat sees what the model it replaces would see, so the two compare like "
    "for like; a session with a capable model (the full profile) shows the whole text.")
"""Said under a briefing the session's profile shortened (docs/seats.md: the decision)."""
_CLIPPED = re.compile(r" \.\.\.\[\+\d+ chars\]$")
"""The mark `views.clip` ends a text with when the profile's character cap cut it."""


def _cut_note(briefing: str) -> str:
    """The plain note for a shortened briefing (its own note, or the profile's clip mark); else ""."""
    cut = SHORTENED_NOTE in briefing or bool(_CLIPPED.search(briefing))
    return f'<p class="ck-cut"><i>{html.escape(BRIEFING_CUT_NOTE)}</i></p>' if cut else ""


def observation_html(obs: Observation) -> str:
    """The persona's observation laid out for a person (see the module docstring)."""
    parts = [STYLE, '<div class="ck-seat">']
    members = ", ".join(f"{pid} ({name})" for pid, name in zip(obs.team, obs.names))
    parts.append(f'<div class="ck-now">You are {html.escape(obs.participant)}. Team: {html.escape(members)}. '
                 f"Round {obs.round}, {obs.actions_left} actions left for {html.escape(obs.budget_holder)}.</div>")
    if obs.query:
        parts.append(_section("Task", _pre(obs.query), "ck-task"))
    parts.append(_section("Your private briefing", _pre(obs.briefing or "(none)") + _cut_note(obs.briefing),
                          "ck-briefing"))
    if obs.memory is not None:
        title, _, body = obs.memory.partition("\n")
        parts.append(_section(title or "Team memory", _pre(body), "ck-memory"))
    if obs.gate_rules is not None:  # the rules in force and the held drafts of the result the seat is party to
        title, _, body = obs.gate_rules.partition("\n")
        parts.append(_section(title, _pre(body), "ck-gates"))
    for title, text in obs.sections:  # a plugin structure's own sections
        parts.append(_section(title, _pre(text), "ck-structure"))
    cells = "".join(
        f'<div class="ck-cell"><b>cell {c.index}</b> by {html.escape(c.author)} ({html.escape(c.status)})'
        f"{_pre(c.code)}{_pre(c.output or '(no output)')}</div>" for c in obs.cells)
    older = f"<i>{obs.older_cells} older cells not shown</i>" if obs.older_cells else ""
    parts.append(_section("Notebook", older + (cells or "<i>no cells yet</i>"), "ck-notebook"))
    chat = "".join(f'<div class="ck-msg">{html.escape(message_line(m))}</div>' for m in obs.messages)
    parts.append(_section("Chat", chat or "<i>no messages yet</i>", "ck-chat"))
    parts.append(_section("Result editor (the submitted hypothesis)", _pre(obs.editor or "(empty)"), "ck-editor"))
    if obs.requests_for_me:
        shown = {c.index for c in obs.cells}
        body = "".join(_pre(request_for_signatory(r, shown), "ck-request") for r in obs.requests_for_me)
        parts.append(_section("Approval requests for you", body, "ck-requests"))
    if obs.my_requests:
        parts.append(_section("Your requests", "".join(_pre(request_line(r)) for r in obs.my_requests), "ck-mine"))
    if obs.activity:
        parts.append(_section("Activity", _pre("\n".join(a.line for a in obs.activity)), "ck-activity"))
    if obs.bookkeeping:  # requests and decisions, apart from the activity (issue 42)
        parts.append(_section("Requests and decisions", _pre("\n".join(a.line for a in obs.bookkeeping)), "ck-booked"))
    if obs.feedback:
        parts.append(_section("Your last step", _pre(obs.feedback), "ck-feedback"))
    parts.append("<details><summary>All of the above as plain text</summary>"
                 f"{_pre(obs.render(), 'ck-prompt')}</details></div>")
    return "".join(parts)


PROPOSALS = "Proposals so far"
_PROPOSAL = re.compile(r"^(?P<who>\S+) proposed -- (?P<fields>.*)$")
_FIELD = re.compile(rf"(?:^|; )({'|'.join((*SLOTS, 'gates'))}): ")


def _gates_text(value: str) -> str:
    """A proposal's gate list in words, one gate a line; the text as it is when it is not a list
    (cut short by the observation profile, say)."""
    try:
        gates = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value
    if not isinstance(gates, list):
        return value
    if not gates:
        return "(no gates)"
    lines = []
    for gate in gates:
        if not isinstance(gate, dict):
            return value
        note = f": {gate['note']}" if gate.get("note") else ""
        lines.append(f"{gate.get('action')} signed by {gate.get('signatory')} (scope {gate.get('scope', 'all')}){note}")
    return "\n".join(lines)


def proposal_html(line: str) -> str:
    """One "<member> proposed -- slot: text; ...; gates: [...]" line of the build's prompt as a
    table of its slots (the line itself when it is not one)."""
    match = _PROPOSAL.match(line)
    if match is None:
        return _pre(line)
    parts = _FIELD.split(match["fields"])
    fields = dict(zip(parts[1::2], parts[2::2], strict=True))
    if parts[0] or not fields:
        return _pre(line)
    rows = "".join(f"<tr><th>{html.escape(name.replace('_', ' '))}</th>"
                   f"<td>{html.escape(_gates_text(text) if name == 'gates' else text)}</td></tr>"
                   for name, text in fields.items())
    return f'<div class="ck-proposal"><b>{html.escape(match["who"])} proposed</b><table>{rows}</table></div>'


def _build_section(title: str, body: str) -> str:
    if title == PROPOSALS:
        return _section(title, "".join(proposal_html(line) for line in body.splitlines() if line.strip()), "ck-build")
    return _section(title, _pre(body), "ck-build")


BUILD_TASKS = {"propose": "propose its slots", "ratify": "ratify the draft", "consolidate": "merge the proposals",
               "amend": "apply the amendments"}


def build_html(question: Question[Any]) -> str:
    """A memory-build question: its prompt's sections, as the member's model reads them."""
    user = next((m["content"] for m in reversed(question.messages) if m["role"] == "user"), "")
    parts = [STYLE, '<div class="ck-seat">',
             f'<div class="ck-now">You are {html.escape(question.participant)}. Before the task, the team writes '
             f"a shared memory: {BUILD_TASKS[question.stage]}.</div>"]
    for block in user.split("\n\n# "):
        title, _, body = block.removeprefix("# ").partition("\n")
        parts.append(_build_section(title, body))
    parts.append("</div>")
    return "".join(parts)


def question_html(question: Question[Any]) -> str:
    return observation_html(question.observation) if question.observation is not None else build_html(question)
