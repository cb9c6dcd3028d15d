"""`colabkit batch`: an experiment run as papermill notebooks, resumably.

The study's work is a sequence of parameterised notebooks: `run_variant` once per variant
(parallel processes, at most `concurrency.notebooks` at once), then `score` and
`annotate_gates`, then `ablations` (and `realism` beside it when the experiment sweeps
simulators or its folder holds sessions with a person in a seat). Every notebook gets `experiment` (the config, copied
with absolute paths into the experiment folder as `experiment.yaml`) and `results` (the
results root, so `load_experiment(experiment, results=results).folder()` is the experiment
folder); `run_variant` also gets `variant`. Executed notebooks are kept under
`<experiment folder>/notebooks/`. papermill cannot resume a notebook or run several at
once (papermill #824, #578), so resumption comes from the store (finished sessions and
scores are skipped on rerun) and parallelism from separate processes. A notebook whose
inputs are unchanged since its last successful run is not executed again at all
(`stages.NotebookStamps`), and each stage after the sessions shows its own named bar.

Each papermill process is tied to this one (Linux `PR_SET_PDEATHSIG`): if the batch is
killed, its notebooks die with it, their kernels notice their parent is gone (ipykernel's
parent poller) and exit, and the sessions' sandboxed kernels die with those. Nothing
finished is lost; the next run sweeps the work area and redoes the unfinished sessions.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from colabkit.errors import ColabkitError
from colabkit.evaluation.spendlog import JUDGE_JOURNAL
from colabkit.llm import Spend
from colabkit.runner.executors.notebook_exec import ERROR_MARK
from colabkit.runner.experiment import Experiment
from colabkit.runner.progress import close_bar, journal_spend, progress_bar, read_journal
from colabkit.runner.recorder import reopen_for_retry
from colabkit.runner.stages import NotebookStamps, folder_state, stage_watch
from colabkit.runner.workarea import sweep
from colabkit.session import SessionSpec
from colabkit.store import SESSION_FILE, atomic_write_text, is_finished, session_dir

RUN_VARIANT = "run_variant"
AFTER_SESSIONS = (("score", "annotate_gates"), ("ablations",))
"""Notebooks run after every variant's sessions, stage by stage (a stage's notebooks in parallel)."""
REALISM = "realism"
"""Run beside `ablations` when `wants_realism`: the fidelity cards of the simulated humans."""
CONFIG_COPY = "experiment.yaml"
NOTEBOOKS_DIR = "notebooks"
REPO_NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
_STOP_GRACE_S = 30.0
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)?(Error|Exception|Refused|Interrupt)\b: ")


@dataclass(frozen=True)
class NotebookJob:
    """One papermill execution: source notebook, executed copy, parameters."""

    name: str
    source: Path
    output: Path
    parameters: dict[str, str]

    def partial(self, suffix: str) -> Path:
        """Where this process writes the executed copy (or log) until papermill is done."""
        return self.output.with_name(f".{self.output.stem}.{os.getpid()}{suffix}")

    def command(self, kernel: str) -> list[str]:
        cmd = [sys.executable, "-m", "colabkit.runner.executors.notebook_exec", str(self.source), str(self.partial(".ipynb")),
               "--kernel", kernel, "--cwd", str(self.output.parent)]  # papermill, see there
        for key, value in self.parameters.items():
            cmd += ["-p", key, value]
        return cmd


def write_config(exp: Experiment) -> Path:
    """The experiment folder's own copy of the config (absolute paths), for its notebooks."""
    folder = exp.folder()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / CONFIG_COPY
    text = f"# {exp.experiment_id}: written by colabkit batch from {exp.source}\n{exp.dump_yaml()}"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        atomic_write_text(path, text)
    return path


def notebook_jobs(exp: Experiment, config: Path, notebooks: Path,
                  variants: Sequence[str]) -> tuple[list[NotebookJob], list[list[NotebookJob]]]:
    """(one run_variant job per variant, then the later stages), all checked to exist."""
    out = exp.folder() / NOTEBOOKS_DIR
    common = {"experiment": str(config), "results": str(exp.results)}

    def job(name: str, suffix: str = "", **extra: str) -> NotebookJob:
        source = notebooks / f"{name}.ipynb"
        if not source.is_file():
            raise ColabkitError(f"notebook not found: {source} (pass --notebooks DIR)")
        return NotebookJob(name=f"{name}{suffix}", source=source, output=out / f"{name}{suffix}.ipynb",
                           parameters={**common, **extra})

    runs = [job(RUN_VARIANT, f"-{v}", variant=v) for v in variants]
    stages = [[job(name) for name in stage] for stage in AFTER_SESSIONS]
    if wants_realism(exp):
        stages[-1].append(job(REALISM))
    return runs, stages


