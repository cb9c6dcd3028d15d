"""A living memory's updates as team acts (the Dynamic variants).

A member proposes an update (`propose_memory_update`); it is held as `upd-N` and addressed
to every other member, who answers approve or reject as its own step (counted against its
side's budget like any decision, and possible past a spent budget like a gate decision, so
an update can always be decided). One rejection drops it at once; when every other member
has approved, it is applied: the memory becomes a new version with a new digest, and a
gate-table change holds requests made from then on (requests already open keep the rule
that held them). Updates still open at the end are expired, like requests.

The pure parts (what an update says, the record it leads to) are the team layer's
(`colabkit.team.memory_update`); this module keeps the state of one session's memory: its
current record and version, what changed last, and the open and decided updates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from colabkit.session.actions import MEMORY_UPDATE, Action, InvalidAction
from colabkit.session.events import SYSTEM
from colabkit.team import (
    GateTable,
    MemoryRecord,
    MemoryUpdate,
    MemoryUpdateError,
    Persona,
    apply_update,
    gate_changes,
    parse_update,
)

Emit = Callable[..., Any]
"""The engine's `emit(participant, action, status, **fields)`: one task-phase event."""

UpdateStatus = Literal["pending", "applied", "dropped", "expired"]


class HasGates(Protocol):
    """Where the gate table in force is kept (the structures' `base.Board`)."""

    gates: GateTable | None


@dataclass
class PendingUpdate:
    """One proposed update and the answers it has had (mutable until it is decided)."""

    update_id: str
    proposer: str
    update: MemoryUpdate
    round: int
    voters: tuple[str, ...]
    answers: dict[str, tuple[Literal["approved", "rejected"], str]] = field(default_factory=dict)
    status: UpdateStatus = "pending"

    def waiting_for(self) -> list[str]:
        return [v for v in self.voters if v not in self.answers]

    def line(self) -> str:
        """How the update reads in an observation."""
        head = f"{self.update_id} from {self.proposer}: {self.update.describe()}"
        if self.status == "pending":
            waiting = ", ".join(self.waiting_for())
            return f"{head} -- waiting for {waiting}"
        said = "; ".join(f"{who} {decision}" + (f" ({reason})" if reason else "")
                         for who, (decision, reason) in self.answers.items())
        return f"{head} -- {self.status}" + (f": {said}" if said else "")


class LivingMemory:
    """The session's current memory, its version, and the updates proposed to it."""

    def __init__(self, memory: MemoryRecord, team: Sequence[Persona]) -> None:
        self.current = memory
        self.version = 1
        self.team = tuple(team)
        self.updates: dict[str, PendingUpdate] = {}
        self.last_change = ""

    @property
    def with_gates(self) -> bool:
        return self.current.gates is not None

    def render(self, max_chars: int | None = None) -> str:
        """The memory block of every observation: the current text, its version and last change."""
        last = f"; last change: {self.last_change}" if self.last_change else "; no change yet"
        state = f"living, version {self.version} {self.current.digest()[:8]}{last}"
        return self.current.render(max_chars, gates=False, state=state)  # gates: their own section

    def propose(self, action: Action, proposer: str, round: int) -> PendingUpdate:
        """Hold a proposed update for every other member's answer; `InvalidAction` if unreadable."""
        try:
            update = parse_update(action.slot or "", action.text, action.reason, self.team,
                                  with_gates=self.with_gates)
        except MemoryUpdateError as exc:
            raise InvalidAction(str(exc)) from exc
        pending = PendingUpdate(update_id=f"upd-{len(self.updates) + 1}", proposer=proposer, update=update,
                                round=round, voters=tuple(p.id for p in self.team if p.id != proposer))
        self.updates[pending.update_id] = pending
        return pending

    def answer(self, update_id: str, member: str, decision: Literal["approved", "rejected"], reason: str,
               round: int) -> PendingUpdate:
        """Record one member's answer; a rejection drops the update, the last approval applies it."""
        pending = self.updates.get(update_id)
        if pending is None:
            mine = [u.update_id for u in self.addressed_to(member)]
            raise InvalidAction(f"unknown update {update_id}; open for you: {', '.join(mine) if mine else 'none'}")
        if pending.proposer == member:
            raise InvalidAction(f"{update_id} is your own update; your teammates decide it")
        if pending.status != "pending":
            raise InvalidAction(f"{update_id} was already {pending.status}")
        if member in pending.answers:
            raise InvalidAction(f"you already answered {update_id}")
        pending.answers[member] = (decision, reason)
        if decision == "rejected":
            pending.status = "dropped"
        elif not pending.waiting_for():
            pending.status = "applied"
            self.current = apply_update(self.current, pending.update)
            self.version += 1
            self.last_change = f"{pending.update.slot} by {pending.proposer} (round {round}, {update_id})"
        return pending

    def addressed_to(self, member: str) -> list[PendingUpdate]:
        """Open updates waiting for `member`'s answer."""
        return [u for u in self.updates.values() if u.status == "pending" and member in u.waiting_for()]

    def proposed_by(self, member: str) -> list[PendingUpdate]:
        return [u for u in self.updates.values() if u.proposer == member]

    def expire_pending(self) -> list[PendingUpdate]:
        """Mark every open update expired (session end); return them."""
        expired = [u for u in self.updates.values() if u.status == "pending"]
        for pending in expired:
            pending.status = "expired"
        return expired


