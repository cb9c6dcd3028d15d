"""`colabkit batch` as real processes (papermill fixture notebooks, scripted model with
latency), killed with SIGKILL mid-way and rerun: it holds exactly the expected sessions.
Apart from tests/test_runner_processes.py so the test workers share the minutes evenly."""

from __future__ import annotations

import signal
import time

import pytest
from helpers.batch_processes import CODE, assert_exactly_the_grid, batch, config, leftovers
from helpers.scripted_plugin import subprocess_env

from colabkit.runner import load_experiment, read_journal
from colabkit.store import is_finished, load_sessions, session_dir

# each batch starts four papermill kernels; heavy: make test keeps one batch-process case (two
# batches at once, tests/test_runner_processes.py), CI runs this one too
pytestmark = [pytest.mark.slow, pytest.mark.heavy]


def test_a_batch_killed_mid_way_and_rerun_holds_exactly_the_expected_sessions(tmp_path):
    path = config(tmp_path)
    exp = load_experiment(path)
    out, temp = exp.folder(), tmp_path / "tmp"
    temp.mkdir()
    env = subprocess_env(default=CODE, latency_s=1.0, TMPDIR=str(temp))
    specs = [spec for spec, _ in exp.sessions()]

    first = batch(path, env, tmp_path / "first.log")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # mid-way: one session finished, others running
        done = [s for s in specs if is_finished(session_dir(s, out))]
        running = [p for p in (out / ".work").iterdir() if p.is_dir()] if (out / ".work").is_dir() else []
        if done and running:
            break
        assert first.poll() is None, (tmp_path / "first.log").read_text()
        time.sleep(0.1)
    first.send_signal(signal.SIGKILL)
    first.wait()
    time.sleep(3)  # its notebooks and their kernels follow it (pdeathsig, parent poller, --die-with-parent)

    finished_before = {s.session_id: (session_dir(s, out) / "session.json").stat().st_mtime_ns
                       for s in specs if is_finished(session_dir(s, out))}
    unfinished = [s for s in specs if s.session_id not in finished_before]
    assert finished_before and unfinished  # really killed mid-way
    assert any((session_dir(s, out) / "events.jsonl.part").exists() for s in unfinished)
    assert set(load_sessions(out).session_id) == set(finished_before)  # half-written ones are invisible

    second = batch(path, env, tmp_path / "second.log")
    assert second.wait(timeout=600) == 0, (tmp_path / "second.log").read_text()
    assert_exactly_the_grid(exp, out)
    for sid, mtime in finished_before.items():  # finished work was kept, not redone
        assert (out / sid / "session.json").stat().st_mtime_ns == mtime
    journal = read_journal(out)
    assert sorted(journal.session_id) == sorted(s.session_id for s in specs)  # each run to the end once
    assert leftovers(out, temp) == []
    assert "swept the work folders of" in (tmp_path / "second.log").read_text()
    assert (out / "notebooks" / "ablations.ipynb").is_file() and (out / "tables" / "fixture_figure.png").is_file()
