"""`colabkit batch` as real processes on the fixture notebooks (scripted model with latency),
for tests/test_runner_processes.py and tests/test_runner_processes_kill.py (two files so the
test workers, a file each, share their minutes evenly)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from colabkit.session import Event
from colabkit.store import load_sessions
from helpers.experiments import write_experiment

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "notebooks"
CODE = {"thought": "look", "action": "execute_code", "content": "print(6 * 7)"}


def config(tmp_path: Path) -> Path:
    """A six-session experiment (two variants) run two sessions and two notebooks at a time."""
    return write_experiment(tmp_path, "proc", concurrency={"sessions": 2, "kernels": 2, "notebooks": 2})


def batch(path: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    """`colabkit batch` on the fixture notebooks, as its own process, logging to `log`."""
    return subprocess.Popen([sys.executable, "-m", "colabkit", "batch", str(path), "--notebooks", str(FIXTURES),
                             "--quiet"], env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                            cwd=path.parent)


def events(folder: Path) -> list[Event]:
    """A session folder's event log."""
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


def assert_exactly_the_grid(exp: Any, out: Path) -> None:
    """`out` holds each of the experiment's sessions once, whole, and nothing else."""
    expected = {spec.session_id for spec, _ in exp.sessions()}
    folders = {p.name for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")} - {
        "llm-cache", "notebooks", "tables"}
    assert folders == expected  # none lost, none extra
    assert set(load_sessions(out).session_id) == expected and len(load_sessions(out)) == len(expected)
    for sid in expected:
        log = events(out / sid)
        assert [e.seq for e in log] == list(range(len(log)))
        assert [e.action for e in log].count("session_start") == 1 == [e.action for e in log].count("session_end")
