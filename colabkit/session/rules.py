"""The session's rules as a member reads them, rendered from the objects that enforce them.

Every sentence a prompt states about budgets and costs is written here from the engine's own
objects, never typed twice: what a member's steps are and whether its wait spends one (the
`Scheduler` of the session: `budget_for`, `holder`, `clocked`), and what a gated action
costs in turns (the same scheduler rules, for the build's gate choice and the task's gate
rules). So the text and the behaviour cannot disagree, and `colabkit prompts lint` checks the
numbers a prompt states against the scheduler it came from.

- `end_rule(settings, sched)`: when the session ends, as every member reads it (the setting's
  rule; for a human alone, a solo variant, the clock it holds in the AI agent's place).
- `budget_line(sched, pid)`: the member's own steps and what its wait costs (the task phase's
  "Team" section, after the end rule; the same text in a variant and its Default twin).
- `task_budgets(settings, sides)`: every member's steps, for the build phase (where gates are
  chosen before anyone has a budget in view).
- `gate_cost(settings)`: what a held action costs, in the build's gate choice and the task's
  gate rules (under the setting's `gate_latency`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from colabkit.session.scheduler import Scheduler
from colabkit.session.settings import SessionSettings, Side

GATE_COSTS = {
    "in_turn": "A held action costs its proposer the step that proposes it; its signatory is asked to decide it at "
               "its next turn, in a decision step before its own step (a decision step is none of its steps and "
               "costs no budget; it may wait and decide later); it takes effect only when approved (the turn "
               "order is drawn afresh every round, so that may be the next round).",
    "at_once": "A held action costs its proposer the step that proposes it; its signatory is asked to decide it at "
               "once, in a decision step that is none of its steps and costs no budget (it may wait and decide it "
               "at its next turn instead); approved, it takes effect before anyone else acts.",
}
"""What a gate costs in turns under each `SessionSettings.gate_latency`, as the engine makes it
(`engine._Session.decision_steps`: a decision is machinery, `Event.kind`, never one of a member's
steps; in turn it is asked before the signatory's own step in the round order of `round_order`,
at once right after the proposal)."""


def gate_cost(settings: SessionSettings) -> str:
    """What a held action costs in turns under `settings` (the build's gate choice, the gate rules)."""
    return GATE_COSTS[settings.gate_latency]


SOLO_END_RULE = ("You work alone and hold the session's clock, as the AI agent does when it works alone: the "
                 "session ends when you have taken all your steps (every turn of yours is one of your steps, a wait "
                 "included) or when your finish takes effect.")
"""The end rule of a solo variant (`Scheduler.keeper` a human): the AI agent's clock, held by the human."""


def end_rule(settings: SessionSettings, sched: Scheduler) -> str:
    """When the session ends, as its members read it: the setting's rule (`SessionSettings.end_rule`,
    the same text in every variant with the AI agent); under the clock with a human alone, the
    clock that human holds (`SOLO_END_RULE`), as the scheduler applies it."""
    if sched.clock and sched.keeper != "ai":
        return SOLO_END_RULE
    return settings.end_rule()


def _members(pids: Sequence[str]) -> str:
    return pids[0] if len(pids) == 1 else ", ".join(pids[:-1]) + " and " + pids[-1]


def _wait_clause(sched: Scheduler, pid: str) -> str:
    if sched.clocked(pid):
        return "every step is one, a wait included"
    return "every step but a wait is one; waits are free"


def budget_line(sched: Scheduler, pid: str) -> str:
    """`pid`'s steps for the task and what each of its turns costs, from the scheduler's rules."""
    holder = sched.holder(pid)
    sharing = [p for p in sched.participants if sched.holder(p) == holder]
    budget = sched.settings.budget_for(sched.sides[pid])
    whose = "Your steps" if len(sharing) == 1 else f"Steps shared by {_members(sharing)}"
    return f"{whose}: {budget} for the task ({_wait_clause(sched, pid)})."


def task_budgets(settings: SessionSettings, sides: Mapping[str, Side]) -> str:
    """Every member's task budget and what a wait costs it (the build phase states it before the
    team chooses anything whose cost is counted in steps)."""
    sched = Scheduler(settings, sides)
    groups: dict[tuple[int, str, bool], list[str]] = {}
    for pid in sched.participants:
        shared = sum(sched.holder(p) == sched.holder(pid) for p in sched.participants) > 1
        key = (settings.budget_for(sched.sides[pid]), _wait_clause(sched, pid), shared)
        groups.setdefault(key, []).append(pid)
    parts = [f"{_members(pids)} {budget} steps{' together' if shared else ' each' if len(pids) > 1 else ''} ({clause})"
             for (budget, clause, shared), pids in groups.items()]
    return "During the task: " + "; ".join(parts) + "."
