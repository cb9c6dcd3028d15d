"""The interface a coordination structure implements, and how a variant's structures compose.

A coordination structure is a rule about who may do what, when (the Shared Group Memory, the
approval gates, an evidence checklist). The engine (`colabkit.session.engine`) knows none of
them: it plays a session's `Composition` of structures through the hooks of `Structure`, so a
new structure is a class, not an engine change. What a structure may add, and nothing else:

- the build phase (`builds`, `build`): steps before the task (the memory's propose, consolidate,
  ratify and amend), logged in phase "build";
- `start`: its rules put in force once the build is over (a gate table, a living memory);
- sections of a member's observation (`view`, titles declared in `sections`): what it shows whom;
- actions (`actions`, offered to every member while the structure is in force; `perform`
  carries its own ones out) and holds (`hold`: an action that takes effect only once a
  signatory approves it, held as `req-N` in the engine's one request ledger, `Gatekeeper`);
- its own requests (`open_ids`, decided by approve/reject through `decide`, like the memory's
  `upd-N`);
- before an end takes effect: the engine's closing pass has every open id (the ledger's and
  each structure's `open_ids`) decided by its signatory; `expire` logs what is still open then.

The audit (`colabkit.runner.audit`) reads `sections` and `actions` as the only allowed
differences between a variant and its Default twin (the same team without the structure).

Structures share one `Board`: the records the team builds and every structure may read (the
frozen memory, the living memory, the gate table in force), so the shipped ones compose:
Scaffolded is the memory and self-chosen gates, Dynamic adds the memory updates. A variant
holds a list of structures (`colabkit.session.structure.registry.structures_for`), played
in order: for a hook with one answer (`hold`, `decide`, `perform`) the first structure that
answers decides; a `view` field set by a later structure replaces an earlier one's (the
living memory's text replaces the frozen one's).

Default is the interface's identity: `Structure` itself, every hook a no-op.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from colabkit.session.actions import Action
from colabkit.session.structure.gating import Gatekeeper
from colabkit.team import GateRule, GateTable, MemoryRecord, VariantConfig

if TYPE_CHECKING:
    from colabkit.llm import Gateway
    from colabkit.session.events import EventLog
    from colabkit.session.prompting.profile import ObservationProfile
    from colabkit.session.seats.policy import Seat
    from colabkit.session.settings import SessionSpec
    from colabkit.session.structure.memory_updates import LivingMemory
    from colabkit.tasks import Task


@dataclass
class Board:
    """What the team's structures build and read: the frozen memory (after the build), the
    living memory (Dynamic), the gate table in force. The session record keeps `memory`."""

    memory: MemoryRecord | None = None
    living: LivingMemory | None = None
    gates: GateTable | None = None


class Context(Protocol):
    """What a structure may read of the running session (the engine's `_Session`) and do in it."""

    spec: SessionSpec
    variant: VariantConfig
    task: Task
    team: tuple[str, ...]
    briefings: dict[str, str]
    profile: ObservationProfile
    round: int
    board: Board
    requests: Gatekeeper

    @property
    def gateway(self) -> Gateway: ...

    @property
    def log(self) -> EventLog: ...

    @property
    def seats(self) -> Mapping[str, Seat]: ...

    def emit(self, participant: str, action: str, status: Any, **fields: Any) -> None: ...


ENGINE_SECTIONS = frozenset({
    "Task", "Your private briefing", "Shared Group Memory", "Gate rules", "Team", "Valid actions", "Activity",
    "Result editor", "Approval requests for you", "Your requests", "Memory updates for you", "Your memory updates",
    "Your recent thoughts", "Your last step", "Now", "Code cells", "Requests and decisions"})
"""Titles of the sections the engine and the study's structures render: a plugin's `sections`
may not take one (its text would stand in for theirs). The held requests' sections come with
a plugin's `holds`."""
View = dict[str, Any]
VIEW_FIELDS = frozenset({"memory", "gate_rules", "updates_for_me", "update_ids", "my_updates", "sections"})
"""A structure's part of an observation: `build_observation` keyword arguments (`memory`,
`gate_rules`, `updates_for_me`, `update_ids`, `my_updates`) and `sections`, titled text blocks
of its own (each title declared in `Structure.sections`)."""


class Structure:
    """A coordination structure (see the module docstring); subclasses override what they add.

    `options` are the variant's options for it (`VariantConfig.structures`); a structure that
    takes none refuses any (`check_options`)."""

    name: ClassVar[str] = "default"
    sections: ClassVar[tuple[str, ...]] = ()
    """The titles of the observation sections it may add (the audit allows these to differ)."""
    actions: ClassVar[tuple[str, ...]] = ()
    """The actions it adds to every member's valid actions (the audit allows these to differ)."""
    holds: ClassVar[tuple[str, ...]] = ()
    """The action types it may hold for a signatory (approve/reject then appear for the signatory)."""
    builds: ClassVar[bool] = False
    """Whether it runs a build phase before the task (the session then starts in phase "build")."""

    def __init__(self, variant: VariantConfig, options: Mapping[str, Any] | None = None) -> None:
        self.variant = variant
        self.options = dict(options or {})
        self.check_options()

    def check_options(self) -> None:
        """Refuse options this structure does not take (one line naming them)."""
        if self.options:
            raise ValueError(f"structure {self.name!r} takes no options, got {', '.join(sorted(self.options))}")

    async def build(self, ctx: Context) -> None:
        """Its build phase (only when `builds`): write what it builds on `ctx.board`."""

    def start(self, ctx: Context) -> None:
        """Put its rules in force once the build is over (or at once, with no build)."""

    def view(self, ctx: Context, pid: str) -> View:
        """Its part of `pid`'s observation now."""
        return {}

    def hold(self, ctx: Context, action: Action, proposer: str) -> GateRule | None:
        """The rule holding `action` for a signatory's approval, or None when it is not held."""
        return None

    def open_ids(self, ctx: Context, pid: str) -> tuple[str, ...]:
        """Its own requests open for `pid`'s decision (not the ledger's `req-N`)."""
        return ()

    async def decide(self, ctx: Context, pid: str, action: Action, fields: dict[str, Any]) -> bool | None:
        """`pid`'s approve/reject of one of its own requests (None: not one of them); True if it ended the task."""
        return None

    def perform(self, ctx: Context, pid: str, action: Action, fields: dict[str, Any]) -> bool | None:
        """Carry out one of its own `actions` (None: not one of them); True if it ended the task."""
        return None

    def expire(self, ctx: Context) -> list[object]:
        """Log its own requests still open at the end as expired; return them."""
        return []


class Composition:
    """A variant's structures played together (the engine's one handle on them)."""

    def __init__(self, structures: Sequence[Structure]) -> None:
        self.structures = tuple(structures)
        self.builds = any(s.builds for s in self.structures)
        self.actions = tuple(dict.fromkeys(a for s in self.structures for a in s.actions))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.structures)

    async def build(self, ctx: Context) -> None:
        for s in self.structures:
            if s.builds:
                await s.build(ctx)

    def start(self, ctx: Context) -> None:
        for s in self.structures:
            s.start(ctx)

    def view(self, ctx: Context, pid: str) -> View:
        merged: View = {}
        sections: list[tuple[str, str]] = []
        for s in self.structures:
            part = dict(s.view(ctx, pid))
            stray = sorted(set(part) - VIEW_FIELDS)
            if stray:  # fail closed: a structure shows only its own parts, never the rest of the view
                raise ValueError(f"structure {s.name!r}: view field(s) {', '.join(stray)} are not a structure's "
                                 f"(allowed: {', '.join(sorted(VIEW_FIELDS))})")
            for title, _ in part.get("sections", ()):
                if title not in s.sections:
                    raise ValueError(f"structure {s.name!r}: section {title!r} is not declared in its `sections`")
            sections += part.pop("sections", ())
            merged.update(part)
        return {**merged, **({"sections": tuple(sections)} if sections else {})}

    def hold(self, ctx: Context, action: Action, proposer: str) -> GateRule | None:
        return next((rule for s in self.structures if (rule := s.hold(ctx, action, proposer)) is not None), None)

    def open_ids(self, ctx: Context, pid: str) -> tuple[str, ...]:
        return tuple(i for s in self.structures for i in s.open_ids(ctx, pid))

    async def decide(self, ctx: Context, pid: str, action: Action, fields: dict[str, Any]) -> bool | None:
        for s in self.structures:
            done = await s.decide(ctx, pid, action, fields)
            if done is not None:
                return done
        return None

    def perform(self, ctx: Context, pid: str, action: Action, fields: dict[str, Any]) -> bool | None:
        return next((done for s in self.structures if (done := s.perform(ctx, pid, action, fields)) is not None), None)

    def expire(self, ctx: Context) -> list[object]:
        return [r for s in self.structures for r in s.expire(ctx)]
