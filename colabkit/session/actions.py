"""The step a participant returns, as the model writes it and as the engine applies it.

`StepSchema` is what the LLM fills in under grammar-constrained decoding. It is kept flat and
small on purpose: a 135M model reliably fills four short fields, not a union of nested
per-action objects. One `content` field carries the action's payload and `to` its target:

    action          content                     to
    send_message    the message text            "all" (or empty) or recipients "D" / "D,R"
    execute_code    Python code                 -
    edit_result     the full new editor text    -
    approve/reject  the reason                  the request id, e.g. "req-3"
    finish          the reason                  -
    wait            -                           -
    propose_memory_update  the new text, then       the slot (expertise, responsibility,
                    "Reason: ..." (optional)    plan, evidence_standards or gates)

`propose_memory_update` exists only in the Dynamic variants: the schema a participant of any
other variant decodes under (`StepSchema`) does not list it, so its grammar, its prompt and
its answers are exactly what they were before the action existed.

`to_action` turns a step into a typed `Action` or raises `InvalidAction` with a reason the
engine logs as a failed step (and shows the participant next time). Checks that need
session state (is that request pending and addressed to me?) live in `gating`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

StepAction = Literal["send_message", "execute_code", "edit_result", "approve", "reject", "finish", "wait"]
MEMORY_UPDATE = "propose_memory_update"
ActionType = Literal["send_message", "execute_code", "edit_result", "approve", "reject", "finish", "wait",
                     "propose_memory_update"]
# Gated actions are held as req-N, memory updates as upd-N; both are decided by approve/reject.
REQUEST_ID = re.compile(r"\b(?:req|upd)-\d+\b", re.IGNORECASE)
GATE_REQUEST_ID = re.compile(r"\breq-\d+\b", re.IGNORECASE)  # a team without a living memory has no upd-N
_REASON = re.compile(r"\s*\breason\s*:\s*", re.IGNORECASE)
_EVERYONE = {"", "all", "everyone", "team", "*"}

ACTION_HELP = {
    "send_message": 'send_message: content = the message; to = "all" or teammate ids ({others})',
    "execute_code": "execute_code: content = Python code for the shared kernel, e.g. "
                    "import pandas as pd; df = pd.read_csv('data/<file>'); print(df.head())",
    "edit_result": "edit_result: content = the full new hypothesis text (replaces the editor)",
    "approve": "approve: to = one of the requests open for you ({open}); content = your reason",
    "reject": "reject: to = one of the requests open for you ({open}); content = your reason",
    "finish": "finish: content = why the result is ready (ends the session; the editor text is submitted)",
    "wait": "wait: do nothing now",
    MEMORY_UPDATE: "propose_memory_update: to = the memory slot (expertise, responsibility, plan, "
                   "evidence_standards, or gates); content = its new text, or for gates a rule "
                   "'action -> member' ('action -> none' removes it), then 'Reason: ...'; "
                   "it takes effect when every teammate approves",
}


def _all_required(schema: dict[str, Any]) -> None:
    """Require every field in the model-facing schema and drop the class docstring from it."""
    schema["required"] = list(schema["properties"])
    schema.pop("description", None)


class StepSchema(BaseModel):
    """One ReAct step as the model writes it: a private thought and one action.

    The JSON schema (hence the decoding grammar) requires all four fields, so a small model
    cannot stop after `"action"` and leave the payload out; validation still accepts a
    missing `content`/`to` (e.g. a bare wait) from providers without a grammar.
    """

    model_config = ConfigDict(json_schema_extra=_all_required)

    thought: str = Field(max_length=200, description="private reasoning, never shown to others")
    action: StepAction
    content: str = Field(default="", max_length=500, description="message, code, hypothesis text or reason")
    to: str = Field(default="", max_length=20, description="recipients for send_message, request id for approve/reject")


class Action(BaseModel):
    """A validated action, with each payload in its own field (what the event log records)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: ActionType
    text: str = ""
    code: str = ""
    to: tuple[str, ...] | None = None
    request_id: str | None = None
    reason: str = ""
    slot: str | None = None  # propose_memory_update: the memory slot it changes

    def args(self) -> dict[str, Any]:
        """The event's `args`: only the fields this action type uses."""
        keys = {
            "send_message": ("text", "to"),
            "execute_code": ("code",),
            "edit_result": ("text",),
            "approve": ("request_id", "reason"),
            "reject": ("request_id", "reason"),
            "finish": ("reason",),
            "wait": (),
            MEMORY_UPDATE: ("slot", "text", "reason"),
        }[self.type]
        return {key: list(value) if isinstance(value := getattr(self, key), tuple) else value for key in keys}

    @property
    def payload(self) -> str:
        """The action's main content: the text, the code, or the reason."""
        return {"send_message": self.text, "execute_code": self.code, "edit_result": self.text,
                MEMORY_UPDATE: self.text}.get(self.type, self.reason)

    def describe(self, limit: int = 160) -> str:
        """A one-line description for request views and activity lists."""
        payload = " ".join(self.payload.split())
        if len(payload) > limit:
            payload = payload[: limit - 3] + "..."
        target = f" to {','.join(self.to)}" if self.to else (f" of {self.slot}" if self.slot else "")
        return f"{self.type}{target}: {payload}" if payload else self.type


class InvalidAction(ValueError):
    """A step that names a real action but cannot be applied as written."""


