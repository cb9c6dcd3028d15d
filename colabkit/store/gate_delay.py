"""How long a held action waited for its effect, in the AI agent's turns (issue 44).

A gate's price in a session is the AI's turns that pass between a proposal and its effect:
under `gate_latency: in_turn` it depends on where the signatory's turn falls in the round's
random order, under `at_once` it is 0 when the signatory approves at once. `gate_delays`
counts, for every held action that took effect, the AI's turns taken strictly between its
`pending` event and the event of its effect; turns are the AI's own task-phase steps (its
waits and failed steps included), not an approved action of its applied on a teammate's
decision, and not the machinery's steps (decision steps, the closing pass).
The batch report shows the mean per variant (`run_outcomes`).
"""

from __future__ import annotations

from collections.abc import Sequence

from colabkit.session.events import CLOSING_PASS, DECISION_STEP, SYSTEM, Event

_DECISIONS = ("approve", "reject")


def _effect(event: Event) -> bool:
    """An approved held action taking effect (logged as its proposer's, with the request's id)."""
    return (event.request_id is not None and event.decision == "approved" and event.action not in _DECISIONS
            and event.status not in ("pending", "failed_step"))


def _ai_turn(event: Event) -> bool:
    args = event.args or {}
    return (event.phase == "task" and event.participant == "ai" and not _effect(event)
            and not args.get(CLOSING_PASS) and not args.get(DECISION_STEP))


def gate_delays(events: Sequence[Event]) -> list[int]:
    """The AI's turns between each held action's proposal and its effect (those that took effect)."""
    proposed: dict[str, int] = {}  # request id -> the AI's turns taken up to its proposal (its own included)
    turns = 0
    delays = []
    for event in events:
        if event.participant == SYSTEM:
            continue
        if _effect(event) and event.request_id in proposed:
            delays.append(turns - proposed.pop(event.request_id or ""))
            continue
        if _ai_turn(event):
            turns += 1
        if event.status == "pending" and (event.request_id or "").startswith("req-"):
            proposed[event.request_id or ""] = turns
    return delays


def mean_gate_delay(events: Sequence[Event]) -> float | None:
    """The mean of `gate_delays` (None: no held action took effect)."""
    delays = gate_delays(events)
    return sum(delays) / len(delays) if delays else None
