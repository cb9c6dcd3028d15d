"""Atomic file writes: a reader sees the old file or the whole new one, never a torn one.

The store's contract is that a file's presence means it is complete (`session.json` means
"this session finished"), so every file is written to a temporary name in the same folder,
fsynced, and then `os.replace`d over the target (a rename within one filesystem is atomic
on POSIX). The folder is fsynced too so the rename itself survives a crash.

A job that writes many small files (scoring: one file per session and scorer) uses an
`AtomicBatch` instead, which keeps that guarantee but pays the syncs together (see there).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType


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


def _temporary(target: Path) -> Path:
    """A fresh name beside `target`; the leading dot keeps folder scans from taking it for data."""
    return target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")


def remove_stale_temporaries(target: Path | str, older_than_s: float = 600.0) -> int:
    """Delete `target`'s temporaries left by a writer that died (SIGKILL, power loss) before
    its cleanup ran; a live writer's temporary is younger than `older_than_s`. Returns how many."""
    target = Path(target)
    removed, cutoff = 0, time.time() - older_than_s
    for tmp in target.parent.glob(f".{target.name}.*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            if tmp.stat().st_mtime < cutoff:
                tmp.unlink()
                removed += 1
    return removed


def _create(path: Path) -> int:
    # Created like any file (mode 0o666 minus the umask), not 0o600 as mkstemp would: results
    # folders are shared with colleagues.
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)


@contextlib.contextmanager
def atomic_path(target: Path | str) -> Iterator[Path]:
    """Yield a temporary path beside `target`; on success it replaces `target` atomically.

    For writers that insist on a path (pyarrow, pandas). On error the temporary file is
    removed and `target` is left untouched.
    """
    target = Path(target)
    tmp = _temporary(target)
    os.close(_create(tmp))
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


def _write_synced(tmp: Path, data: bytes) -> None:
    """Create `tmp` with `data` and fsync it (one batch write, run in the batch's threads)."""
    try:
        with open(_create(tmp), "wb") as fh:
            fh.write(data)
        fsync_file(tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _sync_existing_dirs(folders: list[Path]) -> None:
    for folder in folders:
        with contextlib.suppress(FileNotFoundError):  # removed since (a cleaned-up session)
            fsync_dir(folder)


class AtomicBatch:
    """Many small atomic writes whose syncs are paid together, not one file after another.

    Written one at a time, each small file waits for its own journal commits (its data,
    then its folder): 10 s of fsyncs for a grid's 1,482 score files on a shared disk. A batch
    writes each file under a temporary name and fsyncs it in a pool of threads, so the
    filesystem commits many of them at once (ext4 groups concurrent fsyncs into one journal
    commit) while the caller goes on; `flush` waits for those syncs and then renames the
    files into place, in the order they were written; `close` (the end of a `with` block,
    also on an error) flushes and then fsyncs every folder that received a file, once each.

    The guarantee is the one of `atomic_write_bytes`: a final name only ever points to data
    already on disk, so no reader, after a crash either, sees a torn or empty file. A crash
    before a flush leaves only temporaries (dot names, which folder scans skip), so those
    files are absent and a rerun writes exactly them again; a crash before the folder syncs
    may forget some renames, with the same outcome. A flush runs every `max_files` writes
    and at a write when the oldest pending file has waited `max_age_s`, so finished work
    does not wait long for its name.
    """

    def __init__(self, *, max_files: int = 256, max_age_s: float = 1.0, threads: int = 16) -> None:
        self.max_files, self.max_age_s, self.threads = max_files, max_age_s, threads
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="atomic-batch")
        self._pending: list[tuple[Path, Path, Future[None]]] = []
        self._oldest = 0.0
        self._folders: set[Path] = set()

    def write_bytes(self, target: Path | str, data: bytes) -> Path:
        """Write `data` to `target` as part of the batch (in place after the next flush)."""
        target = Path(target)
        if not self._pending:
            self._oldest = time.monotonic()
        tmp = _temporary(target)
        self._pending.append((tmp, target, self._pool.submit(_write_synced, tmp, data)))
        if len(self._pending) >= self.max_files or time.monotonic() - self._oldest >= self.max_age_s:
            self.flush()
        return target

    def write_text(self, target: Path | str, text: str) -> Path:
        return self.write_bytes(target, text.encode("utf-8"))

    def sync_folder(self, folder: Path) -> None:
        """Sync `folder`'s entries at the end too (e.g. the parent of a new subfolder)."""
        self._folders.add(folder)

    def flush(self) -> None:
        """Rename every pending file whose data is synced into place; a failed write's error
        is raised after the others are in place (its temporary file is removed)."""
        pending, self._pending = self._pending, []
        failure: BaseException | None = None
        for tmp, target, written in pending:
            try:
                written.result()
                os.replace(tmp, target)
            except BaseException as exc:  # the others stay written; this one is raised below
                tmp.unlink(missing_ok=True)
                failure = failure or exc
                continue
            self._folders.add(target.parent)
        if failure is not None:
            raise failure

    def close(self) -> None:
        """Flush, then sync each folder that received a file (concurrently, once each)."""
        try:
            self.flush()
        finally:
            folders, self._folders = list(self._folders), set()
            shares = [folders[i::self.threads] for i in range(self.threads)]
            try:  # a share of the folders per thread: thousands of tiny tasks cost more than their syncs
                list(self._pool.map(_sync_existing_dirs, shares))
            finally:
                self._pool.shutdown()

    def __enter__(self) -> AtomicBatch:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
