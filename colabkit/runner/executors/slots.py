"""One live-session cap per machine, whatever processes a batch starts.

`colabkit batch` runs `concurrency.notebooks` run_variant processes at once, and each used to
bound only its own sessions: 16 sessions x 4 notebooks could hold 64 kernels while the plan
said 16. The cap (min(concurrency.sessions, live kernels)) is now a set of slot files in the
experiment's work area, `<results>/.work/.slot-<host>-<i>.lock`: a session runs only while
its process holds one of them (an OS file lock, `fcntl.flock`). The kernel releases a lock
when its process dies, however it dies, so a killed process never leaks a slot, and slot
files are never deleted (see `runner.workarea`). The host name is in the file name, so on a
results folder shared between machines each machine has its own cap. Dask workers run one
session per task and thread; there the cap is per worker (its threads), as before.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from colabkit.runner.workarea import work_root

_POLL_S = 0.2


class MachineSlots:
    """`size` slots shared by every process on this machine that runs sessions into `out`."""

    def __init__(self, out: Path | str, size: int) -> None:
        self.size = max(1, size)
        self.root = work_root(out)
        self.host = socket.gethostname().replace("/", "_")
        self._queue: asyncio.Lock | None = None  # one poller per process; the others queue behind it

    def path(self, index: int) -> Path:
        return self.root / f".slot-{self.host}-{index:03d}.lock"

    def try_take(self) -> int | None:
        """An open descriptor holding a free slot's lock, or None when all are taken."""
        self.root.mkdir(parents=True, exist_ok=True)
        for index in range(self.size):
            fd = os.open(self.path(index), os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            except BaseException:
                os.close(fd)
                raise
            return fd
        return None

    @asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        """Wait (without blocking the event loop) for a slot; hold it for the block.

        Waiters of one process queue on an asyncio lock, so only the first polls the files.
        """
        if self._queue is None:
            self._queue = asyncio.Lock()
        async with self._queue:
            fd = self.try_take()
            while fd is None:
                await asyncio.sleep(_POLL_S)
                fd = self.try_take()
        try:
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    def held(self) -> int:
        """How many slots are held now, by any process (for tests and diagnostics)."""
        taken = 0
        for index in range(self.size):
            path = self.path(index)
            if not path.exists():
                continue
            fd = os.open(path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                taken += 1
            finally:
                os.close(fd)
        return taken
