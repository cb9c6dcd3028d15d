"""What a counterfactual fork changes at its fork point, and how the fork is recorded.

A fork keeps events 0..N-1 of a stored session (replayed and verified, see `replay`),
changes one thing at event N and lets the session run on under a new seed. The change is a
typed value (a pydantic discriminated union on `kind`), recorded in the continuation's
`SessionRecord.fork` and hashed into its identity, so the same request always lands in the
same folder and a table can group continuations by what was changed.

Two families of change, by what they act on:
- the step at N (`replace_message`, `drop_message`, `flip_decision`): event N was that
  participant's step; in the fork its model is not asked for it, the given step is taken
  instead (a message with other text or addressees, a wait instead of the message, the
  opposite decision on the same request). It is that participant's step like any other.
- the state at N (`insert_message`, `model`, `persona`, `memory`, `remove_member`,
  `structure_off`): applied when the fork point is reached; then the step that produced
  event N is asked again, under the change (unless its participant was just removed).
- the team from N (`remove_member`, `structure_off`, the counterfactual contributions of
  issue 47, `colabkit.session.fork.members`): a human's seat is empty from N, or the
  variant's coordination structures are switched off from N (its Default twin plays on).
`none` is the control: nothing changes, only the seed may. Every change except `none` is
logged as a `fork_change` system event at N, which no participant sees (observations skip
system events), so a control with the parent's seed reproduces the parent's log exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from colabkit.errors import ColabkitError
from colabkit.hashing import sha256_hex
from colabkit.llm import ModelConfig
from colabkit.session.events import SYSTEM, Event

Recipients = tuple[str, ...] | Literal["all"] | None
"""Addressees of a message: ids, "all" (the whole team), or None (as in the original)."""
SeatTaker = Literal["persona", "person"]
VerifyMode = Literal["strict", "lenient"]


class _Change(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NoChange(_Change):
    """The control: the session goes on from N unchanged (only the seed may differ)."""

    kind: Literal["none"] = "none"


class ReplaceMessage(_Change):
    """The message sent at N goes out with other text and/or to other addressees."""

    kind: Literal["replace_message"] = "replace_message"
    text: str | None = Field(default=None, min_length=1, description="new text (None: the original's)")
    to: Recipients = None


class DropMessage(_Change):
    """The message sent at N is never sent: its sender waits instead."""

    kind: Literal["drop_message"] = "drop_message"


class InsertMessage(_Change):
    """A message from `sender` is posted at N; then the step that produced event N is asked again."""

    kind: Literal["insert_message"] = "insert_message"
    sender: str = Field(min_length=1)
    text: str = Field(min_length=1)
    to: Recipients = "all"


class FlipDecision(_Change):
    """The approve/reject at N becomes the opposite decision on the same request."""

    kind: Literal["flip_decision"] = "flip_decision"
    reason: str = Field(default="", description="the flipped decision's reason (default: none)")


class SetModel(_Change):
    """`role` talks to another model from N on."""

    kind: Literal["model"] = "model"
    role: str = Field(min_length=1)
    model: ModelConfig


class SetPersona(_Change):
    """`role` gets another persona prompt from N on (None: its shipped default prompt)."""

    kind: Literal["persona"] = "persona"
    role: str = Field(min_length=1)
    prompt: str | None = Field(default=None, min_length=1)
    version: str | None = Field(default=None, min_length=1, description="default: 'fork-' + the prompt's hash")


class AmendMemory(_Change):
    """Slots of the frozen Shared Group Memory read differently from N on (gates unchanged)."""

    kind: Literal["memory"] = "memory"
    slots: dict[Literal["expertise", "responsibility", "plan", "evidence_standards"], str] = Field(min_length=1)


class RemoveMember(_Change):
    """`role`'s seat is empty from N on: it takes no step and is asked nothing (not even to
    decide a request addressed to it: such a request stays undecided and expires at the end,
    as a silent signatory's does). Everything else plays on as before, its teammates' view of
    the team included. The AI cannot be removed: under the study's clock it holds the session
    clock (the AI's part is read from the `single` and solo variants instead)."""

    kind: Literal["remove_member"] = "remove_member"
    role: str = Field(min_length=1)

    @field_validator("role")
    @classmethod
    def _human(cls, role: str) -> str:
        if role == "ai":
            raise ValueError("the AI holds the session clock and cannot be removed; compare with the solo variants")
        return role


class StructureOff(_Change):
    """The variant's coordination structures are switched off from N: its Default twin (the same
    seats and personas, no memory shown, nothing held) plays on. Every held request not yet in
    effect at N (pending, or approved and waiting on an earlier one) expires at N, undecided by
    the switch: nothing held takes effect once the structure that held it is gone, and the
    proposer, who sees the expiry, may do it again (`members.switch_off`)."""

    kind: Literal["structure_off"] = "structure_off"


Change = Annotated[NoChange | ReplaceMessage | DropMessage | InsertMessage | FlipDecision | SetModel | SetPersona
                   | AmendMemory | RemoveMember | StructureOff, Field(discriminator="kind")]
CHANGE_KINDS: tuple[str, ...] = tuple(cls.model_fields["kind"].default for cls in (
    NoChange, ReplaceMessage, DropMessage, InsertMessage, FlipDecision, SetModel, SetPersona, AmendMemory,
    RemoveMember, StructureOff))
STEP_CHANGES = ("replace_message", "drop_message", "flip_decision")
"""Changes that replace the step at N (the others change the state at N)."""


def describe(change: Change) -> str:
    """A short label for tables and the `fork_change` event ("none", "persona D", ...)."""
    parts: list[str] = [change.kind]
    for name in ("role", "sender"):
        if hasattr(change, name):
            parts.append(getattr(change, name))
    if isinstance(change, SetModel):
        parts.append(change.model.model)
    if isinstance(change, AmendMemory):
        parts.append(",".join(sorted(change.slots)))
    text = getattr(change, "text", None) or getattr(change, "reason", None) or getattr(change, "prompt", None)
    if text:
        snippet = " ".join(text.split())
        parts.append(repr(snippet if len(snippet) <= 24 else snippet[:23] + "…"))
    to = getattr(change, "to", None)
    if to is not None:
        parts.append("to " + (to if isinstance(to, str) else ",".join(to)))
    return " ".join(parts)


class ForkPoint(BaseModel):
    """What a continuation is: parent, fork point, change, seed. Its hash is the identity.

    `seats` says who takes each person seat of the parent after N (a fork runs headless, so
    only "persona" can run here); it is validated against the parent's team when given.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    parent_id: str = Field(min_length=1)
    parent_spec_identity: str = Field(min_length=1)
    at: int = Field(ge=1)
    change: Change = NoChange()
    seed: int = Field(ge=0)
    verify: VerifyMode = "strict"
    seats: dict[str, SeatTaker] = {}

    def identity(self) -> str:
        return sha256_hex(self.model_dump(mode="json"))

    @property
    def session_id(self) -> str:
        """The continuation's session id and folder name."""
        return self.identity()[:16]


class CellMismatch(BaseModel):
    """A prefix cell whose replayed output differs from the logged one (after normalising)."""

    model_config = ConfigDict(frozen=True)

    cell: int
    logged: str
    replayed: str


class ReplayReport(BaseModel):
    """How the prefix replay went: every number here is checked, not estimated."""

    model_config = ConfigDict(frozen=True)

    prefix_events: int
    prefix_calls: int
    """Model calls before N: each was answered from the parent's cache (a miss stops the fork)."""
    cells_checked: int
    mismatches: tuple[CellMismatch, ...] = ()
    """Lenient mode only: cells whose output differed; the logged output was shown instead."""


class ForkRecord(BaseModel):
    """`SessionRecord.fork` of a continuation: what it is and how its prefix replayed."""

    model_config = ConfigDict(frozen=True)

    point: ForkPoint
    replay: ReplayReport


def fork_points(events: Sequence[Event]) -> list[int]:
    """Event numbers a fork may start at: task-phase steps that begin a participant's turn.

    The memory build is not a fork point (change the memory with `AmendMemory`); nor is the
    application of an approved request or a system event (they are not a turn's start).
    """
    return [e.seq for e in events if e.phase == "task" and e.participant != SYSTEM and e.seq > 0
            and not (e.decision is not None and e.action not in ("approve", "reject"))]


def check_fork(events: Sequence[Event], team: Sequence[str], has_memory: bool, point: ForkPoint,
               person_seats: Sequence[str] = (), has_structure: bool = True) -> None:
    """Raise `ColabkitError` (one line) unless `point` can fork a session with these `events`."""
    where = f"fork of session {point.parent_id} at event {point.at}"
    if point.at not in fork_points(events):
        near = [n for n in fork_points(events) if abs(n - point.at) <= 5]
        raise ColabkitError(f"{where}: not a fork point (a task-phase step that starts a turn); "
                            f"near ones: {near or fork_points(events)[:10]}")
    event, change = events[point.at], point.change
    if change.kind in ("replace_message", "drop_message") and (
            event.action != "send_message" or event.status not in ("ok", "pending")):
        raise ColabkitError(f"{where}: {change.kind} needs a sent message at N, event {point.at} is "
                            f"{event.participant} {event.action} ({event.status})")
    if change.kind == "flip_decision" and event.action not in ("approve", "reject"):
        raise ColabkitError(f"{where}: flip_decision needs an approve/reject at N, event {point.at} is "
                            f"{event.participant} {event.action}")
    for role in _roles(change):
        if role not in team:
            raise ColabkitError(f"{where}: {role!r} is not on the team ({', '.join(team)})")
    if change.kind == "memory" and not has_memory:
        raise ColabkitError(f"{where}: the session has no Shared Group Memory to amend")
    if change.kind == "structure_off" and not has_structure:
        raise ColabkitError(f"{where}: the variant has no coordination structure to switch off")
    unknown = sorted(set(point.seats) - set(team) - {"ai"}) + sorted(set(point.seats) & {"ai"})
    if unknown:
        raise ColabkitError(f"{where}: seats names {unknown}, not a human seat of the team ({', '.join(team)})")
    unnamed = sorted(set(person_seats) - set(point.seats))
    if unnamed:
        raise ColabkitError(f"{where}: a person sat in {unnamed}; say who takes the seat after N (seats=...)")


def _roles(change: Change) -> list[str]:
    roles = [getattr(change, name) for name in ("role", "sender") if hasattr(change, name)]
    to = getattr(change, "to", None)
    return roles + (list(to) if isinstance(to, tuple) else [])


def seat_map(value: Mapping[str, str] | None) -> dict[str, SeatTaker]:
    """`seats` as given by a caller, checked (one line per bad value)."""
    seats: dict[str, SeatTaker] = {}
    for role, taker in (value or {}).items():
        if taker not in ("persona", "person"):
            raise ColabkitError(f"seat {role!r}: who takes it must be 'persona' or 'person', got {taker!r}")
        seats[role] = "persona" if taker == "persona" else "person"
    return seats

