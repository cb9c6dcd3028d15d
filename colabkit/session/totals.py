"""Per-session counts for the session record, derived from the event log alone.

Computing them from the events (not from counters kept on the side) means a stored log and
its record can never disagree. Work (W) is not here: it is a study metric with its own
definition (analysis layer); the counts here are the raw material for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from colabkit.session.events import Event
from colabkit.session.scheduler import Scheduler


def session_totals(events: Sequence[Event], sched: Scheduler, *, rounds: int) -> dict[str, float]:
    """Counts of steps, calls, tokens, cost, gates and workspace changes."""
    calls = [call for event in events for call in event.llm_calls]
    task = [e for e in events if e.phase == "task"]

    def count(action: str, status: str) -> int:
        return sum(1 for e in task if e.action == action and e.status == status)

    return {
        "rounds": rounds,
        "actions": sched.actions,
        "waits": sched.waits,
        "failed_steps": sum(1 for e in events if e.status == "failed_step"),
        "build_events": sum(1 for e in events if e.phase == "build"),
        "llm_calls": len(calls),
        "prompt_tokens": sum(c.prompt_tokens for c in calls),
        "completion_tokens": sum(c.completion_tokens for c in calls),
        "tokens": sum(c.prompt_tokens + c.completion_tokens for c in calls),
        "cost": sum(c.cost for c in calls),
        "cache_hits": sum(1 for c in calls if c.cache_hit),
        "requests": sum(1 for e in task if e.status == "pending"),
        "approved": count("approve", "approved"),
        "rejected": count("reject", "rejected"),
        "expired": sum(1 for e in task if e.action == "request_expired"),
        "messages": count("send_message", "ok"),
        "cells": sum(1 for e in task if e.action == "execute_code" and e.status in ("ok", "error")),
        "edits": count("edit_result", "ok"),
        "kernel_restarts": sum(1 for e in task if e.action == "kernel_restart"),
    }
