"""Run one session and store it: the idempotent unit every entry point and batch builds on.

`colabkit.session.run_session` is pure simulation (no file I/O); this module adds the
persistence around it, as tau2-bench separates its simulation layer from the batch layer.
A session's folder is named by its spec's identity, so asking for the same session twice
is free: a folder with `session.json` is finished and is returned untouched (never rerun,
never duplicated); a folder without it is debris of an interrupted run and is redone from
scratch. Reruns also replay model answers from the default on-disk LLM cache.

One writer per session folder is assumed: a batch runner must not start the same spec twice
at once (the second would clear the first's unfinished folder).
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path

from colabkit.errors import ColabkitError
from colabkit.llm import Gateway, logging_prompts
from colabkit.session import Event, SessionSpec, run_session
from colabkit.store.atomic import atomic_write_text
from colabkit.store.records import SessionRecord
from colabkit.store.sink import JsonlEventSink
from colabkit.tasks import Task

SESSION_FILE = "session.json"
EVENTS_FILE = "events.jsonl"
SNAPSHOT_FILE = "snapshot.json"
PROMPTS_FILE = "prompts.jsonl"
CACHE_DIR = "llm-cache"


def session_dir(spec: SessionSpec, out: Path | str) -> Path:
    """Where `spec`'s session is (or will be) stored under `out`."""
    return Path(out) / spec.session_id


def is_finished(folder: Path) -> bool:
    """A session folder is finished exactly when its record exists (it is written last)."""
    return (folder / SESSION_FILE).is_file()


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
    log_prompts: bool = False,
) -> Path:
    """Async form of `record_session`, for callers already inside an event loop."""
    if spec.task_id != task.id:
        raise ColabkitError(f"session spec is for task {spec.task_id!r} but task {task.id!r} was given")
    out = Path(out)
    folder = session_dir(spec, out)
    if is_finished(folder):
        return folder
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    own_gateway = gateway is None
    if gateway is None:
        gateway = Gateway(cache_dir=out / CACHE_DIR)

    started = datetime.now(UTC)
    keeping_prompts = logging_prompts() if log_prompts else nullcontext()
    try:
        with JsonlEventSink(folder / EVENTS_FILE) as sink, keeping_prompts as prompts:
            target = sink if progress is None else _Tee(sink, progress)
            result = await run_session(spec, task, gateway=gateway, sink=target)
            sink.finalise()
    finally:
        if own_gateway:
            gateway.close()  # releases the on-disk cache; a batch opens many gateways
    finished = datetime.now(UTC)

    record = SessionRecord.from_result(result, started=started, finished=finished)
    if prompts is not None:
        atomic_write_text(folder / PROMPTS_FILE, prompts.jsonl())
    atomic_write_text(folder / SNAPSHOT_FILE, result.snapshot.model_dump_json(indent=1))
    atomic_write_text(folder / SESSION_FILE, record.model_dump_json(indent=1))
    return folder


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
    Works from plain scripts and from Jupyter (whose kernel already runs an event loop: the
    session then runs on a worker thread).
    """
    coro = arecord_session(spec, task, out=out, gateway=gateway, progress=progress, log_prompts=log_prompts)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
