"""One live-session cap per machine: two run_variant processes together never exceed it.

`colabkit batch` runs one process per variant; each used to bound only its own sessions.
Here two `colabkit batch --sessions-only --variants X` processes (what a run_variant notebook
runs) share one experiment with a cap of 2 and a scripted model with latency; a watcher
counts the sessions whose workspace is live (`<results>/.work/<session id>/`, created when a
session starts and removed before it releases its slot), independently of the slots.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.experiments import write_experiment
from helpers.scripted_plugin import subprocess_env

from colabkit.runner import load_experiment
from colabkit.runner.executors.slots import MachineSlots
from colabkit.store import is_finished, session_dir

CODE = {"thought": "look", "action": "execute_code", "content": "print(6 * 7)"}


def config(tmp_path: Path) -> Path:
    return write_experiment(tmp_path, "cap", concurrency={"sessions": 2, "kernels": 2, "notebooks": 2})


@pytest.mark.slow
def test_two_run_variant_processes_never_exceed_the_machine_cap(tmp_path):
    path = config(tmp_path)
    exp = load_experiment(path)
    work = exp.folder() / ".work"
    env = subprocess_env(default=CODE, latency_s=0.4)
    procs = [subprocess.Popen([sys.executable, "-m", "colabkit", "batch", str(path), "--sessions-only", "--quiet",
                               "--variants", variant], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, cwd=tmp_path)
             for variant in exp.variants]
    most, seen = 0, set()
    deadline = time.monotonic() + 300
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        live = {p.name for p in work.iterdir() if p.is_dir()} if work.is_dir() else set()
        most, seen = max(most, len(live)), seen | live
        time.sleep(0.02)
    errors = [p.communicate()[1].decode()[-2000:] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    assert all(is_finished(session_dir(spec, exp.folder())) for spec, _ in exp.sessions())
    variants = {spec.variant.name for spec, _ in exp.sessions() if spec.session_id in seen}
    assert variants == {"single", "default-dr"}  # the watcher saw both processes' sessions run
    assert most == 2  # each process alone would run 2: together 4 without the machine-wide cap


def test_slots_are_shared_by_separate_holders_and_freed_when_released(tmp_path):
    async def main() -> list[int]:
        slots, other = MachineSlots(tmp_path, 2), MachineSlots(tmp_path, 2)  # as two processes would
        held: list[int] = []
        async with slots.hold(), other.hold():
            held.append(slots.held())
            assert slots.try_take() is None  # full: a third holder waits
        held.append(slots.held())
        return held

    assert asyncio.run(main()) == [2, 0]
