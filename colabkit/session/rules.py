"""The session's rules as a member reads them, rendered from the objects that enforce them.

Every sentence a prompt states about budgets and costs is written here from the engine's own
objects, never typed twice: what a member's steps are and whether its wait spends one (the
`Scheduler` of the session: `budget_for`, `holder`, `clocked`), and what a gated action
costs in turns (the same scheduler rules, for the build's gate choice and the task's gate
rules). So the text and the behaviour cannot disagree, and `colabkit prompts lint` checks the
numbers a prompt states against the scheduler it came from.

- `budget_line(sched, pid)`: the member's own steps and what its wait costs (the task phase's
  "Team" section, after the end rule; the same text in a variant and its Default twin).
- `task_budgets(settings, sides)`: every member's steps, for the build phase (where gates are
  chosen before anyone has a budget in view).
- `GATE_COST`: what a held action costs, in the build's gate choice and the task's gate rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from colabkit.session.scheduler import Scheduler
from colabkit.session.settings import SessionSettings, Side

GATE_COST = ("A held action costs its proposer the step that proposes it; deciding it costs its signatory no "
             "step (but every turn of the AI agent is a step of its budget); it takes effect only when approved, at the signatory's next turn (the turn order is drawn afresh "
             "every round, so that may be the next round: one more step of the AI agent's).")
"""What a gate costs in turns, as `Scheduler` and the engine's held requests make it (a decision
is its signatory's step, `Scheduler.record_step`; a request is decided when its signatory is
next asked, in the round order of `round_order`)."""


def _members(pids: Sequence[str]) -> str:
    return pids[0] if len(pids) == 1 else ", ".join(pids[:-1]) + " and " + pids[-1]


def _wait_clause(sched: Scheduler, pid: str) -> str:
    if sched.clocked(pid):
        return "every turn is one, a wait or a decision on a request included"
    return "every turn but a wait or a decision on a request is one; waits and decisions are free"


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
