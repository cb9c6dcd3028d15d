"""The shared workspace: one sandboxed kernel over a copy of the task data, a chat, an editor.

`Workspace` is the only object the session engine needs.  It owns the folders (a private
working folder with a read-only `data/` copy; the original files are only read once), the
kernel (restarted and brought back to its state by replaying earlier successful cells
when it dies or hangs), and the record: cells, messages, editor versions, kernel events
and the files participants created.  Views answer "what can participant X see now".
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from colabkit.errors import ColabkitError
from colabkit.workspace.chat import Chat, Message
from colabkit.workspace.editor import Editor, EditorVersion
from colabkit.workspace.isolation import IsolationChoice, IsolationReport, Layout, Limits, Sandbox, choose, report
from colabkit.workspace.kernel import Outcome, SandboxedKernel
from colabkit.workspace.output import DiscardingCollector, OutputCollector
from colabkit.workspace.quota import MIB, POLL_S, DiskQuota

MAX_LISTED_FILES = 1000
MAX_HASHED_BYTES = 64 * 1024 * 1024
SNAPSHOT_SCHEMA_VERSION: Final = 2


class CellResult(BaseModel):
    """One executed cell as participants and the trajectory see it."""

    model_config = ConfigDict(frozen=True)

    index: int
    author: str
    code: str
    status: Literal["ok", "error", "timeout", "died"]
    output: str
    error: str | None
    images: tuple[str, ...]
    truncated: bool
    restarted: bool
    duration_s: float
    time: float = 0.0  # clock reading when the cell started


class WorkspaceEvent(BaseModel):
    """Something that happened to the kernel (start, timeout, death, restart, replay)."""

    model_config = ConfigDict(frozen=True)

    index: int
    kind: str
    time: float
    cell: int | None
    detail: str = ""


class FileRecord(BaseModel):
    """A file participants' code left in the working folder (symlinks are not followed)."""

    model_config = ConfigDict(frozen=True)

    path: str
    kind: Literal["file", "symlink", "other"]
    size: int
    sha256: str | None


class WorkspaceView(BaseModel):
    """What one participant can see at this moment."""

    model_config = ConfigDict(frozen=True)

    participant: str
    cells: tuple[CellResult, ...]
    messages: tuple[Message, ...]
    editor_text: str


class WorkspaceSnapshot(BaseModel):
    """Everything the workspace holds, for the trajectory."""

    model_config = ConfigDict(frozen=True)

    schema_version: Literal[2] = SNAPSHOT_SCHEMA_VERSION
    """Version 2 added this field; a stored snapshot without it was written by version 1."""
    isolation: IsolationReport
    limits: Limits
    data_files: tuple[str, ...]
    cells: tuple[CellResult, ...]
    messages: tuple[Message, ...]
    editor_versions: tuple[EditorVersion, ...]
    events: tuple[WorkspaceEvent, ...]
    files: tuple[FileRecord, ...]
    files_omitted: int = 0

    def save(self, path: Path | str) -> Path:
        path = Path(path)
        path.write_text(self.model_dump_json(indent=2))
        return path


def visible_cells(cells: Sequence[CellResult], participant: str, *, sees_all: bool) -> list[CellResult]:
    """Cells a participant may see: all of them, or only the ones they wrote."""
    return [c for c in cells if sees_all or c.author == participant]