# -- the steps, as the engine carries them out and logs them ------------------------------------
def propose_update(living: LivingMemory | None, pid: str, action: Action, round: int, emit: Emit,
                   **fields: Any) -> bool:
    """Hold a memory update for the team's answer (a failed step if unreadable); never a finish."""
    try:
        if living is None:  # valid_actions never offers it; a model may still write it
            raise InvalidAction("this team's memory cannot be updated during the task")
        pending = living.propose(action, pid, round)
    except InvalidAction as exc:
        emit(pid, action.type, "failed_step", args=action.args(), result=str(exc), **fields)
        return False
    emit(pid, action.type, "pending", args=action.args(), request_id=pending.update_id,
         result=f"held as {pending.update_id} until {', '.join(pending.voters)} approve", **fields)
    return False


def answer_update(living: LivingMemory | None, pid: str, action: Action, round: int, emit: Emit,
                  board: HasGates, **fields: Any) -> bool:
    """A member's approve/reject of an update, then the team act's outcome as a system event; an
    applied gate change goes into force on `board` for requests made from now on."""
    decision: Literal["approved", "rejected"] = "approved" if action.type == "approve" else "rejected"
    try:
        if living is None:
            raise InvalidAction(f"unknown update {action.request_id}: this team's memory is frozen")
        before = living.current
        pending = living.answer(action.request_id or "", pid, decision, action.reason, round)
    except InvalidAction as exc:
        emit(pid, action.type, "failed_step", args=action.args(), result=str(exc), **fields)
        return False
    emit(pid, action.type, decision, args=action.args(), request_id=pending.update_id, signatory=pid,
         decision=decision, decision_reason=action.reason, proposer=pending.proposer,
         result=f"{pending.update_id} ({pending.update.slot} by {pending.proposer}) {decision}", **fields)
    outcome = {"update_id": pending.update_id, "slot": pending.update.slot, "proposer": pending.proposer}
    if pending.status == "dropped":
        emit(SYSTEM, "memory_update_dropped", "info", args={**outcome, "rejected_by": pid},
             result=f"{pending.update_id} dropped: {pid} rejected it")
    elif pending.status == "applied":
        memory = living.current
        added, removed = gate_changes(before, memory)
        if memory.gates is not None:
            board.gates = memory.gates
        emit(SYSTEM, "memory_updated", "info", args={
            **outcome, "version": living.version, "digest": memory.digest(), "memory": memory.model_dump(mode="json"),
            "gates_added": added, "gates_removed": removed},
            result=f"memory version {living.version} ({memory.digest()[:8]}): {pending.update.describe()}")
    return False


def expire_updates(living: LivingMemory | None, emit: Emit) -> list[PendingUpdate]:
    """Log every update still open at the session's end as expired (undecided, never applied); return them."""
    expired = living.expire_pending() if living is not None else []
    for pending in expired:
        emit(SYSTEM, "request_expired", "info", request_id=pending.update_id, proposer=pending.proposer,
             args={"action": MEMORY_UPDATE, "slot": pending.update.slot, "decision": "undecided"},
             result=f"{pending.update_id} ({pending.update.slot} by {pending.proposer}) undecided: "
                    "still open when the session ended")
    return expired
