"""The study's coordination structures, written against `Structure` (`base`).

- `SharedMemory` (the Shared Group Memory): the build phase (`build_phase`), then the frozen
  memory shown to every member in every task-phase observation.
- `SelfGates` (Scaffolded's gating): the gate table the team wrote in its memory, in force
  once the memory is frozen; held actions wait for their signatory (`gating`).
- `PreassignedGates`: the variant's fixed gate table (`VariantConfig.preassigned`).
- `MemoryUpdates` (Dynamic): the memory lives; members propose updates (`upd-N`), decided by
  every other member (`memory_updates`).

A variant's fields say which it plays (`registry.structures_for`): Memory-only is
`SharedMemory`; Scaffolded `SharedMemory` + `SelfGates`; Preassigned `PreassignedGates`;
Dynamic `SharedMemory` + `SelfGates` + `MemoryUpdates`; Default and the single agent none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from colabkit.session.actions import MEMORY_UPDATE, Action
from colabkit.session.rules import gate_cost
from colabkit.session.structure.base import Context, Structure, View
from colabkit.session.structure.build_phase import build_memory
from colabkit.session.structure.gating import GATE_RULES_TITLE, HELD_SECTIONS, gate_rules_text, held_drafts
from colabkit.session.structure.memory_updates import LivingMemory, answer_update, expire_updates, propose_update
from colabkit.team import GATEABLE_ACTIONS, GateRule, GateTable, names_defined

MEMORY_TITLE = "Shared Group Memory"


class SharedMemory(Structure):
    """The team writes a memory before the task; every member sees it in every observation."""

    name = "memory"
    sections = (MEMORY_TITLE,)
    builds = True

    async def build(self, ctx: Context) -> None:
        ctx.board.memory = await build_memory(ctx.spec, ctx.task.query, ctx.briefings, gateway=ctx.gateway,
                                              log=ctx.log, sample=ctx.spec.seed, seats=ctx.seats)

    def view(self, ctx: Context, pid: str) -> View:
        memory = ctx.board.memory
        # Its gates are in the gate rules' own section, shown the same way whoever chose them.
        return {"memory": memory.render(max_chars=ctx.profile.memory_chars, gates=False) if memory else None}


def held_by(table: GateTable | None, team: tuple[str, ...], action: Action, proposer: str,
            existing: Sequence[str] = ()) -> GateRule | None:
    """The rule of `table` holding `action` (None: it takes effect at once), the data-changing
    rule judged with the names `existing` before it. Decisions and waits are never gated
    (`GateRule` refuses them), so no regress; alone there is nobody to sign."""
    if table is None or len(team) < 2:
        return None
    return table.rule_for(action.type, proposer, content=action.payload, existing=existing)


def kernel_names(ctx: Context) -> tuple[str, ...]:
    """The names the cells run so far have bound (`names_defined`): what the data-changing rule
    counts as existing, for the engine's hold and the member's gate rules alike."""
    return names_defined(str(e.args.get("code", "")) for e in ctx.log.events
                         if e.phase == "task" and e.action == "execute_code" and e.status in ("ok", "error"))


class _Gates(Structure):
    """A gate table in force: its section for every member, its rules holding actions."""

    source: ClassVar[str]
    sections = (GATE_RULES_TITLE, *HELD_SECTIONS)
    holds = GATEABLE_ACTIONS

    def view(self, ctx: Context, pid: str) -> View:
        return {"gate_rules": gate_rules_text(ctx.board.gates, self.source, pid, kernel_names(ctx),
                                              gate_cost(ctx.spec.settings),
                                              held_drafts(list(ctx.requests.requests.values()), pid))}

    def hold(self, ctx: Context, action: Action, proposer: str) -> GateRule | None:
        return held_by(ctx.board.gates, ctx.team, action, proposer, kernel_names(ctx))


class SelfGates(_Gates):
    """The gates the team wrote in its memory (Scaffolded): needs `SharedMemory` before it."""

    name = "self-gates"
    source = "self"

    def start(self, ctx: Context) -> None:
        ctx.board.gates = ctx.board.memory.gates if ctx.board.memory is not None else None


class PreassignedGates(_Gates):
    """The variant's fixed gate table (Preassigned)."""

    name = "preassigned-gates"
    source = "preassigned"

    def start(self, ctx: Context) -> None:
        ctx.board.gates = self.variant.preassigned


class MemoryUpdates(Structure):
    """The memory lives (Dynamic): needs `SharedMemory` before it (and `SelfGates` for gate updates)."""

    name = "memory-updates"
    sections = (MEMORY_TITLE, "Memory updates for you", "Your memory updates")
    actions = (MEMORY_UPDATE,)

    def start(self, ctx: Context) -> None:
        if ctx.board.memory is not None:
            ctx.board.living = LivingMemory(ctx.board.memory, self.variant.team_personas())

    def view(self, ctx: Context, pid: str) -> View:
        living = ctx.board.living
        if living is None:
            return {}
        return {"memory": living.render(max_chars=ctx.profile.memory_chars),
                "updates_for_me": [u.line() for u in living.addressed_to(pid)],
                "update_ids": [u.update_id for u in living.addressed_to(pid)],
                "my_updates": [u.line() for u in living.proposed_by(pid)]}

    def open_ids(self, ctx: Context, pid: str) -> tuple[str, ...]:
        living = ctx.board.living
        return tuple(u.update_id for u in living.addressed_to(pid)) if living is not None else ()

    async def decide(self, ctx: Context, pid: str, action: Action, fields: dict[str, Any]) -> bool | None:
        if not (action.request_id or "").startswith("upd-"):
            return None
        return answer_update(ctx.board.living, pid, action, ctx.round, ctx.emit, ctx.board, **fields)

    def perform(self, ctx: Context, pid: str, action: Action, fields: dict[str, Any]) -> bool | None:
        if action.type != MEMORY_UPDATE:
            return None
        return propose_update(ctx.board.living, pid, action, ctx.round, ctx.emit, **fields)

    def expire(self, ctx: Context) -> list[object]:
        return list(expire_updates(ctx.board.living, ctx.emit))
