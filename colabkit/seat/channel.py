"""The line between a participant page and the session host: a private Unix socket.

A seat session runs in its own process, the host (`colabkit.seat.host`), not in the page's
kernel: a page can then be reloaded, closed or opened twice and the session goes on. Each
page's kernel connects, claims its seat and is sent the question that is waiting for it.

Messages are dicts, length-prefixed and pickled with cloudpickle, because a question's
answer schema is a pydantic model built at run time (sized by the observation profile),
which plain pickle cannot carry. Both ends are this package on this machine; the socket is
in a 0700 folder of the user that started the host. Answers travel back as JSON-able dicts
and are validated again by the host against its own schema.

`connect` starts the host if none is running: the host holds an exclusive lock on its
folder for its lifetime, so two pages opened at once start one host (a second exits).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import cloudpickle

from colabkit.errors import ColabkitError
from colabkit.seat.plan import SeatPlan

SOCKET, LOCK, PID, LOG, PLAN = "host.sock", "host.lock", "host.pid", "host.log", "plan.json"
_HEADER = struct.Struct("!I")
START_TIMEOUT_S = 180.0


async def send(writer: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    data = cloudpickle.dumps(message)
    writer.write(_HEADER.pack(len(data)) + data)
    await writer.drain()


async def receive(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message, or None when the other end has gone."""
    try:
        header = await reader.readexactly(_HEADER.size)
        message: dict[str, Any] = cloudpickle.loads(await reader.readexactly(_HEADER.unpack(header)[0]))
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    return message


def hold_lock(folder: Path) -> int | None:
    """An exclusive lock on the host folder (its fd), or None when a host holds it."""
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def host_running(folder: Path) -> bool:
    fd = hold_lock(folder)
    if fd is None:
        return True
    os.close(fd)
    return False


def start_host(plan: SeatPlan) -> subprocess.Popen[bytes]:
    """Start the session host for `plan` in its own session (it outlives the page's kernel)."""
    folder = plan.runtime_dir()
    (folder / PLAN).write_text(plan.model_dump_json())
    with open(folder / LOG, "ab") as log:
        return subprocess.Popen([sys.executable, "-m", "colabkit.seat", str(folder / PLAN)],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=folder)


async def connect(plan: SeatPlan) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to `plan`'s host, started first if none runs (it waits up to START_TIMEOUT_S)."""
    folder = plan.runtime_dir()
    started: subprocess.Popen[bytes] | None = None
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            return await asyncio.open_unix_connection(str(folder / SOCKET))
        except OSError:
            pass
        if started is None and not host_running(folder):
            started = start_host(plan)
        elif started is not None and started.poll() not in (None, 0):
            tail = (folder / LOG).read_text(errors="replace").strip().splitlines()[-1:]
            raise ColabkitError(f"the session host stopped: {tail[0] if tail else started.returncode}")
        if time.monotonic() > deadline:
            raise ColabkitError(f"the session host did not start within {START_TIMEOUT_S:g} s (log: {folder / LOG})")
        await asyncio.sleep(0.2)
