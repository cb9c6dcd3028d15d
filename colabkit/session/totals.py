"""Per-session counts for the session record, derived from the event log alone.

Computing them from the events (not from counters kept on the side) means a stored log and
its record can never disagree; the budgets come from the spec. Work (W) is not here: it is a
study metric with its own definition (analysis layer); the counts here are its raw material.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from colabkit.session.actions import MEMORY_UPDATE
from colabkit.session.events import CLOSING_PASS, DECISION_ACTIONS, REQUEST_VOIDED, Event
from colabkit.session.settings import SessionSettings, Side


class Totals(BaseModel):
    """One session's counts. Flat, so a loader can make one column of each field.

    `actions` counts task-phase steps other than waits (failed steps included), all sides
    together; `ai_actions` and `human_actions` split it by side (the humans' together), and
    `ai_budget`, `human_budget` and `team_budget` (None: no team-wide cap) are the budgets
    they were counted against (`human_budget` is each human's own cap under the "ai_budget"
    rule, the humans' pooled budget under the Co-Gym rules). A side's figures exist even when
    it has no members (a single agent's `human_actions` is 0), so every session has the same
    columns. Decisions on requests (approve/reject) are machinery (`Event.kind`, issue 42): off
    every budget, in no side's actions; `decisions` counts those made in the task (the closing
    pass's are `closing_decisions`). `past_budget_decisions` (records before version 7: decisions
    made after the member's budget was spent, then counted in its side's actions) is 0 now.

    The closing pass (`colabkit.session.engine`): `closing_decisions` are the decisions made
    in it (off budget, so in no side's actions), `closing_llm_calls` and `closing_paid_cost`
    what it asked and paid (also in the calls' figures: it runs past a spending cap, so its
    spend is reported apart); `expired` counts what was still open at the end (0 but after a
    crash, a provider refusal or a signatory whose answers kept failing), split by the held
    action in `expired_<action>` (`expired_memory_update`: a living memory's updates).

    The calls' figures (`llm_calls`, tokens) count every answer the session used. What was
    paid is `paid_cost`; answers the suite's response cache replayed are `suite_replays`,
    their original cost `replayed_cost` (not paid by this run); `provider_cached_tokens`
    are prompt tokens the provider served from its prefix cache. Totals stored before
    record version 3 had `cost` (replays counted as paid) and `cache_hits`; they are read
    into these fields (`upgrade_totals`).
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
    paid_cost: float | None
    """None only for an older record whose replays were counted as paid (split unknown)."""
    replayed_cost: float | None
    suite_replays: int
    provider_cached_tokens: int
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
    past_budget_decisions: int = 0
    closing_decisions: int = 0
    expired_send_message: int = 0
    expired_execute_code: int = 0
    expired_edit_result: int = 0
    expired_finish: int = 0
    expired_memory_update: int = 0
    """Fields from `past_budget_decisions` on are record version 4's (0 in older records)."""
    ai_turns: int = 0
    closing_llm_calls: int = 0
    closing_paid_cost: float = 0.0
    """Record version 6: the AI agent's task-phase steps, its waits included (under "ai_budget"
    every one is a step of its budget), and the calls and cost of the closing pass, which runs
    past a spending cap (0 in older records)."""
    decisions: int = 0
    voided: int = 0
    machinery_llm_calls: int = 0
    machinery_tokens: int = 0
    machinery_paid_cost: float = 0.0
    build_llm_calls: int = 0
    build_tokens: int = 0
    build_paid_cost: float = 0.0
    """Record version 7 (issue 42): the task's decisions (machinery, off budget), the requests
    void because a finish proposed before them took effect (`request_voided`), the calls,
    tokens and cost of all machinery (the build phase, decisions, the closing pass), never
    charged to the task's caps, and the build phase's part of them, charged to its own declared
    budget (`SessionSettings.build_budget`; 0 in older records)."""

    @model_validator(mode="before")
    @classmethod
    def _read_older(cls, data: Any) -> Any:
        return upgrade_totals(data) if isinstance(data, dict) else data


def upgrade_totals(raw: dict[str, Any]) -> dict[str, Any]:
    """Stored totals in this version's fields; a current dict is returned unchanged.

    Before version 3, `cost` counted suite replays at their original cost and `cache_hits`
    counted the replays. Without replays `cost` was all paid; with some, the split is
    unknown from the totals alone (the events have it), so both costs are None.
    """
    if "cache_hits" not in raw and "cost" not in raw:
        return raw
    data = dict(raw)
    replays = int(data.pop("cache_hits", 0) or 0)
    cost = data.pop("cost", 0.0)
    data.setdefault("suite_replays", replays)
    data.setdefault("paid_cost", cost if replays == 0 else None)
    data.setdefault("replayed_cost", 0.0 if replays == 0 else None)
    data.setdefault("provider_cached_tokens", 0)
    return data


def session_totals(
    events: Sequence[Event], settings: SessionSettings, sides: Mapping[str, Side], *, rounds: int
) -> Totals:
    """Counts of steps (per side), calls, tokens, cost, gates and workspace changes."""
    calls = [call for event in events for call in event.llm_calls]
    task = [e for e in events if e.phase == "task"]
    # The one rule (`Event.kind`): a member's own turns are steps; an approved action taking
    # effect is its proposer's effect, not a turn; decisions and the closing pass are machinery.
    steps = [e for e in task if e.kind == "step"]
    acted = [e for e in steps if e.action != "wait"]
    machinery = [c for e in events if e.kind == "machinery" for c in e.llm_calls]
    build = [c for e in events if e.phase == "build" for c in e.llm_calls]
    expired = [e for e in task if e.action == "request_expired"]

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
        paid_cost=sum(c.cost for c in calls),
        replayed_cost=sum(c.replayed_cost for c in calls),
        suite_replays=sum(1 for c in calls if c.suite_replay),
        provider_cached_tokens=sum(c.provider_cached_tokens for c in calls),
        requests=sum(1 for e in task if e.status == "pending"),
        approved=count("approve", "approved"),
        rejected=count("reject", "rejected"),
        expired=len(expired),
        messages=count("send_message", "ok"),
        cells=sum(1 for e in task if e.action == "execute_code" and e.status in ("ok", "error")),
        edits=count("edit_result", "ok"),
        kernel_restarts=sum(1 for e in task if e.action == "kernel_restart"),
        ai_budget=settings.budget_for("ai"),
        human_budget=settings.budget_for("human"),
        team_budget=settings.team_action_budget,
        ai_actions=side_actions("ai"),
        human_actions=side_actions("human"),
        closing_decisions=sum(1 for e in task if closing_step(e) and e.status in ("approved", "rejected")),
        ai_turns=sum(1 for e in steps if sides.get(e.participant) == "ai"),
        closing_llm_calls=sum(len(e.llm_calls) for e in task if closing_step(e)),
        closing_paid_cost=sum(c.cost for e in task if closing_step(e) for c in e.llm_calls),
        decisions=sum(1 for e in task if e.action in DECISION_ACTIONS and e.status in ("approved", "rejected")
                      and not closing_step(e)),
        voided=sum(1 for e in task if e.action == REQUEST_VOIDED),
        machinery_llm_calls=len(machinery),
        machinery_tokens=sum(c.total_tokens for c in machinery),
        machinery_paid_cost=sum(c.cost for c in machinery),
        build_llm_calls=len(build),
        build_tokens=sum(c.total_tokens for c in build),
        build_paid_cost=sum(c.cost for c in build),
        **{f"expired_{name}": sum(1 for e in expired if e.args.get("action") == action)
           for name, action in EXPIRED_FIELDS.items()},
    )


EXPIRED_FIELDS = {"send_message": "send_message", "execute_code": "execute_code", "edit_result": "edit_result",
                  "finish": "finish", "memory_update": MEMORY_UPDATE}
"""`Totals.expired_<name>` -> the held action it counts."""


def closing_step(event: Event) -> bool:
    """Whether `event` is a step of the engine's closing pass (marked in its args)."""
    return bool(event.args.get(CLOSING_PASS))