class Workspace:
    """A sandboxed, stateful kernel plus chat and editor; create with `await Workspace.open(...)`."""

    def __init__(self, *, base: Path, owns_base: bool, layout: Layout, data_files: tuple[str, ...],
                 limits: Limits, sandbox: Sandbox, isolation: IsolationReport,
                 clock: Callable[[], float], quota: DiskQuota):
        self._base, self._owns_base, self._layout = base, owns_base, layout
        self._quota = quota
        self.workdir = layout.workdir
        self.data_files = data_files
        self.limits = limits
        self.isolation = isolation
        self._clock = clock
        self.chat = Chat(clock)
        self.editor = Editor(clock)
        self.cells: list[CellResult] = []
        self.events: list[WorkspaceEvent] = []
        self._kernel = SandboxedKernel(sandbox, layout, limits, base / "kernel.log")
        self._lock = asyncio.Lock()
        self._closed = False
        self._final_files: tuple[tuple[FileRecord, ...], int] | None = None

    @classmethod
    async def open(cls, data_files: Sequence[Path], *, root: Path | None = None,
                   limits: Limits = Limits(), isolation: IsolationChoice = "auto",
                   clock: Callable[[], float] = time.time) -> Workspace:
        """Copy the files read-only into a private folder and start the sandboxed kernel."""
        sources = _check_sources(data_files)
        sandbox, notes = choose(isolation)
        if root is not None:
            Path(root).mkdir(parents=True, exist_ok=True)
        base = Path(tempfile.mkdtemp(prefix="colabkit-ws-", dir=root))
        base.chmod(0o711)
        if sandbox.level != "bubblewrap" and sandbox.uid is not None and not _traversable(base):
            sandbox = Sandbox(sandbox.level, None)
            notes += (f"{base.parent} is not traversable by an unprivileged uid; the kernel runs as root",)
        layout = Layout(base / "work", base / "work" / "data",
                        Path(tempfile.mkdtemp(prefix="ck-")), base / "tmp")
        quota: DiskQuota | None = None
        try:
            quota = DiskQuota.create(layout.workdir, limits.disk_mb * MIB, image=base / "workdir.img",
                                     data_bytes=sum(p.stat().st_size for p in sources))
            _prepare(layout, sources, sandbox.uid)
            quota.start()
        except BaseException as exc:  # nothing was started yet: only the folders to remove
            if quota is not None:
                quota.release()
            shutil.rmtree(layout.ipcdir, ignore_errors=True)
            shutil.rmtree(base, ignore_errors=True)
            if isinstance(exc, OSError):
                raise ColabkitError(f"cannot prepare the workspace data: {exc}") from exc
            raise
        ws = cls(base=base, owns_base=root is None, layout=layout,
                 data_files=tuple(p.name for p in sources), limits=limits, sandbox=sandbox,
                 isolation=report(sandbox, limits, notes, disk=(quota.mode, quota.describe())),
                 clock=clock, quota=quota)
        started = time.monotonic()
        try:
            await ws._kernel.start()
        except BaseException:
            await ws.close()
            raise
        ws._event("kernel_started", None, f"{ws.isolation.level} in {time.monotonic() - started:.2f} s")
        return ws

    async def __aenter__(self) -> Workspace:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- cells ---------------------------------------------------------------------------
    async def execute(self, code: str, *, author: str, timeout: float | None = None) -> CellResult:
        """Run `code` in the shared kernel as `author`; never raises for what the code does."""
        if self._closed:
            raise ColabkitError("this workspace is closed")
        limit = self.limits.cell_timeout_s if timeout is None else timeout
        async with self._lock:
            index = len(self.cells)
            restarted = False
            if not self._kernel.alive:
                await self._recover(index, "the kernel had stopped between cells")
                restarted = True
            sink = OutputCollector(self.limits.output_chars, workdir=self.workdir, image_stem=f"cell{index}")
            started_at, started, wall = self._clock(), time.monotonic(), time.time()
            outcome = await self._execute_watched(code, sink, limit)
            duration = time.monotonic() - started
            error = sink.error
            over_quota = await asyncio.to_thread(self._quota.exceeded)
            if over_quota:  # before any replay, so only this cell's files are removed
                removed, freed = await asyncio.to_thread(self._quota.remove_written_since, wall)
                self._event("disk_quota", index, f"{removed} file(s) removed, {freed} bytes")
            if outcome.status == "timeout":
                how = "interrupted" if outcome.interrupted else "stopped (it ignored the interrupt)"
                error = f"CellTimeout: the cell ran longer than {limit:g} s and was {how}" + \
                    (f"\n{sink.error}" if sink.error else "")
                self._event("timeout", index, how)
            elif outcome.status == "died":
                error = f"KernelDied: the kernel process {outcome.detail}"
                self._event("kernel_died", index, outcome.detail)
            if error and (outcome.status == "died" or (outcome.status == "timeout" and not outcome.interrupted)):
                replayed = await self._recover(index, error.splitlines()[0])
                restarted = True
                error += (f"\nThe kernel was restarted and {replayed} earlier successful cell(s) "
                          "were replayed, so their variables are defined again.")
            status = outcome.status
            if over_quota:
                error = (f"DiskQuotaExceeded: the workspace may write at most {self.limits.disk_mb} MB in "
                         f"total and this cell went past it; the {removed} file(s) it wrote were removed"
                         + (f"\n{error}" if error else ""))
                status = "error" if status == "ok" else status
            cell = CellResult(index=index, author=author, code=code, status=status,
                              output=sink.text, error=error, images=tuple(sink.images),
                              truncated=sink.truncated, restarted=restarted,
                              duration_s=round(duration, 4), time=started_at)
            self.cells.append(cell)
            return cell

    async def _execute_watched(self, code: str, sink: OutputCollector, timeout: float) -> Outcome:
        """Run a cell; where the file system does not cap the disk, watch its usage meanwhile
        and stop the cell once it is over the quota (interrupt, then kill if ignored)."""
        if self._quota.mode == "filesystem":
            return await self._kernel.execute(code, sink, timeout=timeout)

        async def watch() -> None:
            while not await asyncio.to_thread(self._quota.exceeded):
                await asyncio.sleep(POLL_S)
            self._kernel.interrupt()
            await asyncio.sleep(self.limits.interrupt_grace_s)
            self._kernel.kill()

        watcher = asyncio.create_task(watch())
        try:
            return await self._kernel.execute(code, sink, timeout=timeout)
        finally:
            watcher.cancel()

    async def _recover(self, index: int, reason: str) -> int:
        """Restart the kernel and silently re-run earlier successful cells; return how many."""
        await self._kernel.restart()
        self._event("restarted", index, reason)
        replayed = 0
        for cell in self.cells:
            if cell.status != "ok":
                continue
            outcome = await self._kernel.execute(cell.code, DiscardingCollector(),
                                                 timeout=self.limits.cell_timeout_s, silent=True)
            if outcome.status == "ok":
                replayed += 1
                continue
            self._event("replay_failed", cell.index, outcome.detail or outcome.status)
            if outcome.status == "died" or (outcome.status == "timeout" and not outcome.interrupted):
                await self._kernel.restart()
                self._event("restarted", index, "replay broke the kernel; its state is empty")
                return 0
        self._event("replayed", index, f"{replayed} cell(s)")
        return replayed

    def _event(self, kind: str, cell: int | None, detail: str = "") -> None:
        self.events.append(WorkspaceEvent(index=len(self.events), kind=kind, time=self._clock(),
                                          cell=cell, detail=detail))

    # -- views and record ----------------------------------------------------------------
    def cells_visible_to(self, participant: str, *, sees_all: bool) -> list[CellResult]:
        return visible_cells(self.cells, participant, sees_all=sees_all)

    def view_for(self, participant: str, *, sees_all: bool) -> WorkspaceView:
        return WorkspaceView(participant=participant,
                             cells=tuple(self.cells_visible_to(participant, sees_all=sees_all)),
                             messages=tuple(self.chat.visible_to(participant)),
                             editor_text=self.editor.text)

    def snapshot(self) -> WorkspaceSnapshot:
        files, omitted = self._final_files if self._final_files else list_files(self.workdir)
        return WorkspaceSnapshot(
            isolation=self.isolation, limits=self.limits, data_files=self.data_files,
            cells=tuple(self.cells), messages=tuple(self.chat.messages),
            editor_versions=tuple(self.editor.versions), events=tuple(self.events),
            files=files, files_omitted=omitted)

    async def close(self) -> None:
        """Kill the kernel and delete private folders (the working folder too if no `root`)."""
        if self._closed:
            return
        self._closed = True
        await self._kernel.shutdown()
        self._final_files = list_files(self.workdir)
        keep = self._quota.mode == "filesystem" and not self._owns_base
        kept = self._base / "work.kept"  # the caller keeps the files; the mount goes
        try:
            if keep:
                copy_files(self.workdir, kept)
        finally:
            self._quota.release()
        if keep:
            self.workdir.rmdir()
            kept.rename(self.workdir)
        shutil.rmtree(self._layout.ipcdir, ignore_errors=True)
        shutil.rmtree(self._base if self._owns_base else self._layout.tmpdir, ignore_errors=True)


def _check_sources(data_files: Sequence[Path]) -> list[Path]:
    sources = [Path(p) for p in data_files]
    for path in sources:
        if not path.is_file():
            raise ColabkitError(f"workspace data file not found: {path}")
    names = [p.name for p in sources]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ColabkitError(f"workspace data files share a name (all land in data/): {dupes}")
    return sources


def _traversable(path: Path) -> bool:
    return all(p.stat().st_mode & stat.S_IXOTH for p in path.parents)


def _prepare(layout: Layout, sources: list[Path], uid: int | None) -> None:
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
                digest = hashlib.file_digest(fh, "sha256").hexdigest()
        except OSError:
            digest = None
    return FileRecord(path=rel, kind="file", size=st.st_size, sha256=digest)
