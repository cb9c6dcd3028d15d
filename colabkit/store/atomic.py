"""Atomic file writes: a reader sees the old file or the whole new one, never a torn one.

The store's contract is that a file's presence means it is complete (`session.json` means
"this session finished"), so every file is written to a temporary name in the same folder,
fsynced, and then `os.replace`d over the target (a rename within one filesystem is atomic
on POSIX). The folder is fsynced too so the rename itself survives a crash.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path


def fsync_dir(folder: Path) -> None:
    """Persist a folder's entries (a rename is only durable once its folder is synced)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
    fsync_dir(target.parent)


def atomic_write_bytes(target: Path | str, data: bytes) -> Path:
    """Write `data` to `target` atomically and durably; return the target path."""
    target = Path(target)
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
    return target


def atomic_write_text(target: Path | str, text: str) -> Path:
    """Write UTF-8 `text` to `target` atomically and durably; return the target path."""
    return atomic_write_bytes(target, text.encode("utf-8"))
