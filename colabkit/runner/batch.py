"""Many sessions in one process: asyncio, bounded, resumable, interruptible.

A session spends nearly all its time waiting for a model, so sessions run as asyncio tasks
in one process, at most min(concurrency.sessions, concurrency.kernels) at once (each holds
one sandboxed kernel for its life), and at most that many on the machine, across every
process running into the same results folder (`runner.slots`: `colabkit batch` runs one
process per variant). A session that fails (it ended in `error`, or it raised
before it could start) is recorded with its reason and the batch goes on. A session another
process is running is skipped for now and awaited at the end. Ctrl-C cancels the running
sessions: each shuts its kernel down and removes its workspace on the way out, finished
sessions are already on disk, and the next run resumes with what is missing.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from colabkit.errors import ColabkitError
from colabkit.llm.callbacks import settled
from colabkit.llm.preflight import missing_key, preflight
from colabkit.runner.executors.capacity import machine_kernel_cap
from colabkit.runner.executors.dask_executor import run_on_dask
from colabkit.runner.executors.one_session import run_one
from colabkit.runner.executors.slots import MachineSlots
from colabkit.runner.experiment import Experiment, LLMBudget, load_experiment
from colabkit.runner.progress import BatchSummary, Progress, SessionOutcome
from colabkit.runner.recorder import NO_RESULT_ENDINGS, needs_run, reopen_for_retry
from colabkit.runner.workarea import sweep
from colabkit.session import SessionSpec
from colabkit.store import session_dir
from colabkit.tasks import Task
from colabkit.workspace import Limits

T = TypeVar("T")


class ProviderRefused(ColabkitError):
    """A provider refused a session in a way no retry fixes (bad key, unknown model), or stayed
    out of reach past the retry bound (an outage): the batch stops starting sessions (its
    circuit breaker) and reports it once, instead of failing every session. The sessions it
    stopped are rerun by the next batch."""


def preflight_experiment(exp: Experiment, items: Sequence[tuple[SessionSpec, Task]], *, keys: bool = True) -> None:
    """Check every model the sessions of `items` talk to, and the judge when a metric asks one,
    before any session or judge call: a missing key, an unknown provider or an unreachable
    `api_base` is one `ColabkitError` line naming the model and the variable (see `preflight`).
    `keys=False` (a plan: the dry run) lets missing keys through; `missing_keys` lists them."""
    preflight((spec.model_for(role) for spec, _ in items for role in spec.participants), keys=keys)
    if _judged(exp):
        try:
            preflight([exp.judge_config()], keys=keys)
        except ColabkitError as exc:
            raise ColabkitError(f"judge: {exc}") from None


def missing_keys(exp: Experiment, items: Sequence[tuple[SessionSpec, Task]]) -> list[str]:
    """The one-line errors a run of `items` (and its judge) would stop on for want of a key."""
    configs = {spec.model_for(role) for spec, _ in items for role in spec.participants}
    lines = sorted({line for config in configs if (line := missing_key(config))})
    judge = missing_key(exp.judge_config()) if _judged(exp) else None
    return lines + ([f"judge: {judge}"] if judge and judge not in lines else [])


def _judged(exp: Experiment) -> bool:
    from colabkit.evaluation import scorers_for

    return any(scorer.uses_judge for scorer in scorers_for(list(exp.metrics)))


async def arun_sessions(items: Sequence[tuple[SessionSpec, Task]], *, out: Path | str, sessions: int = 4,
                        kernels: int | None = None, retry_errors: bool = False, caps: LLMBudget = LLMBudget(),
                        progress: bool = True, desc: str = "sessions") -> BatchSummary:
    """Run every (spec, task) not finished yet into `out`; return what became of each.

    Every model of the sessions still to run is preflighted first (a missing key or an
    unknown provider is one line before anything runs); a provider refusal or outage during
    the batch stops it from starting more sessions and raises `ProviderRefused` once, at the
    end (sessions already running finish or stop on their own).
    `kernels=None` derives the live-kernel cap from this machine (`runner.capacity`).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sweep(out)  # workspaces a killed run left behind
    if retry_errors:
        reopen_for_retry([spec for spec, _ in items], out, before=datetime.now(UTC))
    else:  # a refused or unreachable session, or one without a kernel, is no result: it reruns, like `colabkit run`'s
        reopen_for_retry([spec for spec, _ in items], out, before=datetime.now(UTC), endings=NO_RESULT_ENDINGS)
    preflight(spec.model_for(role) for spec, _ in items if needs_run(session_dir(spec, out))
              for role in spec.participants)
    refused: list[str] = []
    if kernels is None:  # derived from this machine, for the strictest sandbox limits among the sessions
        strictest = max((spec.settings.limits for spec, _ in items), default=Limits(),
                        key=lambda limits: limits.memory_mb + limits.tmp_mb)
        kernels = machine_kernel_cap(strictest).kernels
    limit = asyncio.Semaphore(min(sessions, kernels))
    slots = MachineSlots(out, min(sessions, kernels))  # the same cap across this machine's processes
    bar = Progress(len(items), desc=desc, enabled=progress)
    outcomes: list[SessionOutcome | None] = [None] * len(items)

    async def one(index: int, spec: SessionSpec, task: Task) -> None:
        outcome = await run_one(spec, task, out=out, limit=limit, caps=caps, on_event=bar.on_event,
                                refused=refused, slots=slots)
        outcomes[index] = outcome
        bar.finished(outcome)

    running = [asyncio.create_task(one(i, spec, task)) for i, (spec, task) in enumerate(items)]
    try:
        await asyncio.gather(*running)
    except BaseException:
        for job in running:
            job.cancel()
        await asyncio.gather(*running, return_exceptions=True)  # kernels shut down, workspaces removed
        raise
    finally:
        bar.close()
    if refused:
        skipped = sum(1 for o in outcomes if o is not None and o.status == "skipped")
        raise ProviderRefused(f"{refused[0]} ({len(refused)} session(s) stopped by the provider, {skipped} not "
                              "started; the next batch reruns them, replaying what was paid)")
    return BatchSummary(outcomes=[o for o in outcomes if o is not None])


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to the end from sync code, also inside Jupyter's running loop.

    Ctrl-C cancels it and waits for its cleanup (kernels shut down, workspaces removed),
    then raises KeyboardInterrupt at once: unlike `asyncio.run`, it does not wait for model
    calls still running in worker threads (the embedded model cannot stop mid-answer), which
    the caller may abandon. In Jupyter the coroutine runs on its own loop in a worker thread;
    an interrupt of the cell cancels it there the same way.
    """
    async def main() -> T:
        return await settled(make())

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        runner = asyncio.Runner()
        try:
            result = runner.run(main())  # on SIGINT: cancels main(), waits for it, raises KeyboardInterrupt
        except KeyboardInterrupt:
            runner.get_loop().close()
            raise
        runner.close()
        return result
    loop = asyncio.new_event_loop()
    task = loop.create_task(main())
    worker = threading.Thread(target=loop.run_until_complete, args=(task,), daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except KeyboardInterrupt:
        loop.call_soon_threadsafe(task.cancel)
        worker.join()
        raise
    finally:
        if not worker.is_alive():
            loop.close()
    return task.result()


def run_experiment(experiment: Experiment | Path | str, *, results: Path | str | None = None,
                   variants: Sequence[str] | None = None, retry_errors: bool = False,
                   progress: bool = True) -> BatchSummary:
    """Run an experiment's sessions (or some variants of it) into its folder.

    `results`, if given, replaces the config's results root (as in `load_experiment`); the
    sessions go to `Experiment.folder()` under it. The executor is the config's (`local`:
    this process; `dask`: tasks on the configured cluster). What is finished is skipped, so
    calling it again resumes.
    """
    if isinstance(experiment, Experiment):
        exp = experiment if results is None else experiment.model_copy(update={"results": Path(results).resolve()})
    else:
        exp = load_experiment(experiment, results=results)
    out = exp.folder()
    items = exp.sessions(variants)
    desc = ",".join(variants) if variants else exp.name
    if exp.executor.kind == "dask":
        return run_on_dask(items, out=out, scheduler=exp.executor.scheduler or "", retry_errors=retry_errors,
                           caps=exp.llm_budget, progress=progress, desc=desc)
    return run_sync(lambda: arun_sessions(items, out=out, sessions=exp.concurrency.sessions,
                                          kernels=exp.kernel_cap().kernels, retry_errors=retry_errors,
                                          caps=exp.llm_budget, progress=progress, desc=desc))
