"""One session of a batch, whichever executor runs it (the local asyncio batch or Dask).

Both executors import `run_one` from here, so neither needs the other: it finds a session
done or runs it under this process's and this machine's limits, and turns its record into a
`SessionOutcome` for the batch report.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

from colabkit.llm import Budget, Spend
from colabkit.runner.executors.slots import MachineSlots
from colabkit.runner.experiment import LLMBudget
from colabkit.runner.progress import SessionOutcome, journal
from colabkit.runner.recorder import (
    PROVIDER_ENDINGS,
    RETRYABLE_ENDINGS,
    SessionBusy,
    needs_run,
    read_record,
    record_if_needed,
)
from colabkit.runner.workarea import SessionLock
from colabkit.session import Event, SessionSpec
from colabkit.store import EVENTS_FILE, mean_gate_delay, session_dir
from colabkit.tasks import Task


def outcome_of(spec: SessionSpec, folder: Path, *, ran: bool) -> SessionOutcome:
    """The outcome of a session whose record is on disk."""
    record = read_record(folder)
    failed = record.ended_by in RETRYABLE_ENDINGS
    events = _events(folder) if ran or record.totals.requests else []  # a gate's delay needs them
    return SessionOutcome(
        session_id=spec.session_id, task_id=spec.task_id, variant=spec.variant.name, seed=spec.seed,
        status="cached" if not ran else ("failed" if failed else "done"), ran_here=ran, ended_by=record.ended_by,
        ai_steps=record.totals.ai_actions, expired_requests=record.totals.expired, ai_turns=record.totals.ai_turns,
        gate_delay=mean_gate_delay(events),
        error=_session_error(events) if failed and ran else None,
        tokens=record.totals.tokens if ran else 0, spend=Spend.of(c for e in events for c in e.llm_calls))


def _events(folder: Path) -> list[Event]:
    return [Event.model_validate_json(line) for line in (folder / EVENTS_FILE).read_bytes().splitlines() if line]


def _session_error(events: list[Event]) -> str | None:
    """The reason an errored session gave in its last event (`session_end`)."""
    last = events[-1] if events else None
    return last.result[:300] if last is not None and last.action == "session_end" else None


def session_budget(caps: LLMBudget) -> Budget | None:
    if caps.max_cost_per_session is None and caps.max_tokens_per_session is None:
        return None
    return Budget(max_cost=caps.max_cost_per_session, max_tokens=caps.max_tokens_per_session)


async def run_one(spec: SessionSpec, task: Task, *, out: Path, limit: asyncio.Semaphore,
                  caps: LLMBudget = LLMBudget(),
                  on_event: Callable[[Event], None] | None = None,
                  refused: list[str] | None = None, slots: MachineSlots | None = None) -> SessionOutcome:
    """Run one session of a batch (or find it done); never raises for the session's own failure.

    `limit` bounds this process's sessions, `slots` (when given) this machine's, across
    processes. Once a provider has refused an earlier session or stayed out of reach past the
    retry bound (`refused` holds why), the session is not started: its outcome is "skipped".
    """
    folder = session_dir(spec, out)
    if not needs_run(folder):
        return outcome_of(spec, folder, ran=False)
    while True:
        async with limit, (slots.hold() if slots is not None else nullcontext()):
            if refused:
                return SessionOutcome(session_id=spec.session_id, task_id=spec.task_id, variant=spec.variant.name,
                                      seed=spec.seed, status="skipped", ran_here=False, error=refused[0])
            try:
                folder, ran = await record_if_needed(spec, task, out=out, progress=on_event,
                                                     budget=session_budget(caps), wait=False)
                break
            except SessionBusy:
                pass
            except Exception as exc:  # recorded with its reason; the batch goes on
                outcome = SessionOutcome(session_id=spec.session_id, task_id=spec.task_id,
                                         variant=spec.variant.name, seed=spec.seed, status="failed",
                                         ran_here=True, error=f"{type(exc).__name__}: {exc}"[:300])
                journal(out, outcome)
                return outcome
        await _until_free(out, spec.session_id)  # another process runs it: free the slot meanwhile
    outcome = outcome_of(spec, folder, ran=ran)
    if ran:
        journal(out, outcome)
        if outcome.ended_by in PROVIDER_ENDINGS and refused is not None:  # the circuit breaker opens
            refused.append(outcome.error or f"the session ended {outcome.ended_by}")
    return outcome


async def _until_free(out: Path, session_id: str) -> None:
    lock = SessionLock(out, session_id)
    await lock.acquire()
    lock.release()
