"""Atomic file writes: a reader sees the old file or the whole new one, never a torn one.

The store's contract is that a file's presence means it is complete (`session.json` means
"this session finished"), so every file is written to a temporary name in the same folder,
fsynced, and then `os.replace`d over the target (a rename within one filesystem is atomic
on POSIX). The folder is fsynced too so the rename itself survives a crash.

A job that writes many small files (scoring: one file per session and scorer) can defer the
folder fsyncs with `deferred_folder_syncs()`: each file's data is still fsynced before its
rename, so no reader (after a crash too) ever sees a torn file, and the folders are synced
once each when the job ends. A power loss inside the job may then forget some renames,
which leaves those files absent, never half-written: the job's rerun redoes exactly those.
On ext4 the deferred fsyncs are cheap, as the first one commits the journal for them all.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

_deferred: ContextVar[set[Path] | None] = ContextVar("deferred_folder_syncs", default=None)


def fsync_dir(folder: Path) -> None:
    """Persist a folder's entries (a rename is only durable once its folder is synced)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_folder(folder: Path) -> None:
    """`fsync_dir`, or, inside `deferred_folder_syncs`, remember the folder for its end."""
    pending = _deferred.get()
    if pending is None:
        fsync_dir(folder)
    else:
        pending.add(folder)


@contextlib.contextmanager
def deferred_folder_syncs() -> Iterator[None]:
    """Sync the folders of the atomic writes made inside once each, at the end (see the
    module docstring); also on an error, so what was written stays written."""
    if _deferred.get() is not None:  # nested: the outer block syncs
        yield
        return
    pending: set[Path] = set()
    token = _deferred.set(pending)
    try:
        yield
    finally:
        _deferred.reset(token)
        for folder in sorted(pending):
            with contextlib.suppress(FileNotFoundError):  # removed since (a cleaned-up session)
                fsync_dir(folder)


def fsync_file(path: Path) -> None:
    """Flush a file's data to disk (used before renaming it into place)."""
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


@contextlib.contextmanager
def atomic_path(target: Path | str) -> Iterator[Path]:
    """Yield a temporary path beside `target`; on success it replaces `target` atomically.

    For writers that insist on a path (pyarrow, pandas). The temporary name starts with a
    dot so folder scans never mistake it for data; on error it is removed and `target` is
    left untouched.
    """
    target = Path(target)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    # Created like any file (mode 0o666 minus the umask), not 0o600 as mkstemp would: results
    # folders are shared with colleagues.
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        yield tmp
        fsync_file(tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    sync_folder(target.parent)


def atomic_write_bytes(target: Path | str, data: bytes) -> Path:
    """Write `data` to `target` atomically and durably; return the target path."""
    target = Path(target)
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
    return target


def atomic_write_text(target: Path | str, text: str) -> Path:
    """Write UTF-8 `text` to `target` atomically and durably; return the target path."""
    return atomic_write_bytes(target, text.encode("utf-8"))
