"""Per-session counts for the session record, derived from the event log alone.

Computing them from the events (not from counters kept on the side) means a stored log and
its record can never disagree; the budgets come from the spec. Work (W) is not here: it is a
study metric with its own definition (analysis layer); the counts here are its raw material.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from colabkit.session.events import SYSTEM, Event
from colabkit.session.settings import SessionSettings, Side


class Totals(BaseModel):
    """One session's counts. Flat, so a loader can make one column of each field.

    `actions` counts task-phase steps other than waits (failed steps included), all sides
    together; `ai_actions` and `human_actions` split it by side (the humans' together), and
    `ai_budget`, `human_budget` and `team_budget` (None: no team-wide cap) are the budgets
    they were counted against. A side's figures exist even when it has no members (a single
    agent's `human_actions` is 0), so every session has the same columns.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    rounds: int
    actions: int
    waits: int
    failed_steps: int
    build_events: int
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    tokens: int
    cost: float
    cache_hits: int
    requests: int
    approved: int
    rejected: int
    expired: int
    messages: int
    cells: int
    edits: int
    kernel_restarts: int
    ai_budget: int
    human_budget: int
    team_budget: int | None
    ai_actions: int
    human_actions: int


def session_totals(
    events: Sequence[Event], settings: SessionSettings, sides: Mapping[str, Side], *, rounds: int
) -> Totals:
    """Counts of steps (per side), calls, tokens, cost, gates and workspace changes."""
    calls = [call for event in events for call in event.llm_calls]
    task = [e for e in events if e.phase == "task"]
    # Every participant event is a step of its own, except an approved action taking effect
    # as its proposer's (participant == proposer): that step was the signatory's decision.
    steps = [e for e in task if e.participant != SYSTEM and e.participant != e.proposer]
    acted = [e for e in steps if e.action != "wait"]

    def count(action: str, status: str) -> int:
        return sum(1 for e in task if e.action == action and e.status == status)

    def side_actions(side: Side) -> int:
        return sum(1 for e in acted if sides.get(e.participant) == side)

    return Totals(
        rounds=rounds,
        actions=len(acted),
        waits=len(steps) - len(acted),
        failed_steps=sum(1 for e in events if e.status == "failed_step"),
        build_events=sum(1 for e in events if e.phase == "build"),
        llm_calls=len(calls),
        prompt_tokens=sum(c.prompt_tokens for c in calls),
        completion_tokens=sum(c.completion_tokens for c in calls),
        tokens=sum(c.prompt_tokens + c.completion_tokens for c in calls),
        cost=sum(c.cost for c in calls),
        cache_hits=sum(1 for c in calls if c.cache_hit),
        requests=sum(1 for e in task if e.status == "pending"),
        approved=count("approve", "approved"),
        rejected=count("reject", "rejected"),
        expired=sum(1 for e in task if e.action == "request_expired"),
        messages=count("send_message", "ok"),
        cells=sum(1 for e in task if e.action == "execute_code" and e.status in ("ok", "error")),
        edits=count("edit_result", "ok"),
        kernel_restarts=sum(1 for e in task if e.action == "kernel_restart"),
        ai_budget=settings.budget_for("ai"),
        human_budget=settings.budget_for("human"),
        team_budget=settings.team_action_budget,
        ai_actions=side_actions("ai"),
        human_actions=side_actions("human"),
    )
