"""`colabkit batch` as real processes (papermill fixture notebooks, scripted model with
latency): two batches started at once on one experiment run each session exactly once, and
Ctrl-C stops a sessions-only batch cleanly. Killed with SIGKILL mid-way is
tests/test_runner_processes_kill.py's (apart so the test workers share the minutes evenly)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import orjson
import pytest
from helpers.batch_processes import CODE, assert_exactly_the_grid, batch, config, leftovers
from helpers.scripted_plugin import subprocess_env

from colabkit.runner import load_experiment, read_journal
from colabkit.store import is_finished, session_dir

pytestmark = pytest.mark.slow  # each batch starts four papermill kernels


def test_two_batches_started_at_once_run_each_session_exactly_once(tmp_path):
    path = config(tmp_path)
    exp = load_experiment(path)
    out, temp = exp.folder(), tmp_path / "tmp"
    temp.mkdir()
    env = subprocess_env(default=CODE, latency_s=0.5, TMPDIR=str(temp))
    procs = [batch(path, env, tmp_path / f"b{i}.log") for i in range(2)]
    for i, proc in enumerate(procs):
        assert proc.wait(timeout=600) == 0, (tmp_path / f"b{i}.log").read_text()
    assert_exactly_the_grid(exp, out)
    journal = read_journal(out)
    assert len(journal) == 6 and journal.session_id.is_unique  # every session ran exactly once
    assert set(journal.status) == {"done"}
    assert leftovers(out, temp) == []
    for name in ("run_variant-single", "run_variant-default-dr", "score", "ablations"):
        nb = orjson.loads((out / "notebooks" / f"{name}.ipynb").read_bytes())  # whole, not interleaved
        assert nb["metadata"]["papermill"]["parameters"]["results"] == str(exp.results)
    assert not list((out / "notebooks").glob(".*"))
    assert os.environ.get("COLABKIT_SCRIPTED") is None  # the child's env stayed the child's


@pytest.mark.heavy  # make test keeps one batch-process case (the one above); CI runs this one too
def test_ctrl_c_stops_a_sessions_only_batch_cleanly_and_a_rerun_finishes_it(tmp_path):
    path = config(tmp_path)
    exp = load_experiment(path)
    out, temp = exp.folder(), tmp_path / "tmp"
    temp.mkdir()
    env = subprocess_env(default=CODE, latency_s=1.0, TMPDIR=str(temp))
    specs = [spec for spec, _ in exp.sessions()]
    cmd = [sys.executable, "-m", "colabkit", "batch", str(path), "--sessions-only", "--quiet"]
    # A shell without job control starts background jobs with SIGINT ignored, and the child
    # would inherit that (CI may run so): give the batch the default disposition, as a terminal does.
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not any(is_finished(session_dir(s, out)) for s in specs):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "interrupted: finished sessions are kept" in err
    finished = [s for s in specs if is_finished(session_dir(s, out))]
    assert 1 <= len(finished) < len(specs)
    assert leftovers(out, temp, logs=False) == []  # kernels shut down, workspaces removed on the way out
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and f"{len(specs) - len(finished)} done, 0 failed, {len(finished)} cached" in again.stdout
    assert_exactly_the_grid(exp, out)
    assert leftovers(out, temp) == []
