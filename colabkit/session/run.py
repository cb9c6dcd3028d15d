"""`run_session`: one task x one team variant x one seed, played to the end and logged.

It opens the workspace (the kernel starts while the first model calls are asked), plays the
engine's `_Session` through its rounds and the closing pass, and returns a `SessionResult`.
It does no file I/O: events go to the caller's sink as they happen.

Failure policy (fail closed, always recorded): a malformed model answer or an impossible action
is a failed step and the session goes on; `BudgetExceeded` ends it with ended_by "llm_budget",
after the closing pass (which runs past the cap, its spend recorded apart in
`Totals.closing_paid_cost`), so the cost cap loses no open request; `ProviderError` (a refusal
no retry can fix: bad key, unknown model) ends it at once with ended_by "provider_error" and the
provider's one-line error, instead of spending the action budget on failed steps;
`ProviderUnavailable` (no answer within the gateway's retry bound: connection refused or reset,
DNS, TLS, read timeouts, 429/5xx) ends it with ended_by "provider_unavailable", its events so
far kept (an outage, not the team's doing: the next batch reruns it, replaying what was paid
from the response cache); a workspace kernel that would not start, retried once
(`KernelUnavailable`), ends it with ended_by "kernel_unavailable" (the host's doing: rerun
like an outage); any other exception is a bug, and still ends it with ended_by "error"
and a `session_end` event carrying the exception, so a batch never loses a session silently.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from colabkit.errors import ColabkitError
from colabkit.llm import BudgetExceeded, CallRecord, Gateway, ProviderError, ProviderUnavailable
from colabkit.session.engine import _Session
from colabkit.session.events import SYSTEM, EndedBy, EventLog, EventSink
from colabkit.session.hooks import ReplayHook
from colabkit.session.seats.policy import Seat, check_seats
from colabkit.session.settings import ENGINE_RULES, SessionSpec
from colabkit.session.totals import Totals, session_totals
from colabkit.tasks import Task
from colabkit.team import MemoryRecord
from colabkit.workspace import IsolationReport, KernelUnavailable, Workspace, WorkspaceSnapshot


class SessionResult(BaseModel):
    """How a session ended and what it produced (the events went to the sink).

    `briefings` (the private text each participant received) and `persona_versions` are
    per session, not per event: they are fixed before the first step.
    """

    session_id: str
    spec: SessionSpec
    task_digest: str
    briefings: dict[str, str]
    persona_versions: dict[str, str]
    final_hypothesis: str
    ended_by: EndedBy
    budget_side: str | None = None
    """When `ended_by` is "budget": whose budget ended it ("ai", "human" or "team"; see
    `Scheduler.budget_end`, under `spec.settings.termination`)."""
    memory: MemoryRecord | None
    isolation: IsolationReport
    snapshot: WorkspaceSnapshot
    n_events: int
    totals: Totals



async def run_session(
    spec: SessionSpec, task: Task, *, gateway: Gateway, sink: EventSink, workdir_root: Path | None = None,
    seats: Mapping[str, Seat] | None = None, fork: ReplayHook | None = None, logs: Path | None = None,
) -> SessionResult:
    """Run `spec` on `task`, emitting every event to `sink`; return how it ended.

    `seats` holds the participants a person plays (`seats.PersonSeat`), each named in the
    spec by `person.person_model`; every other participant is its model. Raises only for
    problems before anything can run (a task that does not match the spec, a person seat
    nobody holds, a workspace that cannot open: logged as a `session_end` error event
    first); everything after that ends in a `SessionResult`. `logs` is where the workspace
    writes its kernel's log (`Workspace.open`; default its private folder).
    """
    if spec.task_id != task.id:
        raise ColabkitError(f"session spec is for task {spec.task_id!r} but task {task.id!r} was given")
    if spec.engine_rules != ENGINE_RULES:
        raise ColabkitError(f"session {spec.session_id} was recorded under the engine's rules {spec.engine_rules}; "
                            f"this engine runs rules {ENGINE_RULES} and cannot rerun or continue it")
    seats = dict(seats or {})
    check_seats({pid: spec.model_for(pid) for pid in spec.variant.team}, spec.variant.team, seats)
    log = EventLog(spec.session_id, sink) if fork is None else EventLog(fork.session_id, fork.verifying(sink))
    try:
        # The kernel starts while the first model calls are asked (a cell waits for it).
        ws = await Workspace.open([d.path for d in task.datasets], root=workdir_root, limits=spec.settings.limits,
                                  start_kernel="background", logs=logs)
    except Exception as exc:
        log.emit(phase="task", round=0, participant=SYSTEM, action="session_end", status="error",
                 args={"ended_by": "error"}, result=f"workspace failed to open: {type(exc).__name__}: {exc}")
        raise
    try:
        session = _Session(spec, task, ws, gateway, log, seats, fork)
        detail: dict[str, Any] = {}
        calls: tuple[CallRecord, ...] = ()
        try:
            try:
                ended_by = await session.play()
            except BudgetExceeded as exc:
                ended_by, detail = "llm_budget", {"error": f"LLM budget exceeded: {exc.reason}"}
            # every open request decided, past the cap if need be; a held finish it lets take effect ends it
            ended_by = await session.closing_pass(ended_by)
        except ProviderUnavailable as exc:  # an outage: rerun later, never an outcome
            ended_by, detail, calls = "provider_unavailable", {"error": str(exc)}, tuple(exc.records)
        except ProviderError as exc:  # the failed call's records stay in the log: attempts are data
            ended_by, detail, calls = "provider_error", {"error": str(exc)}, tuple(exc.records)
        except KernelUnavailable as exc:  # the host's doing, like an outage: rerun later, never an outcome
            ended_by, detail = "kernel_unavailable", {"error": str(exc)}
        except Exception as exc:  # a bug: end the session closed and recorded, never silently
            ended_by = "error"
            detail = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=8)}
        session.close(ended_by, detail, calls)
    finally:
        # Closed before the record is read: the workspace fills its folder and starts its
        # kernel in the background, and its isolation report and snapshot are final once
        # that has ended (a session can end before its first cell).
        await ws.close()
    return SessionResult(
        session_id=log.session_id,
        spec=session.spec,  # a fork's as it was after its change
        task_digest=task.task_digest,
        briefings=session.briefings,
        persona_versions={pid: session.variant.persona(pid).version for pid in session.variant.team},
        final_hypothesis=ws.editor.text,
        ended_by=ended_by,
        budget_side=session.budget_side,
        memory=session.board.memory,
        isolation=ws.isolation,
        snapshot=ws.snapshot(),
        n_events=len(log.events),
        totals=session_totals(log.events, spec.settings, session.sides, rounds=session.round),
    )
