"""The kernel's processes, seen from the host through /proc: throw-away uids and cleanup.

When the suite runs as root each kernel gets a fresh unprivileged uid (see `isolation`), so
its processes can be counted and killed by uid alone: that also catches daemons that left
the kernel's process group.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path

_HANDED_OUT: set[int] = set()  # uids this process gave a kernel: never given again here
_SEEN_IN_USE: tuple[float, frozenset[int]] = (-1e9, frozenset())  # when /proc was read, and its uids
_UIDS = threading.Lock()
SEEN_FOR_S = 1.0
"""How long one read of every process's uid serves `fresh_uid`. A read per workspace was a
scan of a few hundred /proc entries each, 64 of them in a batch's first second, holding the
interpreter lock the event loop needs; a uid drawn at random from 800,000 is taken by
another process within the second with a chance of about one in ten thousand, the same
window a uid drawn but not yet running a kernel always had."""


def fresh_uid() -> int:
    """An unprivileged uid no process uses, so this kernel's process count is its own.

    Never one this process handed out before: two workspaces opened at once cannot draw the
    same uid (the second's /proc read does not show the first's kernel before it starts),
    and a kernel's leftover processes are never counted as another's."""
    global _SEEN_IN_USE
    with _UIDS:
        read_at, used = _SEEN_IN_USE
        if time.monotonic() - read_at > SEEN_FOR_S:
            used = frozenset(uid for _, uid in _processes())
            _SEEN_IN_USE = (time.monotonic(), used)
        while True:
            uid = 200_000 + secrets.randbelow(800_000)
            if uid not in used and uid not in _HANDED_OUT:
                _HANDED_OUT.add(uid)
                return uid


def _processes() -> Iterator[tuple[Path, int]]:
    """(/proc entry, owner uid) of every visible process; empty where /proc is absent.

    `os.scandir`, not `Path.glob`: a batch's process scans a few hundred entries per
    workspace it opens, and glob's pattern matching took twice the time of the stats."""
    try:
        entries = os.scandir("/proc")
    except OSError:
        return
    with entries:
        for entry in entries:
            if entry.name.isdigit():
                try:
                    yield Path(entry.path), entry.stat().st_uid
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
