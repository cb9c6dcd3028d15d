"""`fork`: rerun a stored session from event N with one change, under several seeds, into the store.

A continuation is stored exactly like a session (`events.jsonl`, `snapshot.json`,
`session.json`) in a folder named by its `ForkPoint` identity (parent, N, change, seed,
verify mode), so asking again returns it untouched, an interrupted one is redone from scratch
under its lock, and `colabkit score` scores it like any session. Its record's `fork` field
holds the fork point and the replay report; its `spec` is the spec after the change.

How a continuation runs (the engine's part is `colabkit.session.fork.replay`):
- The parent's spec is played again by the ordinary engine with a fresh kernel. Its gateway's
  cache is a `ForkCache`: before N every answer must come from the parent's results cache
  (`<parent results>/llm-cache`); a miss stops the fork (the prefix is 100% cache hits by
  construction, and the report counts them). From N on it never reads the parent's answers:
  new answers are cached in the forks' own results folder under keys salted with the
  continuation's id, so a resumed continuation replays its own answers and two continuations
  never share one.
- Events and cells before N are verified against the parent's log and snapshot (strict: any
  difference stops the fork naming what differed; lenient: cell differences are recorded).
A failed fork leaves nothing behind but an exception with a one-line message.

By default each fork also runs the control (`NoChange`) under the same seeds, so the
counterfactual table (`colabkit.analysis.counterfactual`) can pair change and control seed by
seed. Forks go to `<parent results>/forks/` unless `out` is given.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from colabkit.errors import ColabkitError
from colabkit.hashing import sha256_hex
from colabkit.llm import Gateway, OutputMode
from colabkit.llm.cache import CachedAnswer, ResponseCache
from colabkit.runner.workarea import SessionLock, clear_session_work, session_work_dir
from colabkit.session import Event, run_session
from colabkit.session.fork import (
    Change,
    ForkPoint,
    ForkRecord,
    ForkReplay,
    NoChange,
    VerifyMode,
    check_fork,
    fork_points,
    seat_map,
)
from colabkit.session.structure.registry import structures_for
from colabkit.store import (
    CACHE_DIR,
    EVENTS_FILE,
    SESSION_FILE,
    SNAPSHOT_FILE,
    JsonlEventSink,
    SessionRecord,
    atomic_write_text,
    is_finished,
)
from colabkit.tasks import Task, TaskSuite, load_tasks
from colabkit.workspace import WorkspaceSnapshot

FORKS_DIR = "forks"


class ForkError(ColabkitError):
    """A fork could not be made as asked (its prefix did not replay, its cache lacks an answer)."""


class ForkCache(ResponseCache):
    """The gateway cache of one continuation: the parent's answers before N, its own after.

    Before `continue_from_here()` a key must be in `parent` (a miss is recorded and raised:
    the engine then ends the run and `fork` reports it); afterwards keys are salted with
    `namespace` and read from and written to `own` only.
    """

    def __init__(self, parent: ResponseCache, own: ResponseCache, namespace: str) -> None:
        super().__init__(None)
        self.parent, self.own, self.namespace = parent, own, namespace
        self.replaying = True
        self.prefix_hits = 0
        self.miss: str | None = None

    def continue_from_here(self) -> None:
        self.replaying = False

    def on_disk(self) -> bool:
        return self.parent.on_disk() or self.own.on_disk()

    def get(self, key: str) -> CachedAnswer | None:
        if not self.replaying:
            return self.own.get(self._salted(key))
        answer = self.parent.get(key)
        if answer is None:
            self.miss = (f"model call {self.prefix_hits + 1} of the replayed prefix is not in the parent's "
                         f"cache {self.parent.directory} (key {key[:12]}): the prefix cannot be replayed")
            raise ForkError(self.miss)
        self.prefix_hits += 1
        return answer

    def put(self, key: str, answer: CachedAnswer) -> None:
        if self.replaying:  # unreachable: a prefix miss raised before any request was sent
            raise ForkError("a model answer before the fork point was about to be requested")
        self.own.put(self._salted(key), answer)

    def close(self) -> None:
        self.parent.close()
        self.own.close()

    def _salted(self, key: str) -> str:
        return sha256_hex({"fork": self.namespace, "key": key})


@dataclass
class Parent:
    """A stored session read back for forking."""

    folder: Path
    record: SessionRecord
    events: list[Event]
    snapshot: WorkspaceSnapshot
    cache_dir: Path

    @classmethod
    def load(cls, folder: Path | str, cache_dir: Path | str | None = None) -> Parent:
        folder = Path(folder)
        if not is_finished(folder):
            raise ColabkitError(f"{folder}: not a finished session (no {SESSION_FILE})")
        record = SessionRecord.model_validate_json((folder / SESSION_FILE).read_bytes())
        if record.fork is not None:
            raise ColabkitError(f"{folder}: a fork continuation; fork its parent {record.fork.point.parent_id} instead")
        events = [Event.model_validate_json(line) for line in (folder / EVENTS_FILE).read_bytes().splitlines()
                  if line.strip()]
        snapshot = WorkspaceSnapshot.model_validate_json((folder / SNAPSHOT_FILE).read_bytes())
        cache = Path(cache_dir) if cache_dir is not None else folder.parent / CACHE_DIR
        if not cache.is_dir():
            raise ColabkitError(f"{folder}: no model-answer cache at {cache}; a fork replays the prefix from it")
        return cls(folder, record, events, snapshot, cache)

    def point(self, at: int, change: Change, seed: int, verify: VerifyMode,
              seats: Mapping[str, str] | None) -> ForkPoint:
        """The fork point, checked against this session (one-line errors)."""
        point = ForkPoint(parent_id=self.record.session_id, parent_spec_identity=self.record.spec_identity,
                          at=at, change=change, seed=seed, verify=verify, seats=seat_map(seats))
        check_fork(self.events, self.record.spec.participants, self.record.memory is not None, point,
                   has_structure=bool(structures_for(self.record.spec.variant)))
        if "person" in point.seats.values():
            raise ColabkitError(f"fork of {self.record.session_id}: a fork runs headless, so a person cannot take "
                                "a seat after N here; use 'persona'")
        return point


@dataclass
class ForkSet:
    """The continuations a `fork` call stored: those with the change, and the controls."""

    changed: list[Path] = field(default_factory=list)
    controls: list[Path] = field(default_factory=list)


def fork(session: Path | str, *, at: int, change: Change | None = None, seeds: Sequence[int] = (0,),
         out: Path | str | None = None, verify: VerifyMode = "strict", controls: bool = True,
         seats: Mapping[str, str] | None = None, data_root: Path | str | None = None,
         suite: TaskSuite | None = None, task: Task | None = None,
         cache_dir: Path | str | None = None, concurrency: int = 2) -> ForkSet:
    """Fork the stored session in folder `session` at event `at` (see the module docstring).

    `change` (default: none, the control) is applied at N; one continuation runs per seed in
    `seeds`, plus (`controls`) one control per seed. The task is looked up in `suite`, or the
    tasks under `data_root` (default: the demo tasks), unless given as `task`; `cache_dir` is
    the parent's answer cache (default: `llm-cache` beside the parent's folder). At most
    `concurrency` continuations run at once (the embedded model answers two calls at once on
    two cores). Works from scripts and from Jupyter.
    """
    coro = afork(session, at=at, change=change, seeds=seeds, out=out, verify=verify, controls=controls,
                 seats=seats, data_root=data_root, suite=suite, task=task, cache_dir=cache_dir,
                 concurrency=concurrency)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def afork(session: Path | str, *, at: int, change: Change | None = None, seeds: Sequence[int] = (0,),
                out: Path | str | None = None, verify: VerifyMode = "strict", controls: bool = True,
                seats: Mapping[str, str] | None = None, data_root: Path | str | None = None,
                suite: TaskSuite | None = None, task: Task | None = None,
                cache_dir: Path | str | None = None, concurrency: int = 2) -> ForkSet:
    """Async form of `fork`."""
    parent = Parent.load(session, cache_dir)
    change = change or NoChange()
    seeds = list(dict.fromkeys(seeds))
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
        raise ColabkitError(f"seeds must be non-negative integers, got {seeds!r}")
    task = task or (suite or load_tasks(data_root)).get(parent.record.task_id)
    if task.id != parent.record.task_id:
        raise ColabkitError(f"session {parent.record.session_id} ran task {parent.record.task_id}, not {task.id}")
    if task.task_digest != parent.record.task_digest:
        raise ColabkitError(f"task {task.id}: its metadata changed since session {parent.record.session_id} ran "
                            "(task digest differs); fork with the data it ran on")
    target = Path(out) if out is not None else parent.folder.parent / FORKS_DIR
    wanted = [(False, parent.point(at, change, s, verify, seats)) for s in seeds]
    if controls and change.kind != "none":
        wanted += [(True, parent.point(at, NoChange(), s, verify, seats)) for s in seeds]
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(point: ForkPoint) -> Path:
        async with gate:
            return await record_fork(point, parent, task, out=target)

    folders = await asyncio.gather(*(one(point) for _, point in wanted))
    result = ForkSet()
    for (is_control, _), folder in zip(wanted, folders, strict=True):
        (result.controls if is_control else result.changed).append(folder)
    if change.kind == "none":
        result.controls = list(result.changed)
    return result


async def record_fork(point: ForkPoint, parent: Parent, task: Task, *, out: Path) -> Path:
    """Run one continuation into `out` unless it is finished; return its folder."""
    folder = out / point.session_id
    if is_finished(folder):
        return folder
    lock = SessionLock(out, point.session_id)
    await lock.acquire()
    try:
        if not is_finished(folder):
            await _run_locked(point, parent, task, out=out, folder=folder)
        return folder
    finally:
        lock.release()


async def _run_locked(point: ForkPoint, parent: Parent, task: Task, *, out: Path, folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    clear_session_work(out, point.session_id)
    folder.mkdir(parents=True)
    # The output mode each model answered in (a batch may have learnt a fallback before this
    # session started): the prefix's requests, hence their cache keys, are then the parent's.
    modes: dict[str, OutputMode] = {}
    for call in (c for e in parent.events for c in e.llm_calls if c.error is None):
        if call.output_mode is not None and call.output_mode != "text":
            modes.setdefault(call.model, call.output_mode)
    gateway = Gateway(modes=modes)
    cache = ForkCache(ResponseCache(parent.cache_dir), ResponseCache(out / CACHE_DIR), point.session_id)
    gateway.cache = cache
    replay = ForkReplay(point, parent.events, parent.snapshot.cells, on_fork_point=cache.continue_from_here)
    started = datetime.now(UTC)
    try:
        with JsonlEventSink(folder / EVENTS_FILE) as sink:
            result = await run_session(parent.record.spec, task, gateway=gateway, sink=sink, fork=replay,
                                       workdir_root=session_work_dir(out, point.session_id))
            failure = cache.miss or replay.divergence or (
                None if replay.reached else f"the replay ended ({result.ended_by}) before event {point.at}") or (
                f"{point.change.kind}: the participant of event {point.at} never took its step"
                if replay.step_pending else None)
            if failure is not None:
                raise ForkError(failure if failure.startswith("fork ") else
                                f"fork {point.session_id} of {point.parent_id}: {failure}")
            sink.finalise()
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        gateway.close()
        clear_session_work(out, point.session_id)
    record = SessionRecord.from_result(result, started=started, finished=datetime.now(UTC))
    record = record.model_copy(update={"fork": ForkRecord(point=point, replay=replay.report(cache.prefix_hits))})
    atomic_write_text(folder / SNAPSHOT_FILE, result.snapshot.model_dump_json(indent=1))
    atomic_write_text(folder / SESSION_FILE, record.model_dump_json(indent=1))


def _events(folder: Path) -> list[Event]:
    return [Event.model_validate_json(line) for line in (folder / EVENTS_FILE).read_bytes().splitlines()
            if line.strip()]


def describe_points(session: Path | str) -> list[dict[str, Any]]:
    """The fork points of a stored session, one row each (for the CLI and notebooks)."""
    events = _events(Path(session))
    return [{"at": n, "round": e.round, "participant": e.participant, "action": e.action, "status": e.status,
             "result": " ".join(e.result.split())[:70]}
            for n in fork_points(events) for e in [events[n]]]


def first_message_session(results: Path | str, session_id: str | None = None,
                          at: int | None = None) -> tuple[Path, int]:
    """(session folder, fork point) for a notebook: the named session (else the first with a
    sent message) under `results` or, for a results root, under its experiment folders; at
    `at` (else at the session's first sent message)."""
    results = Path(results)
    for folder in _stored_sessions(results, session_id):
        events = _events(folder)
        messages = [n for n in fork_points(events) if events[n].action == "send_message"]
        if at is not None or messages:
            return folder, at if at is not None else messages[0]
    raise ColabkitError(f"{results}: no finished session" + (f" {session_id}" if session_id else "")
                        + " with a chat message to fork at")


def _stored_sessions(results: Path, session_id: str | None) -> list[Path]:
    """Finished sessions (not continuations) in `results`, else in its subfolders."""
    def finished(folder: Path) -> list[Path]:
        if not folder.is_dir() or folder.name == FORKS_DIR:
            return []
        return sorted(f for f in folder.iterdir() if not f.name.startswith(".") and is_finished(f)
                      and (session_id is None or f.name == session_id))

    direct = finished(results)
    if direct:
        return direct
    experiments = sorted(f for f in results.iterdir() if not f.name.startswith(".")) if results.is_dir() else []
    return [folder for experiment in experiments for folder in finished(experiment)]
