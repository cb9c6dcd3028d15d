"""The kernel's processes, seen from the host through /proc: throw-away uids and cleanup.

When the suite runs as root each kernel gets a fresh unprivileged uid (see `isolation`), so
its processes can be counted and killed by uid alone: that also catches daemons that left
the kernel's process group.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path


def fresh_uid() -> int:
    """An unprivileged uid no process uses, so this kernel's process count is its own."""
    used = {uid for _, uid in _processes()}
    while True:
        uid = 200_000 + secrets.randbelow(800_000)
        if uid not in used:
            return uid


def _processes() -> Iterator[tuple[Path, int]]:
    """(/proc entry, owner uid) of every visible process; empty where /proc is absent."""
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            yield entry, entry.stat().st_uid
        except OSError:
            continue


def user_task_count(uid: int) -> int:
    """Threads+processes the user runs now (RLIMIT_NPROC counts both)."""
    total = 0
    for entry, owner in _processes():
        if owner == uid:
            try:
                total += sum(1 for _ in (entry / "task").iterdir())
            except OSError:
                continue
    return total


def kill_uid(uid: int, wait_s: float = 5.0) -> bool:
    """SIGKILL every process of a throw-away kernel uid and wait until none runs.

    Catches daemons that left the process group; waiting matters because a pid namespace
    is torn down asynchronously after its init dies.  Zombies are dead and not waited for.
    """
    deadline = time.monotonic() + wait_s
    while True:
        pids = [int(entry.name) for entry, owner in _processes() if owner == uid and _running(entry)]
        if not pids or time.monotonic() > deadline:
            return not pids
        for pid in pids:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        time.sleep(0.01)


def _running(entry: Path) -> bool:
    try:
        return (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
