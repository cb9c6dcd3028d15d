"""Run one session and store it: the idempotent unit every entry point and batch builds on.

`colabkit.session.run_session` is pure simulation (no file I/O) and `colabkit.store` is the
file format; this module runs the one into the other, as tau2-bench separates its
simulation layer from its batch layer. A session's folder is named by its spec's identity,
so asking for the same session twice is free: a folder with `session.json` is finished and
is returned untouched; a folder without it is debris of an interrupted run and is redone
from scratch (never read as finished). Reruns replay model answers from the results'
on-disk LLM cache.

Concurrency between processes: the session's lock (`workarea.SessionLock`) is held from
before its folder is looked at until its record is written, so a second process asking for
the same session waits, then finds it finished. The session's workspace lives in the
results' private work area and is removed when the session ends; what a killed process left
there is removed by the next holder of the lock.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path

from colabkit.errors import ColabkitError
from colabkit.llm import Budget, Gateway, logging_prompts
from colabkit.runner.failure_logs import logs_dir, settle_logs
from colabkit.runner.workarea import SessionLock, clear_session_work, session_work_dir
from colabkit.session import Event, SessionResult, SessionSpec, run_session
from colabkit.session.events import INFRASTRUCTURE_ENDINGS
from colabkit.session.seats.policy import Seat, check_seats
from colabkit.store import (
    CACHE_DIR,
    EVENTS_FILE,
    PROMPTS_FILE,
    SESSION_FILE,
    SNAPSHOT_FILE,
    JsonlEventSink,
    SessionRecord,
    atomic_write_text,
    is_finished,
    session_dir,
)
from colabkit.store.records import plan_at_start, record_plan_at_start
from colabkit.tasks import Task
from colabkit.workspace.kernel import blocking

RETRYABLE_ENDINGS = INFRASTRUCTURE_ENDINGS
"""How a session may end that says nothing about the team: `--retry-errors` reruns these."""
PROVIDER_ENDINGS: frozenset[str] = frozenset({"provider_error", "provider_unavailable"})
"""Ends a provider caused (a refusal; an outage past the retry bound): no result at all, so
every batch and `colabkit run` reruns them without being asked (the response cache replays
what was paid), and a batch that sees one stops starting sessions (its circuit breaker)."""
NO_RESULT_ENDINGS: frozenset[str] = PROVIDER_ENDINGS | {"kernel_unavailable"}
"""Ends that are no result at all, rerun by every batch and `colabkit run` without being
asked: the provider's, and a workspace kernel that would not start (retried once within the
session first). Only the provider's open the circuit breaker: a kernel is this machine's."""


_FILES = ThreadPoolExecutor(max_workers=8, thread_name_prefix="colabkit-record")


class SessionBusy(Exception):
    """Another process holds this session's lock (it is running it)."""


def read_record(folder: Path) -> SessionRecord:
    return SessionRecord.model_validate_json((folder / SESSION_FILE).read_bytes())


def needs_run(folder: Path) -> bool:
    """Whether the session in `folder` must (re)run: exactly when it is not finished."""
    return not is_finished(folder)


def reopen_for_retry(specs: Iterable[SessionSpec], out: Path | str, *, before: datetime,
                     endings: frozenset[str] = RETRYABLE_ENDINGS) -> list[str]:
    """Make finished sessions that ended in one of `endings` unfinished again; return their ids.

    Only sessions finished before `before` (a batch's start) are reopened, so a session
    retried meanwhile by a concurrent batch is not retried twice. The record is removed
    under the session's lock, so no running session is touched; the next run redoes it.
    """
    reopened = []
    for spec in specs:
        folder = session_dir(spec, out)
        if not _retryable(folder, before, endings):
            continue
        lock = SessionLock(out, spec.session_id)
        if not lock.try_acquire():
            continue  # someone is running it right now: that is its retry
        try:
            if _retryable(folder, before, endings):
                (folder / SESSION_FILE).unlink()
                reopened.append(spec.session_id)
        finally:
            lock.release()
    return reopened


def _retryable(folder: Path, before: datetime, endings: frozenset[str]) -> bool:
    if not is_finished(folder):
        return False
    record = read_record(folder)
    return record.ended_by in endings and record.finished < before


class _Tee:
    """Forwards each event to the log, then to a progress callback (which sees only logged events)."""

    def __init__(self, sink: JsonlEventSink, progress: Callable[[Event], None]) -> None:
        self.sink, self.progress = sink, progress

    def emit(self, event: Event) -> None:
        self.sink.emit(event)
        self.progress(event)


async def arecord_session(
    spec: SessionSpec,
    task: Task,
    *,
    out: Path | str,
    gateway: Gateway | None = None,
    progress: Callable[[Event], None] | None = None,
    budget: Budget | None = None,
    log_prompts: bool = False,
    seats: Mapping[str, Seat] | None = None,
) -> Path:
    """Async form of `record_session`, for callers already inside an event loop; `seats` are
    the participants a person plays (see `colabkit.session.seats.policy`; the seat notebook)."""
    folder, _ = await record_if_needed(spec, task, out=out, gateway=gateway, progress=progress, budget=budget,
                                       log_prompts=log_prompts, seats=seats)
    return folder


