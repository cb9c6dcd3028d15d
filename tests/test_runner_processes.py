"""`colabkit batch` as real processes (papermill fixture notebooks, scripted model with
latency): killed with SIGKILL mid-way and rerun, it holds exactly the expected sessions; two
batches started at once on one experiment run each session exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from helpers.experiments import write_experiment
from helpers.scripted_plugin import subprocess_env

from colabkit.runner import load_experiment, read_journal
from colabkit.session import Event
from colabkit.store import is_finished, load_sessions, session_dir

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "notebooks"
CODE = {"thought": "look", "action": "execute_code", "content": "print(6 * 7)"}
pytestmark = pytest.mark.slow  # each batch starts four papermill kernels


def config(tmp_path: Path) -> Path:
    return write_experiment(tmp_path, "proc", concurrency={"sessions": 2, "kernels": 2, "notebooks": 2})


def batch(path: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "colabkit", "batch", str(path), "--notebooks", str(FIXTURES),
                             "--quiet"], env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                            cwd=path.parent)


def events(folder: Path) -> list[Event]:
    return [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_bytes().splitlines()]


def leftovers(*roots: Path, logs: bool = True) -> list[Path]:
    """What a run leaves behind: workspace folders, socket folders, and (`logs`) partial event logs."""
    found: list[Path] = []
    for root in roots:
        for pattern in ("colabkit-ws-*", "ck-*", *(("*.part",) if logs else ())):
            found += root.rglob(pattern)
        work = root / ".work"
        found += [p for p in work.iterdir() if p.is_dir()] if work.is_dir() else []
    return found


def assert_exactly_the_grid(exp, out: Path) -> None:
    expected = {spec.session_id for spec, _ in exp.sessions()}
    folders = {p.name for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")} - {
        "llm-cache", "notebooks", "tables"}
    assert folders == expected  # none lost, none extra
    assert set(load_sessions(out).session_id) == expected and len(load_sessions(out)) == len(expected)
    for sid in expected:
        log = events(out / sid)
        assert [e.seq for e in log] == list(range(len(log)))
        assert [e.action for e in log].count("session_start") == 1 == [e.action for e in log].count("session_end")


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
