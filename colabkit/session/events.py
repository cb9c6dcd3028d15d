"""The session's trajectory as typed events, and where they go.

Every step (including `wait`, failed steps and thoughts, which Co-Gym drops) becomes one
`Event`, emitted to the sink the moment it happens so a crashed run keeps what it did.
Events are never amended: a gated action is one `pending` event, later a decision event,
and (if approved) an application event carrying the original `proposer`.

Joins: an event that creates a notebook cell, a chat message or an editor version carries
its index (`cell_index`, `message_index`, `editor_version`, the indices in the workspace
snapshot), including the application of an approved gated action, so a scorer joins the log
to the snapshot by field, never by parsing `result`. A `pending` event carries the
`gate_rule` that held it. Every event says which `schema_version` of this model wrote it.

Determinism: given the seed and the model answers, the log is identical across runs except
for wall-clock fields (`time`, and each LLM call's `latency_s`); `comparable` strips them.
"""

from __future__ import annotations

import time
from typing import Any, Final, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from colabkit.llm import CallRecord
from colabkit.session.actions import MEMORY_UPDATE
from colabkit.session.seats.person import PersonStep
from colabkit.team import ACTION_TYPES, GateScope

EVENT_SCHEMA_VERSION: Final = 7
"""Version 2 added schema_version, cell_index, message_index, editor_version and gate_rule.
Version 3 added `person` (a step taken by a person in a seat) and split the calls' cost:
`cost` is what was paid, a suite replay (`suite_replay`, was `cache_hit`) keeps its original
cost in `replayed_cost`, and `provider_cached_tokens` counts the provider's prefix-cache hits;
older calls are read into these fields (`colabkit.llm.records.upgrade_call`). Version 4 added
the closing pass: a `closing_pass` system event, and the signatories' steps in it marked by
`args["closing_pass"]` (`CLOSING_PASS`), off budget. Version 5: the closing pass precedes every
end but a crash or a provider refusal (a finish's and the cost cap's included) and repeats
until no request is open; under "ai_budget" an AI wait is a step of its budget, and
`session_end` args carry `expired`. Version 6 (issue 42): decisions on requests are machinery
(`Event.kind`: off every budget, never initiative), and two system actions are new:
`request_voided` (a request proposed after a finish that took effect) and `request_superseded`
(an approved edit older than the edit in the editor). Version 7: a member decides requests only in
decision steps of their own (marked `args["decision_step"]`, `DECISION_STEP`), never in its own
step, which no longer offers approve/reject; version 6 marked such a step, taken right after a
proposal, `args["decided_at_once"]`, read as the same. A stored line without `schema_version`
was written by version 1."""
CLOSING_PASS: Final = "closing_pass"
"""The engine's closing pass: its system event's action, and the args key marking its steps."""
DECISION_STEP: Final = "decision_step"
"""The args key marking a member's decision step (approve, reject, or wait to leave its requests
open), taken at its turn before its own step or, under `gate_latency: at_once`, right after a
proposal: machinery, off every budget."""
_DECISION_STEP_MARKS = (DECISION_STEP, "decided_at_once")  # "decided_at_once": version 6's mark
EndedBy = Literal["finish", "budget", "idle", "max_rounds", "llm_budget", "provider_error", "provider_unavailable",
                  "kernel_unavailable", "error"]
"""How a session ended; the one definition every layer imports."""
INFRASTRUCTURE_ENDINGS: frozenset[str] = frozenset({"error", "provider_error", "provider_unavailable",
                                                    "kernel_unavailable"})
"""Endings that say nothing about the team (a crash, a provider refusal, a provider out of
reach past the retry bound, a workspace kernel that would not start however often tried): the runner's
`--retry-errors` reruns them and the score tables leave their metrics missing. A session
that reaches its spending cap (`llm_budget`) is not one of them: how much a team spends is
its own doing, so the cap's end is the team's outcome, scored from its editor like any other
end and kept in every table (dropping it would bias the arm that spends more)."""
Phase = Literal["build", "task"]
Status = Literal["ok", "error", "failed_step", "pending", "approved", "rejected", "blocked", "info"]
SYSTEM = "system"
# The log's vocabulary. Participants use colabkit.team.ACTION_TYPES in the task phase, the
# four memory-build steps in the build phase, and "invalid_output" for a step whose model
# answer could not be parsed into any action; "system" has its own actions.
INVALID_OUTPUT = "invalid_output"
BUILD_ACTIONS = ("propose_memory", "consolidate_memory", "ratify_memory", "amend_memory")
# A living memory (Dynamic variants): a member's proposal, and the team act's outcome.
MEMORY_UPDATE_ACTIONS = ("memory_updated", "memory_update_dropped")
REQUEST_VOIDED = "request_voided"
"""A held request proposed after a finish that took effect: it never takes effect (nor is decided)."""
REQUEST_SUPERSEDED = "request_superseded"
"""An approved edit proposed before the edit now in the editor: it never replaces a later one."""
MACHINERY_SYSTEM_ACTIONS = ("memory_frozen", *MEMORY_UPDATE_ACTIONS, "request_expired", REQUEST_VOIDED,
                            REQUEST_SUPERSEDED, CLOSING_PASS)
"""The session's own events that exist only because of a structure (its build, its requests' fate)."""
SYSTEM_ACTIONS = ("session_start", "kernel_restart", *MACHINERY_SYSTEM_ACTIONS, "session_end",
                  "fork_change")  # fork_change: what a counterfactual fork changed at its fork point