async def record_if_needed(
    spec: SessionSpec,
    task: Task,
    *,
    out: Path | str,
    gateway: Gateway | None = None,
    progress: Callable[[Event], None] | None = None,
    budget: Budget | None = None,
    wait: bool = True,
    log_prompts: bool = False,
    seats: Mapping[str, Seat] | None = None,
) -> tuple[Path, bool]:
    """(folder, whether this call ran the session): the batch runner's view of `arecord_session`.

    With `wait=False`, a session another process is running raises `SessionBusy` at once
    (a batch then runs other sessions and comes back to it).
    """
    if spec.task_id != task.id:
        raise ColabkitError(f"session spec is for task {spec.task_id!r} but task {task.id!r} was given")
    out = Path(out)
    folder = session_dir(spec, out)
    if needs_run(folder):  # a stored session with a person replays from its record; a new one needs the person
        check_seats({pid: spec.model_for(pid) for pid in spec.variant.team}, spec.variant.team, seats or {})
    if not needs_run(folder):
        return folder, False
    lock = SessionLock(out, spec.session_id)
    if not wait and not lock.try_acquire():
        raise SessionBusy(spec.session_id)
    await lock.acquire()
    try:
        # Another process may have finished it while we waited for the lock.
        if not needs_run(folder):
            return folder, False
        await _run_locked(spec, task, out=out, folder=folder, gateway=gateway, progress=progress, budget=budget,
                          log_prompts=log_prompts, seats=seats)
        return folder, True
    finally:
        lock.release()


async def _run_locked(spec: SessionSpec, task: Task, *, out: Path, folder: Path, gateway: Gateway | None,
                      progress: Callable[[Event], None] | None, budget: Budget | None,
                      log_prompts: bool, seats: Mapping[str, Seat] | None = None) -> None:
    """Redo the session from scratch (the caller holds its lock) and write its files.

    The file work (clearing the folder, opening the response cache's database, writing the
    record) runs in this module's worker threads: a batch starts dozens of sessions at once
    on one event loop, and every other session's model requests wait while it is blocked.
    Not in the loop's default executor (litellm sets each request up there) nor the
    workspaces' (queued behind their copies); a step whose caller is cancelled still
    finishes before the session's lock is released (`kernel.blocking`).
    """
    own_gateway = gateway is None
    gateway = await blocking(_fresh_folder, out, folder, spec.session_id, gateway, budget, pool=_FILES,
                             undo=lambda opened: opened.close() if own_gateway else None)

    started = datetime.now(UTC)
    keeping_prompts = logging_prompts() if log_prompts else nullcontext()
    try:
        with JsonlEventSink(folder / EVENTS_FILE) as sink, keeping_prompts as prompts:
            target = sink if progress is None else _Tee(sink, progress)
            result = await run_session(spec, task, gateway=gateway, sink=target, logs=logs_dir(folder),
                                       workdir_root=session_work_dir(out, spec.session_id), seats=seats)
            sink.finalise()
    except Exception as exc:  # no record: the folder stays unfinished (rerun), its logs say why
        await blocking(settle_logs, folder, None, exc, pool=_FILES)
        raise
    finally:
        if own_gateway:
            gateway.close()  # releases the on-disk cache; a batch opens many gateways
        await blocking(clear_session_work, out, spec.session_id, pool=_FILES)
    finished = datetime.now(UTC)
    prompts_text = None if prompts is None else prompts.jsonl()
    await blocking(settle_logs, folder, result, pool=_FILES)
    await blocking(_store, result, out, folder, started, finished, prompts_text, pool=_FILES)


def _fresh_folder(out: Path, folder: Path, session_id: str, gateway: Gateway | None, budget: Budget | None) -> Gateway:
    """Empty the session's folder; return `gateway`, or one over the results' response cache
    (one worker-thread step: each hop to the pool costs the session's start a wait)."""
    # The record goes first: from here on the folder reads as unfinished, whatever happens.
    (folder / SESSION_FILE).unlink(missing_ok=True)
    if folder.exists():
        shutil.rmtree(folder)
    clear_session_work(out, session_id)
    folder.mkdir(parents=True)
    record_plan_at_start(out, session_id)  # the plan lock binds from the first session started
    return gateway if gateway is not None else Gateway(cache_dir=out / CACHE_DIR, budget=budget)


def _store(result: SessionResult, out: Path, folder: Path, started: datetime, finished: datetime,
           prompts: str | None) -> None:
    """Write the session's files, its record last (what makes the folder read as finished)."""
    record = SessionRecord.from_result(result, started=started, finished=finished).model_copy(
        update={"analysis_plan": plan_at_start(out, result.session_id)})
    if prompts is not None:
        atomic_write_text(folder / PROMPTS_FILE, prompts)
    atomic_write_text(folder / SNAPSHOT_FILE, result.snapshot.model_dump_json(indent=1))
    atomic_write_text(folder / SESSION_FILE, record.model_dump_json(indent=1))


def record_session(
    spec: SessionSpec,
    task: Task,
    *,
    out: Path | str,
    gateway: Gateway | None = None,
    progress: Callable[[Event], None] | None = None,
    log_prompts: bool = False,
) -> Path:
    """Run `spec` on `task` unless already stored; return its folder `out/<session id>/`.

    Writes `events.jsonl` (finalised atomically), `snapshot.json`, then `session.json`.
    With `log_prompts`, also `prompts.jsonl` (every distinct rendered prompt with its
    `prompt_hash`, the key in each event's LLM call records). It is not part of the spec:
    logging prompts never changes a session's identity, and asking for prompts of a session
    already finished returns it as stored (it is not rerun).
    Without a `gateway`, model answers are cached in `out/llm-cache` so a rerun replays them.
    `progress`, if given, is called with each event once it is logged (a CLI's live view).
    If another process is running the same session into `out`, this waits for it and
    returns its result. Works from plain scripts and from Jupyter (whose kernel already runs
    an event loop: the session then runs on a worker thread).
    """
    coro = arecord_session(spec, task, out=out, gateway=gateway, progress=progress, log_prompts=log_prompts)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
