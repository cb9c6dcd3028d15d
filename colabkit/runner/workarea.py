"""The private work area of a results folder: session workspaces and session locks.

A running session's workspace (its data copy, the kernel's working folder) lives under
`<results>/.work/<session id>/`, not in `/tmp`, so what a killed run leaves behind is in one
known place, on the results' own disk, and is swept by the next run. The session's lock file
sits beside it (`<results>/.work/<session id>.lock`): an OS file lock (`fcntl.flock`) held
while the session runs. The kernel releases it when its process dies, however it dies, so
"the lock is free" is exactly "no live process is running this session", which is what makes
sweeping safe. Lock files are never deleted: removing a lock file that another process has
open would let two processes hold "the" lock at once.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

from colabkit.store import WORK_DIR
from colabkit.workspace import release_mounts

LOCK_SUFFIX = ".lock"
IPC_LINK = "ipc"  # a workspace's link to its socket folder (in the system temp dir: short paths)
_POLL_S = 0.2


def work_root(out: Path | str) -> Path:
    return Path(out) / WORK_DIR


def session_work_dir(out: Path | str, session_id: str) -> Path:
    """Where the workspace of session `session_id` is created while it runs."""
    return work_root(out) / session_id


class SessionLock:
    """An exclusive, process-wide lock on one session of one results folder.

    Not re-entrant and not shared between threads: one holder runs the session. `flock`
    locks belong to the open file, so a second `SessionLock` on the same session conflicts
    even within one process.
    """

    def __init__(self, out: Path | str, session_id: str) -> None:
        self.path = work_root(out) / f"{session_id}{LOCK_SUFFIX}"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lock if no one holds it; True when this object now holds it."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return True

    async def acquire(self) -> None:
        """Wait (without blocking the event loop) until the lock is ours."""
        while not self.try_acquire():
            await asyncio.sleep(_POLL_S)

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the last descriptor releases the flock


def clear_session_work(out: Path | str, session_id: str) -> None:
    """Remove a session's workspace folder (call only while holding its lock).

    Each workspace under it may link (`ipc`) to its socket folder in the system temp dir,
    which a killed process never removed: that folder goes too, if it is one of ours.
    """
    folder = session_work_dir(out, session_id)
    if not folder.exists():
        return
    release_mounts(folder)  # an interrupted close leaves the disk image mounted
    temp = Path(tempfile.gettempdir()).resolve()
    for base in folder.iterdir():
        link = base / IPC_LINK
        if link.is_symlink():
            target = Path(os.readlink(link))
            if target.parent.resolve() == temp and target.name.startswith("ck-"):
                shutil.rmtree(target, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)


def sweep(out: Path | str) -> list[str]:
    """Remove the work folders no live process is using; return their session ids.

    A folder whose session lock is held belongs to a running session (here or in another
    process) and is left alone.
    """
    root = work_root(out)
    if not root.is_dir():
        return []
    swept = []
    for entry in sorted(root.iterdir()):
        if not entry.is_dir():
            continue
        lock = SessionLock(out, entry.name)
        if lock.try_acquire():
            try:
                clear_session_work(out, entry.name)
                swept.append(entry.name)
            finally:
                lock.release()
    return swept