def wants_realism(exp: Experiment) -> bool:
    """Whether the batch renders the realism notebook: the experiment sweeps simulators, or its
    folder holds finished sessions with a person in a seat (stored there by `colabkit seat`)."""
    folder = exp.folder()
    if exp.simulators:
        return True
    if not folder.is_dir():
        return False
    return any(str(m.get("model", "")).startswith("person/")
               for path in folder.glob(f"*/{SESSION_FILE}")
               for m in json.loads(path.read_text(encoding="utf-8")).get("models", {}).values())


def sweep_partials(folder: Path) -> None:
    """Remove executed-notebook files of batch processes that no longer exist."""
    for path in folder.glob(".*.*.*") if folder.is_dir() else ():
        pid = path.name.split(".")[-2]
        if pid.isdigit() and not _alive(int(pid)):
            path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _tie_to_parent() -> None:
    """In the child, before exec: die when the batch process dies (Linux), however it dies."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class _Children:
    """The running papermill processes, so an interrupt can stop them all."""

    def __init__(self) -> None:
        self.procs: set[subprocess.Popen] = set()
        self.lock = threading.Lock()
        self.stopping = False

    def run(self, job: NotebookJob, kernel: str) -> int:
        """Execute one notebook into a private file, then publish it (and its log) atomically.

        Two batches on one experiment may execute the same notebook at once; each publishes
        a whole executed notebook, never an interleaving of both.
        """
        job.output.parent.mkdir(parents=True, exist_ok=True)
        code = self._execute(job, kernel)
        for suffix in (".ipynb", ".log"):
            if job.partial(suffix).exists():
                os.replace(job.partial(suffix), job.output.with_suffix(suffix))
        return code

    def _execute(self, job: NotebookJob, kernel: str) -> int:
        with open(job.partial(".log"), "wb") as log, self.lock:
            if self.stopping:
                return 130
            proc = subprocess.Popen(job.command(kernel), stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, preexec_fn=_tie_to_parent)
            self.procs.add(proc)
        try:
            return proc.wait()
        finally:
            with self.lock:
                self.procs.discard(proc)

    def stop(self) -> None:
        """Interrupt every notebook (papermill shuts its kernel down), then kill stragglers."""
        with self.lock:
            self.stopping = True
            procs = list(self.procs)
        for proc in procs:
            proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + _STOP_GRACE_S
        for proc in procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()


def run_spend(folder: Path, since: float, session_ids: set[str]) -> tuple[Spend, Spend]:
    """(the sessions' spend, the judge's spend) recorded in `folder` since `since` (epoch s).

    The sessions' comes from the run journal (`runs.jsonl`, the grid's sessions only), the
    judge's from the scoring jobs' journal (`judge-runs.jsonl`); both are written by the
    notebooks' processes as they go, so the sum is the batch's total whatever ran where.
    """
    runs = read_journal(folder)
    if len(runs):
        runs = runs[(runs.time >= since) & runs.session_id.isin(session_ids)]
    judged = read_journal(folder, JUDGE_JOURNAL)
    if len(judged):
        judged = judged[judged.time >= since]
    return journal_spend(runs), journal_spend(judged)


def spend_lines(sessions: Spend, judge: Spend) -> list[str]:
    """The batch's spend: the sessions', the judge's, and their total."""
    return [f"spend this run: sessions {sessions.line()}", f"                judge    {judge.line()}",
            f"                total    {(sessions + judge).line()}"]


def _watch(specs: list[SessionSpec], folder: Path, done: threading.Event, enabled: bool, started: float) -> None:
    """A progress bar over the experiment's sessions, polled from the store and the journals.

    The notebooks run in other processes, so this reads what they leave: finished session
    folders, their attempts in `runs.jsonl` (done / failed and what they paid) and the
    scoring jobs' judge spend in `judge-runs.jsonl`; it keeps running through the scoring
    stages so the judge's spend shows live too.
    """
    def count() -> int:
        return sum(1 for spec in specs if is_finished(session_dir(spec, folder)))

    cached = count()
    wanted = {spec.session_id for spec in specs}
    shown = ""
    bar, handle = progress_bar(len(specs), desc="sessions", unit="session", enabled=enabled)
    try:
        bar.update(cached)
        while True:
            stop = done.wait(1.0)
            journal = read_journal(folder)
            if len(journal):
                journal = journal[(journal.time >= started) & journal.session_id.isin(wanted)]
            failed = int((journal.status == "failed").sum()) if len(journal) else 0
            sessions, judge = run_spend(folder, started, wanted)
            postfix = (f"done {len(journal) - failed} failed {failed} cached {cached} | sessions "
                       f"${sessions.paid_cost:.4f} + judge ${judge.paid_cost:.4f} = "
                       f"${sessions.paid_cost + judge.paid_cost:.4f} paid")
            changed, shown = postfix != shown, postfix
            bar.set_postfix_str(postfix, refresh=False)
            if (n := count()) != bar.n:
                bar.update(n - bar.n)
            elif changed:  # the judge's spend moves after the last session: show it
                bar.refresh()
            if stop:
                return
    finally:
        close_bar(bar, handle)


