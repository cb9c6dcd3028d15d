"""Sessions as tasks on a Dask distributed cluster, writing into one shared results folder.

When one machine is not enough (many kernels, local model servers on several hosts), each
session becomes one Dask task (`run_on_worker`) submitted to an existing scheduler. Nothing
here queues, retries or tracks work by itself: the scheduler does the placing, and the store
does the rest, since a session's folder is named by its spec, written atomically, and locked
while it runs. So a task that runs twice (a lost worker, a resubmitted batch) finds the
session finished, and the outcomes are the same sessions, ids and records as the local
executor's. The results folder must be the same path on every worker (a shared file system).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from colabkit.llm.callbacks import settled
from colabkit.runner.executors.one_session import run_one
from colabkit.runner.experiment import LLMBudget
from colabkit.runner.progress import BatchSummary, Progress, SessionOutcome
from colabkit.runner.recorder import reopen_for_retry
from colabkit.runner.workarea import sweep
from colabkit.session import SessionSpec
from colabkit.tasks import Task


def run_on_worker(spec: SessionSpec, task: Task, out: str, caps: LLMBudget) -> SessionOutcome:
    """One session, run inside a worker process (one asyncio loop per task)."""
    async def main() -> SessionOutcome:
        return await run_one(spec, task, out=Path(out), limit=asyncio.Semaphore(1), caps=caps)

    return asyncio.run(settled(main()))


def run_on_dask(items: Sequence[tuple[SessionSpec, Task]], *, out: Path | str, scheduler: str,
                retry_errors: bool = False, caps: LLMBudget = LLMBudget(), progress: bool = True,
                desc: str = "sessions") -> BatchSummary:
    """Submit every session to the cluster at `scheduler`; return the outcomes in grid order.

    Each worker runs as many sessions at once as it has threads, so size workers by the
    kernels a host can hold (`dask worker ADDRESS --nthreads N`).
    """
    from distributed import Client, as_completed

    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    sweep(out)
    if retry_errors:
        reopen_for_retry([spec for spec, _ in items], out, before=datetime.now(UTC))
    bar = Progress(len(items), desc=desc, enabled=progress)
    outcomes: dict[str, SessionOutcome] = {}
    try:
        with Client(scheduler) as client:
            futures = [client.submit(run_on_worker, spec, task, str(out), caps,
                                     key=f"colabkit-session-{spec.session_id}", pure=False)
                       for spec, task in items]
            try:
                for future in as_completed(futures):
                    outcome: SessionOutcome = future.result()
                    outcomes[outcome.session_id] = outcome
                    bar.spend = bar.spend + outcome.spend
                    bar.finished(outcome)
            except BaseException:
                client.cancel(futures)
                raise
    finally:
        bar.close()
    return BatchSummary(outcomes=[outcomes[spec.session_id] for spec, _ in items])
