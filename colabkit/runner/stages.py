"""The batch's notebooks stage by stage: skipping unchanged ones, and naming what runs.

Skipping. A notebook is skipped when its inputs are those of its last successful run: the
notebook's bytes, its parameters, the experiment config copy, the package version and the
state of the experiment folder (every data file's path, size and modification time: the
sessions, scores, gate annotations, analysis outputs; not the caches, journals, work area or
executed notebooks). The keys are written when a batch ends (`NotebookStamps.record`), over
the folder as the batch left it, so a rerun with nothing new finds the same state at every
stage and skips them all; a stage that does run changes the folder, so the stages after it
run too. A notebook that failed, or whose executed copy is gone, always runs.

Naming. After the sessions, each stage shows its own bar (`stage_watch`): the notebooks it
runs, the scores present out of those the experiment asks for, whether the judge's sanity
check has been written, and what the judge paid so far.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from colabkit import __version__
from colabkit.evaluation import scorers_for
from colabkit.evaluation.reliability import CHECKS_DIR
from colabkit.evaluation.runner import JUDGE_CACHE_DIR
from colabkit.evaluation.spendlog import JUDGE_JOURNAL
from colabkit.evaluation.storage import SCORES_DIR, scorer_id
from colabkit.hashing import sha256_hex
from colabkit.runner.experiment import Experiment
from colabkit.runner.progress import close_bar, journal_spend, progress_bar, read_journal
from colabkit.store import CACHE_DIR, WORK_DIR, atomic_write_text

STAMPS_FILE = "stamps.json"
_NOT_INPUTS = {CACHE_DIR, JUDGE_CACHE_DIR, WORK_DIR}


def folder_state(folder: Path, skip: Sequence[str] = ()) -> str:
    """A hash of the experiment folder's data files (path, size, mtime); see the module docstring."""
    entries = []
    for root, dirs, files in os.walk(folder):
        top = Path(root) == folder
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (top and (d in _NOT_INPUTS or d in skip)))
        for name in sorted(files):
            if name.startswith(".") or (top and name.endswith(".jsonl")):  # temporaries, locks, journals
                continue
            path = Path(root) / name
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue
            entries.append((str(path.relative_to(folder)), stat.st_size, stat.st_mtime_ns))
    return sha256_hex(entries)


class NotebookStamps:
    """The inputs' key of each notebook's last successful run, in `<notebooks dir>/stamps.json`."""

    def __init__(self, notebooks_dir: Path, config: Path) -> None:
        self.path = notebooks_dir / STAMPS_FILE
        self.config = config.read_bytes() if config.is_file() else b""
        try:
            self.keys: dict[str, str] = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.keys = {}

    def key(self, job: Any, state: str) -> str:
        return sha256_hex({"notebook": job.source.read_bytes().hex(), "parameters": job.parameters,
                           "config": self.config.hex(), "version": __version__, "state": state})

    def unchanged(self, job: Any, state: str) -> bool:
        return job.output.is_file() and self.keys.get(job.name) == self.key(job, state)

    def record(self, jobs: Sequence[Any], state: str) -> None:
        """Write the keys of `jobs` (those that succeeded) over the folder state the batch left."""
        self.keys.update({job.name: self.key(job, state) for job in jobs})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps(self.keys, indent=1, sort_keys=True))


def expected_scores(exp: Experiment, session_ids: Collection[str] | None = None) -> list[Path]:
    """The score files the experiment's metrics make, for every session of its grid (or of
    `session_ids`: the variants a batch was asked for)."""
    scoring, folder = exp.scoring(), exp.folder()  # the judge as the scoring job runs it
    ids = [scorer_id(s, scoring.judge, scoring.repeats) for s in scorers_for(list(exp.metrics))]
    chosen = exp.session_ids() if session_ids is None else [s for s in exp.session_ids() if s in session_ids]
    return [folder / sid / SCORES_DIR / f"{i}.json" for sid in chosen for i in ids]


@contextmanager
def stage_watch(exp: Experiment, names: Sequence[str], *, enabled: bool, say: Callable[[str], None],
                session_ids: Collection[str] | None = None) -> Iterator[None]:
    """A named bar while a stage's notebooks run (scores present of `session_ids`' sessions,
    judge check, judge spend)."""
    started, done = time.time(), threading.Event()
    scoring = any(n in ("score", "annotate_gates") for n in names)
    wanted = expected_scores(exp, session_ids) if scoring else []
    label = " + ".join(names)

    def watch() -> None:
        bar, handle = progress_bar(len(wanted) or 1, desc=label, unit="score" if wanted else "stage", enabled=enabled)
        try:
            while True:
                stop = done.wait(1.0)
                judged = read_journal(exp.folder(), JUDGE_JOURNAL)
                spend = journal_spend(judged[judged.time >= started] if len(judged) else judged)
                checks = exp.folder() / CHECKS_DIR
                checked = checks.is_dir() and any(p.stat().st_mtime >= started for p in checks.iterdir())
                if wanted:
                    present = sum(1 for p in wanted if p.is_file())
                    bar.update(present - bar.n)
                    bar.set_postfix_str(f"judge check {'done' if checked else 'running or cached'} | "
                                        f"judge {spend.line()}", refresh=True)
                else:
                    bar.set_postfix_str(f"running for {time.time() - started:.0f} s", refresh=True)
                if stop:
                    if not wanted:
                        bar.update(1 - bar.n)
                    return
        finally:
            close_bar(bar, handle)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        say(f"{label}: finished in {time.time() - started:.0f} s")