def run_batch(exp: Experiment, *, notebooks: Path = REPO_NOTEBOOKS, variants: Sequence[str] | None = None,
              retry_errors: bool = False, kernel: str = "python3", progress: bool = True,
              say: Callable[[str], None] = print, started: float | None = None) -> list[str]:
    """Execute the experiment's notebooks; return the names of notebooks that failed.

    The progress bar's spend counts what was recorded since `started` (default: now). When a
    run_variant notebook stopped on the provider (its batch's circuit breaker) the later
    stages do not run, and none runs when the experiment has no finished session (no judge
    call for nothing to score). The scores bar counts the sessions of `variants`.
    """
    from datetime import UTC, datetime

    started = time.time() if started is None else started
    chosen = list(variants or exp.variants)
    items = exp.sessions(chosen)
    config = write_config(exp)
    runs, stages = notebook_jobs(exp, config, notebooks, chosen)
    folder = exp.folder()
    sweep_partials(folder / NOTEBOOKS_DIR)
    swept = sweep(folder)
    if swept:
        say(f"swept the work folders of {len(swept)} session(s) a dead run left behind")
    if retry_errors:
        reopened = reopen_for_retry([spec for spec, _ in items], folder, before=datetime.now(UTC))
        say(f"--retry-errors: {len(reopened)} session(s) reopened")
    children, failed = _Children(), []
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=([s for s, _ in items], folder, done, progress, started),
                               daemon=True)
    watcher.start()
    stamps = NotebookStamps(folder / NOTEBOOKS_DIR, config)
    state = folder_state(folder, skip=[NOTEBOOKS_DIR])
    try:
        todo = _unchanged_skipped(stamps, runs, state, say)
        failed += _run_all(children, todo, exp.concurrency.notebooks, kernel)
    finally:
        done.set()
        watcher.join()
    stopped = _provider_stop(folder, failed)
    if stopped is not None:  # the circuit breaker: nothing after the sessions runs against that provider
        say(f"provider down, batch stopped: {stopped}")
        return failed
    if not any(is_finished(session_dir(spec, folder)) for spec, _ in exp.sessions()):
        say("no finished sessions: scoring and analysis skipped (no judge call made)")
        return failed
    ids = {spec.session_id for spec, _ in items}
    for stage in stages:
        if todo:  # the stage before ran: the folder changed
            state = folder_state(folder, skip=[NOTEBOOKS_DIR])
        todo = _unchanged_skipped(stamps, stage, state, say)
        if todo:
            with stage_watch(exp, [job.name for job in todo], enabled=progress, say=say, session_ids=ids):
                failed += _run_all(children, todo, len(todo), kernel)
    stamps.record([job for job in (*runs, *(j for stage in stages for j in stage)) if job.name not in failed],
                  folder_state(folder, skip=[NOTEBOOKS_DIR]))
    return failed


def first_error_line(log: Path) -> str | None:
    """The one line a failed notebook's log gives its error (`notebook_exec.ERROR_MARK`), else
    the last line that names an exception; None when the log says nothing of the kind."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    marked = [line[len(ERROR_MARK):] for line in lines if line.startswith(ERROR_MARK)]
    if marked:
        return marked[0]
    named = [line.strip() for line in lines if _EXCEPTION_LINE.match(line.strip())]
    return named[-1][:400] if named else None


def _provider_stop(folder: Path, failed: Sequence[str]) -> str | None:
    """The provider's one line when a run_variant notebook stopped on the batch's circuit breaker."""
    for name in failed:
        line = first_error_line(folder / NOTEBOOKS_DIR / f"{name}.log")
        if name.startswith(RUN_VARIANT) and line and line.startswith("ProviderRefused: "):
            return line.removeprefix("ProviderRefused: ")
    return None


def _unchanged_skipped(stamps: NotebookStamps, jobs: list[NotebookJob], state: str,
                       say: Callable[[str], None]) -> list[NotebookJob]:
    """The jobs to run: those whose inputs changed; the others are named as skipped."""
    todo = [job for job in jobs if not stamps.unchanged(job, state)]
    for job in jobs:
        if job not in todo:
            say(f"{job.name}: skipped (its inputs are unchanged since its last successful run)")
    return todo


def _run_all(children: _Children, jobs: list[NotebookJob], workers: int, kernel: str) -> list[str]:
    """Run `jobs`, `workers` at a time; the names of those that failed. Ctrl-C stops them all."""
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        codes = list(pool.map(lambda job: children.run(job, kernel), jobs))
    except KeyboardInterrupt:
        children.stop()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return [job.name for job, code in zip(jobs, codes) if code != 0]