PARTICIPANT_ACTIONS = (*ACTION_TYPES, MEMORY_UPDATE, *BUILD_ACTIONS, INVALID_OUTPUT)
DECISION_ACTIONS = ("approve", "reject")
EventKind = Literal["step", "effect", "machinery", "system"]
"""What an event is to the metrics and the caps (`Event.kind`, the one rule; docs/fidelity.md):

- "step": a member's own turn in the task (what a Default twin has too): it spends the member's
  step budget and the task's spend, and it is what a member initiates;
- "effect": an approved held action taking effect as its proposer's: the workspace changes (work
  counts it), but it is nobody's turn (the turn was the proposal);
- "machinery": what exists only because of a structure: the build phase, a decision on a request
  (approve/reject) and every decision step (a wait that leaves requests open, a failed answer
  included), every step of the closing pass, and the
  session's events about requests and the memory (`MACHINERY_SYSTEM_ACTIONS`). It is never
  initiative, never work, and never charged to the task's caps (steps, tokens, dollars);
- "system": the session's own common events (its start, a kernel restart, its end, a fork)."""


class GateRuleRef(BaseModel):
    """The gate rule that held an action, as the `pending` event logs it.

    `signatory` is the member the rule names (who was asked to sign); `note` is the team's
    free text shown to the signatory with the request.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: str
    scope: GateScope
    note: str = ""
    signatory: str


class Event(BaseModel):
    """One thing that happened in a session: who did what, what came back, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[2, 3, 4, 5, 6, 7] = EVENT_SCHEMA_VERSION
    session_id: str
    seq: int
    phase: Phase
    round: int
    participant: str
    action: str
    args: dict[str, Any] = {}
    status: Status
    result: str = ""
    thought: str | None = None
    request_id: str | None = None
    signatory: str | None = None
    decision: Literal["approved", "rejected"] | None = None
    decision_reason: str | None = None
    proposer: str | None = None
    gate_rule: GateRuleRef | None = None
    cell_index: int | None = Field(default=None, ge=0)
    message_index: int | None = Field(default=None, ge=0)
    editor_version: int | None = Field(default=None, ge=0)
    llm_calls: tuple[CallRecord, ...] = ()
    person: PersonStep | None = None  # set on a step a person took (or that timed out on one)
    time: float

    @property
    def kind(self) -> EventKind:
        """The one rule that sorts events into steps, effects, machinery and the system's (`EventKind`).

        Read from the event's own fields, so it holds for every stored record too."""
        if self.phase == "build":
            return "machinery"
        if self.participant == SYSTEM:
            return "machinery" if self.action in MACHINERY_SYSTEM_ACTIONS else "system"
        if self.proposer is not None and self.participant == self.proposer:
            return "effect"  # in the task or the closing pass: the workspace changed either way
        if self.args.get(CLOSING_PASS) or self.action in DECISION_ACTIONS or \
                any(self.args.get(mark) for mark in _DECISION_STEP_MARKS):
            return "machinery"
        return "step"

    @property
    def actor_kind(self) -> Literal["person", "model", "system"]:
        """Who acted: a person in a seat, a model, or the session itself."""
        return "system" if self.participant == SYSTEM else "person" if self.person is not None else "model"

    @property
    def event_id(self) -> str:
        return f"{self.session_id}-{self.seq:05d}"


def is_decision(event: Event) -> bool:
    """Whether `event` is an approve/reject on a request: machinery (`Event.kind`), counted only by
    the metrics that say they count decisions (`h_init_events_all`, `a_profile_with_decisions`)."""
    return event.kind == "machinery" and event.action in DECISION_ACTIONS


class EventSink(Protocol):
    """Anything that accepts events in order (the store's JSONL sink, a test's list)."""

    def emit(self, event: Event) -> None: ...


class ListSink:
    """Keeps events in memory: for tests and notebooks that do not need a file."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)


def comparable(events: list[Event]) -> list[dict[str, Any]]:
    """The events as dicts without their wall-clock fields, for run-to-run comparison."""
    rows = []
    for event in events:
        row = event.model_dump(mode="json", exclude={"time"})
        for call in row["llm_calls"]:
            call.pop("latency_s")
        rows.append(row)
    return rows


class EventLog:
    """Numbers events, stamps their time, forwards them to the sink and keeps a copy.

    The copy is what observations (the AI's view of team activity) and the session totals
    are computed from, so the sink can be write-only.
    """

    def __init__(self, session_id: str, sink: EventSink) -> None:
        self.session_id = session_id
        self.sink = sink
        self.events: list[Event] = []

    def emit(self, *, phase: Phase, round: int, participant: str, action: str, status: Status, **fields: Any) -> Event:
        allowed = SYSTEM_ACTIONS if participant == SYSTEM else PARTICIPANT_ACTIONS
        if action not in allowed:  # a bug in the engine; analysis relies on this vocabulary
            raise ValueError(f"event action {action!r} is not one of {allowed} for {participant!r}")
        event = Event(
            session_id=self.session_id,
            seq=len(self.events),
            phase=phase,
            round=round,
            participant=participant,
            action=action,
            status=status,
            time=time.time(),
            **fields,
        )
        self.events.append(event)
        self.sink.emit(event)
        return event
