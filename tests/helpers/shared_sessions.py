"""Sessions of the real embedded model built once per test run and shared by the tests that read
them (issue 45: each real-model test used to run its own).

A session is stored by `colabkit run` into a results folder of its own under a folder that every
test worker (pytest-xdist) of this run shares, named by the session's id, which is the hash of
its whole config: two tests asking for the same task, variant, seed and settings get the same
session, and a different config can never be mistaken for it. The first test to ask runs it;
`record_session`'s own lock makes a test asking at the same time on another worker wait for it,
and a session already finished is returned as stored. Each test gets a copy (the session's
folder and the results cache beside it) in a folder of its own, so scoring, forking or breaking
it never reaches another test. A run that fails, fails every test that asked for it.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path

import pytest

from colabkit.cli import main
from colabkit.runner import build_session
from colabkit.session import SessionSettings

TASK = "demo_archaeology/0/0"


def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder this run's workers share: under xdist each worker's base temp is
    `<run>/popen-gwN`, so their parent is the run's; a run without workers keeps its own."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-sessions"
    root.mkdir(exist_ok=True)
    return root


def stored_session(tmp_path_factory: pytest.TempPathFactory, into: Path, variant: str, *, seed: int = 0,
                   budget: int, rounds: int, task: str = TASK) -> Path:
    """`colabkit run --task task --variant variant --seed seed --action-budget budget
    --max-rounds rounds` on the embedded model, run once per test run; a copy of its results
    folder (the session's folder and `llm-cache`) is put into `into`. Returns the copy's
    session folder."""
    spec, _ = build_session(task, variant, seed, settings=SessionSettings(action_budget=budget, max_rounds=rounds))
    results = shared_root(tmp_path_factory) / spec.session_id
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(["run", "--task", task, "--variant", variant, "--seed", str(seed), "--action-budget",
                     str(budget), "--max-rounds", str(rounds), "--out", str(results), "--quiet"])
    assert code == 0, stdout.getvalue()
    assert stdout.getvalue().startswith(f"session: {results / spec.session_id}"), stdout.getvalue()
    shutil.copytree(results, into, dirs_exist_ok=True)
    return into / spec.session_id