def recipients(raw: str, actor: str, team: Sequence[str]) -> tuple[str, ...] | None:
    """Parse `to` for a message: None means everyone; ids are matched case-insensitively."""
    others = [p for p in team if p != actor]
    if not others:
        raise InvalidAction("there is no teammate to message")
    if raw.strip().lower() in _EVERYONE:
        return None
    by_lower = {p.lower(): p for p in others}
    chosen: list[str] = []
    for token in re.split(r"[\s,;&]+", raw.strip()):
        if not token or token.lower() in _EVERYONE:
            continue
        if token.lower() not in by_lower:
            raise InvalidAction(f"unknown recipient {token!r}; use all or one of {', '.join(others)}")
        if by_lower[token.lower()] not in chosen:
            chosen.append(by_lower[token.lower()])
    return tuple(chosen) if chosen else None


def request_id_of(step: StepSchema, memory_updates: bool = False) -> str | None:
    """The request id from `to`, or failing that the first one mentioned in `content`; a memory
    update's `upd-N` only where the memory lives (the Dynamic variants)."""
    pattern = REQUEST_ID if memory_updates else GATE_REQUEST_ID
    for field in (step.to, step.content):
        match = pattern.search(field)
        if match:
            return match.group(0).lower()
    return None


def to_action(step: StepSchema, actor: str, team: Sequence[str], *, added: Sequence[str] = ()) -> Action:
    """Map the flat step onto a typed action (see the table in the module docstring); `added`:
    the actions the variant's structures add (with `propose_memory_update` the memory lives, so
    `upd-N` names a request too)."""
    memory_updates = MEMORY_UPDATE in added
    content = step.content.strip()
    kind = step.action
    if kind == "send_message":
        if not content:
            raise InvalidAction("send_message needs the message text in content")
        return Action(type=kind, text=content, to=recipients(step.to, actor, team))
    if kind in ("execute_code", "edit_result") and not content:
        raise InvalidAction(f"{kind} needs {'code' if kind == 'execute_code' else 'the hypothesis text'} in content")
    if kind == "execute_code":
        return Action(type=kind, code=step.content)
    if kind == "edit_result":
        return Action(type=kind, text=content)
    if kind in ("approve", "reject"):
        request_id = request_id_of(step, memory_updates)
        if request_id is None:
            raise InvalidAction(f"{kind} needs the id of a request open for you in to")
        return Action(type=kind, request_id=request_id, reason=content)
    if kind == "finish":
        return Action(type=kind, reason=content)
    if kind == MEMORY_UPDATE:
        text, reason = [*(part.strip() for part in _REASON.split(content, maxsplit=1)), ""][:2]
        if not step.to.strip() or not text:
            raise InvalidAction("propose_memory_update needs the slot in to and its new text in content")
        return Action(type=MEMORY_UPDATE, slot=step.to.strip(), text=text, reason=reason)
    return Action(type="wait")


DECISIONS = ("approve", "reject", "wait")
STRUCTURE_ACTIONS = (MEMORY_UPDATE,)
"""Actions offered only where a structure adds them (`Structure.actions`)."""
CLOSING_DECISIONS = ("approve", "reject")


def valid_actions(actor: str, team: Sequence[str], *, has_requests: bool, decisions_only: bool = False,
                  added: Sequence[str] = (), clock: bool = False, closing: bool = False) -> tuple[str, ...]:
    """What this participant may do now (the one list every prompt, schema and check uses).

    Under the AI's clock (`clock`, the "ai_budget" rule) a wait is a step of the AI's budget
    like any other, so the single agent is offered it as a team AI is, and `finish` is the
    AI agent's alone (humans cannot end the session; one who thinks the work is done says so
    in chat). Under the Co-Gym rules a lone participant is offered no `wait` (a free wait
    could only end its session idle, an end the team variants never face) and anybody may
    finish. Alone there is nobody to message. No decisions without a request, only
    decisions once its side has spent its budget (see `colabkit.session.scheduler`), only
    approve/reject in the closing pass (`closing`), and a structure's own actions only where
    the variant's structures add them (`added`: memory updates where the memory lives)."""
    lone = len(team) < 2
    allowed = []
    for kind in ACTION_HELP:
        if kind == "send_message" and lone:
            continue
        if kind == "wait" and lone and not clock:
            continue
        if kind == "finish" and clock and actor != "ai" and not lone:  # a solo human holds the clock
            continue
        if kind in STRUCTURE_ACTIONS and kind not in added:
            continue
        if kind in ("approve", "reject") and not has_requests:
            continue
        if decisions_only and kind not in DECISIONS:
            continue
        if closing and kind not in CLOSING_DECISIONS:
            continue
        allowed.append(kind)
    return tuple(allowed)


def action_help(kinds: Sequence[str], actor: str, team: Sequence[str], open_ids: Sequence[str] = ()) -> list[str]:
    """One instruction line per allowed action, naming the fields it uses (for approve/reject,
    the ids of the requests open for `actor`, the only values its `to` may take)."""
    others = ", ".join(p for p in team if p != actor)
    return [ACTION_HELP[kind].format(others=others, open=", ".join(open_ids) or "none") for kind in kinds]


def step_targets(kinds: Sequence[str], open_ids: Sequence[str]) -> tuple[str, ...] | None:
    """The values `to` must take (None: free text, as in Default): the open ids only when
    decisions are all a member may do (a decision step, the closing pass), where no common action
    reads `to`, and "" beside them where a wait is on offer (a wait names nothing). A member's
    own step never offers a decision, so there `to` stays the common field it is in Default
    (issue 42: a structure may add actions and fields, never narrow or re-validate a common
    one; "D,ai" or "everyone" is a recipient list there as here)."""
    if not set(kinds) & {"approve", "reject"} or not set(kinds) <= set(DECISIONS):
        return None
    return (*open_ids, "") if "wait" in kinds else tuple(open_ids)
