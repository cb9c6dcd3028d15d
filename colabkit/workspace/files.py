"""The workspace's folders: laid out at open, filled (their own file system, the read-only
data copy) before the kernel starts, and what the kernel wrote.

Split from `workspace.py` because these are plain file operations with their own hazards
(the kernel may plant links, special files or a flood of files), tested on their own.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from colabkit.errors import ColabkitError
from colabkit.hashing import sha256_stream
from colabkit.workspace import warm
from colabkit.workspace.isolation import IsolationChoice, Layout, Limits, Sandbox, choose
from colabkit.workspace.quota import MIB, DiskQuota

MAX_LISTED_FILES = 1000
MAX_HASHED_BYTES = 64 * 1024 * 1024


class FileRecord(BaseModel):
    """A file participants' code left in the working folder (symlinks are not followed)."""

    model_config = ConfigDict(frozen=True)

    path: str
    kind: Literal["file", "symlink", "other"]
    size: int
    sha256: str | None


def check_sources(data_files: Sequence[Path]) -> list[Path]:
    sources = [Path(p) for p in data_files]
    for path in sources:
        if not path.is_file():
            raise ColabkitError(f"workspace data file not found: {path}")
    names = [p.name for p in sources]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ColabkitError(f"workspace data files share a name (all land in data/): {dupes}")
    return sources


def traversable(path: Path) -> bool:
    return all(p.stat().st_mode & stat.S_IXOTH for p in path.parents)


def prepare(layout: Layout, sources: list[Path], uid: int | None) -> None:
    """Create the folders, copy the data read-only, hand writable folders to the kernel uid."""
    layout.datadir.mkdir(parents=True)
    layout.tmpdir.mkdir()
    (layout.workdir / "figures").mkdir()
    for src in sources:
        dest = layout.datadir / src.name
        shutil.copyfile(src, dest)
        dest.chmod(0o444)
    layout.datadir.chmod(0o555)
    layout.workdir.chmod(0o755)
    if uid is not None:
        for d in (layout.workdir / "figures", layout.tmpdir, layout.ipcdir):
            os.chown(d, uid, uid)
        # Writable through the group, sticky and not owned by the kernel uid: its code can
        # create and remove its own files but cannot rename `data/` away and plant another.
        os.chown(layout.workdir, -1, uid)
        layout.workdir.chmod(0o1770)


def copy_files(src: Path, dest: Path) -> None:
    """Copy folders and regular files (the data copy too), never following a link: the
    kernel wrote this tree, so links and special files it planted are left behind."""
    for top, _, names in os.walk(src, followlinks=False):
        target = dest / Path(top).relative_to(src)
        target.mkdir(parents=True, exist_ok=True)
        for name in names:
            try:
                fd = os.open(Path(top) / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            with os.fdopen(fd, "rb") as fh:
                if stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    with open(target / name, "wb") as out:
                        shutil.copyfileobj(fh, out)


def list_files(workdir: Path) -> tuple[tuple[FileRecord, ...], int]:
    """Files under `workdir` except the data copy, without following symlinks; (records, omitted)."""
    records: list[FileRecord] = []
    omitted = 0
    if not workdir.is_dir():
        return (), 0
    for top, dirs, names in os.walk(workdir, followlinks=False):
        rel_top = Path(top).relative_to(workdir)
        if rel_top == Path("."):
            dirs[:] = [d for d in dirs if d != "data"]
        for name in sorted(names) + sorted(d for d in dirs if (Path(top) / d).is_symlink()):
            if len(records) >= MAX_LISTED_FILES:
                omitted += 1
                continue
            record = _record(Path(top) / name, (rel_top / name).as_posix())
            if record is not None:
                records.append(record)
    return tuple(records), omitted


def _record(path: Path, rel: str) -> FileRecord | None:
    try:
        st = path.lstat()
    except OSError:  # removed by the kernel meanwhile
        return None
    if stat.S_ISLNK(st.st_mode):
        return FileRecord(path=rel, kind="symlink", size=0, sha256=None)
    if not stat.S_ISREG(st.st_mode):
        return FileRecord(path=rel, kind="other", size=0, sha256=None)
    digest = None
    if st.st_size <= MAX_HASHED_BYTES:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as fh:
                digest = sha256_stream(fh)
        except OSError:
            digest = None
    return FileRecord(path=rel, kind="file", size=st.st_size, sha256=digest)


def lay_out(root: Path | None, isolation: IsolationChoice,
            warm_allowed: bool) -> tuple[Sandbox, tuple[str, ...], Path, Layout]:
    """The quick part of opening a workspace (blocking: run it in a worker thread): choose
    the sandbox, make the folders (and begin the kernel template). Nothing here waits on the data."""
    sandbox, notes = choose(isolation)
    if warm_allowed:
        warm.prestart(isolation)
    if root is not None:
        Path(root).mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="colabkit-ws-", dir=root))
    base.chmod(0o711)
    if sandbox.level != "bubblewrap" and sandbox.uid is not None and not traversable(base):
        sandbox = Sandbox(sandbox.level, None)
        notes += (f"{base.parent} is not traversable by an unprivileged uid; the kernel runs as root",)
    layout = Layout(base / "work", base / "work" / "data", socket_folder(base if root is not None else None),
                    base / "tmp")
    return sandbox, notes, base, layout


def fill(sources: list[Path], base: Path, layout: Layout, limits: Limits, uid: int | None) -> DiskQuota:
    """The working folder's own file system (the disk quota) and the read-only data copy,
    in a worker thread; on failure the quota is released (the folders are the caller's)."""
    quota: DiskQuota | None = None
    try:
        quota = DiskQuota.create(layout.workdir, limits.disk_mb * MIB, image=base / "workdir.img",
                                 data_bytes=sum(p.stat().st_size for p in sources))
        prepare(layout, sources, uid)
        quota.start()
    except BaseException as exc:
        if quota is not None:
            quota.release()
        if isinstance(exc, OSError):
            raise ColabkitError(f"cannot prepare the workspace data: {exc}") from exc
        raise
    return quota


def socket_folder(linked_from: Path | None) -> Path:
    """A fresh socket folder in the system temp dir (kernel socket paths must stay short).

    With a results root, the workspace's `ipc` link to it is made *before* the folder itself,
    so a process killed at any instant leaves nothing that a later sweep of the root cannot
    find (a folder made first and linked after leaks if the kill falls in between)."""
    for _ in range(100):
        path = Path(tempfile.gettempdir()) / f"ck-{secrets.token_hex(4)}"
        if linked_from is not None:
            (linked_from / "ipc").unlink(missing_ok=True)
            (linked_from / "ipc").symlink_to(path)
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
        return path
    raise ColabkitError(f"cannot make a socket folder in {tempfile.gettempdir()}")


def discard(base: Path, layout: Layout) -> None:
    """Remove the folders of a workspace that will not open (`fill` released its quota)."""
    shutil.rmtree(layout.ipcdir, ignore_errors=True)
    shutil.rmtree(base, ignore_errors=True)
