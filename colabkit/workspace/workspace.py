"""The shared workspace: one sandboxed kernel over a copy of the task data, a chat, an editor.

`Workspace` is the only object the session engine needs.  It owns the folders (a private
working folder with a read-only `data/` copy; the original files are only read once), the
kernel (restarted and brought back to its state by replaying earlier successful cells
when it dies or hangs), and the record: cells, messages, editor versions, kernel events
and the files participants created.  What a participant sees is the session layer's
decision (`colabkit.session.prompting.observation`: every cell is shared, chat by addressee).
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from colabkit.errors import ColabkitError
from colabkit.workspace import slots, warm
from colabkit.workspace.chat import Chat, Message
from colabkit.workspace.editor import Editor, EditorVersion
from colabkit.workspace.files import FileRecord, check_sources, copy_files, discard, fill, lay_out, list_files
from colabkit.workspace.isolation import IsolationChoice, IsolationReport, Layout, Limits, Sandbox, report
from colabkit.workspace.kernel import Outcome, SandboxedKernel, blocking
from colabkit.workspace.output import DiscardingCollector, OutputCollector
from colabkit.workspace.quota import POLL_S, DiskQuota
from colabkit.workspace.warm import KernelStart

SNAPSHOT_SCHEMA_VERSION: Final = 3
KERNEL_LOG: Final = "kernel.log"
KERNEL_START_ATTEMPTS: Final = 2
"""How often a workspace tries to start its kernel before it gives up (`KernelUnavailable`).
A start that fails once (a warm fork and its cold fallback under a loaded machine) is an
accident of the host, not of the session: the second try usually starts it."""
KERNEL_RETRY_PAUSE_S: Final = 1.0
"""The pause before the second try: a failure that was the host's moment may pass."""


class KernelUnavailable(ColabkitError):
    """The workspace could not start its kernel (or fill its folder) after every attempt:
    infrastructure, never the team's doing (the session ends "kernel_unavailable", rerun)."""


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


class WorkspaceSnapshot(BaseModel):
    """Everything the workspace holds, for the trajectory."""

    model_config = ConfigDict(frozen=True)

    schema_version: Literal[2, 3] = SNAPSHOT_SCHEMA_VERSION
    """Version 2 added this field; a stored snapshot without it was written by version 1.
    Version 3's isolation report says how the kernel started (`kernel_start`, warm or cold,
    and `kernel_start_note`); in older snapshots these read as None and ""."""
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


class Workspace:
    """A sandboxed, stateful kernel plus chat and editor; create with `await Workspace.open(...)`."""

    def __init__(self, *, base: Path, owns_base: bool, layout: Layout, data_files: tuple[str, ...],
                 limits: Limits, sandbox: Sandbox, notes: tuple[str, ...],
                 clock: Callable[[], float], kernel_start: KernelStart = "auto", logs: Path | None = None):
        self._base, self._owns_base, self._layout = base, owns_base, layout
        self._quota: DiskQuota | None = None  # `_fill` makes it: at open, or first in the background start
        self._notes = notes
        self.workdir = layout.workdir
        self.data_files = data_files
        self.limits = limits
        self.isolation = report(sandbox, limits, notes)
        """The sandbox (its level is known at open); the disk quota's fields once the
        working folder is filled, and how the kernel started once it has."""
        self._clock = clock
        self.chat = Chat(clock)
        self.editor = Editor(clock)
        self.cells: list[CellResult] = []
        self.events: list[WorkspaceEvent] = []
        self._kernel = SandboxedKernel(sandbox, layout, limits, (logs or base) / KERNEL_LOG, kernel_start)
        self._lock = asyncio.Lock()
        self._closed = False
        self._final_files: tuple[tuple[FileRecord, ...], int] | None = None
        self._starting: asyncio.Task[None] | None = None  # filling and kernel start, in the background
        self._needed = False  # a cell is waiting for the kernel

    @classmethod
    async def open(cls, data_files: Sequence[Path], *, root: Path | None = None,
                   limits: Limits = Limits(), isolation: IsolationChoice = "auto",
                   clock: Callable[[], float] = time.time, start_kernel: Literal["now", "background"] = "now",
                   kernel_start: KernelStart | None = None, logs: Path | None = None) -> Workspace:
        """Copy the files read-only into a private folder and start the sandboxed kernel.

        With `start_kernel="background"` only the sandbox and the folders are made before it
        returns; the working folder's file system, the data copy and the kernel start follow
        while the caller goes on (a session asks its first model calls meanwhile, so they cost
        no wall time). The first cell waits for them, and a failure there raises
        `ColabkitError` (and at `close` leaves a `kernel_start_failed` event), never silently.
        `isolation` has its disk-quota fields once the folder is filled, and its kernel fields
        once the kernel started: final after `close`.

        `kernel_start` ("auto", "warm", "cold"; default `$COLABKIT_KERNEL_START`, else auto):
        auto forks the kernel from this process's template where the sandbox allows it and
        starts it cold otherwise; warm refuses a cold start; cold never uses the template.
        The isolation report records which it was, and why a kernel that could not be warm
        started cold. Nothing else about the session depends on it.

        `logs`: the folder the kernel's log (`KERNEL_LOG`: its start-up output, every start
        attempt appended) is written to, made at open; default the workspace's private
        folder, removed with it. A runner passes the session's own folder, so a failed
        start's log outlives the workspace where its error message says it is.
        """
        start_mode = warm.mode(kernel_start)
        sources = check_sources(data_files)
        # Blocking work (the sandbox's one trial per process, mkfs and mount, the data copy)
        # runs in a worker thread (`kernel.blocking`), so a batch opening many workspaces
        # at once keeps its event loop, and the model requests waiting on it, moving.
        sandbox, notes, base, layout = await blocking(
            lay_out, root, isolation, start_mode != "cold", undo=lambda made: discard(*made[2:]))
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)
        ws = cls(base=base, owns_base=root is None, layout=layout,
                 data_files=tuple(p.name for p in sources), limits=limits, sandbox=sandbox,
                 notes=notes, clock=clock, kernel_start=start_mode, logs=logs)
        if start_kernel == "background":
            ws._starting = asyncio.create_task(ws._fill_and_start(sources))
            return ws
        try:
            await ws._fill(sources)
        except BaseException:  # nothing was started: only the folders to remove
            await blocking(discard, base, layout)
            raise
        try:
            await ws._start_kernel()
        except BaseException:
            await ws.close()
            raise
        return ws

    async def _fill(self, sources: list[Path]) -> None:
        self._quota = await blocking(fill, sources, self._base, self._layout, self.limits, self._kernel.sandbox.uid,
                                     undo=DiskQuota.release)
        # the report as a whole again, as before the split (its kernel fields come after this)
        self.isolation = report(self._kernel.sandbox, self.limits, self._notes,
                                disk=(self._quota.mode, self._quota.describe()))

    async def _fill_and_start(self, sources: list[Path]) -> None:
        """In the background (`start_kernel="background"`): the working folder's file system
        and data copy, then the kernel. A session's first model requests go out meanwhile:
        none of them needs the data or the kernel, only a cell does."""
        await self._fill(sources)
        await self._start_kernel()

    async def _start_kernel(self) -> None:
        await self._in_attempts(self._start_kernel_once)

    async def _in_attempts(self, start: Callable[[], Awaitable[None]]) -> None:
        """Start (or restart) the kernel, trying again after a failed start up to
        `KERNEL_START_ATTEMPTS` in all; each failure but the last is a `kernel_start_retry`
        event, the last raises `KernelUnavailable` naming the kernel's log (every attempt
        appends to it)."""
        for attempt in range(1, KERNEL_START_ATTEMPTS + 1):
            try:
                await start()
                return
            except Exception as exc:  # whatever stopped it: the attempt is the host's, not the session's
                reason = f"{type(exc).__name__}: {exc}"
                if attempt == KERNEL_START_ATTEMPTS:
                    raise KernelUnavailable(f"the workspace kernel did not start in {attempt} attempts; the last: "
                                            f"{reason} (its log: {self._kernel.log_path})") from exc
                self._event("kernel_start_retry", None, f"attempt {attempt} failed: {reason}")
                await asyncio.sleep(KERNEL_RETRY_PAUSE_S)

    async def _start_kernel_once(self) -> None:
        # at most one cold start per core, four warm ones; the waiting first (`slots`)
        async with slots.start_slot(self._kernel.expected_start(), ticket=self, hurried=self._needed):
            started = time.monotonic()
            await self._kernel.start()
        self.isolation = self.isolation.model_copy(update={
            "kernel_start": self._kernel.provenance, "kernel_start_note": self._kernel.cold_reason})
        self._event("kernel_started", None,
                    f"{self.isolation.level}, {self._kernel.provenance}, in {time.monotonic() - started:.2f} s")

    async def _kernel_started(self) -> None:
        """Wait for a kernel started in the background; raise if its start failed."""
        if self._starting is None:
            return
        if not self._starting.done():
            self._needed = True  # its first cell is here: its start goes before those not yet needed
            slots.hurry(self)
        try:
            await self._starting
        except KernelUnavailable:
            raise
        except Exception as exc:  # the folder could not be filled: the host's doing too
            raise KernelUnavailable(f"the workspace kernel failed to start: {type(exc).__name__}: {exc}") from exc

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
            await self._kernel_started()
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
            quota = self._filled()
            over_quota = await asyncio.to_thread(quota.exceeded)
            if over_quota:  # before any replay, so only this cell's files are removed
                removed, freed = await asyncio.to_thread(quota.remove_written_since, wall)
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
        quota = self._filled()
        if quota.mode == "filesystem":
            return await self._kernel.execute(code, sink, timeout=timeout)

        async def watch() -> None:
            while not await asyncio.to_thread(quota.exceeded):
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
        await self._in_attempts(self._kernel.restart)
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
                await self._in_attempts(self._kernel.restart)
                self._event("restarted", index, "replay broke the kernel; its state is empty")
                return 0
        self._event("replayed", index, f"{replayed} cell(s)")
        return replayed

    def _filled(self) -> DiskQuota:
        """The disk quota (a cell runs only after the kernel started, so after `_fill`)."""
        assert self._quota is not None, "the workspace ran a cell before its folder was filled"
        return self._quota

    def _event(self, kind: str, cell: int | None, detail: str = "") -> None:
        self.events.append(WorkspaceEvent(index=len(self.events), kind=kind, time=self._clock(),
                                          cell=cell, detail=detail))

    # -- record ----------------------------------------------------------------------------
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
        start = self._starting
        try:
            if start is not None:  # let it end (a cancelled start too), then shut down what it began
                await asyncio.wait([start])
                failure = None if start.cancelled() else start.exception()
                if failure is not None:  # recorded: a session that never ran a cell still shows it
                    self._event("kernel_start_failed", None, f"{type(failure).__name__}: {failure}")
        finally:
            # The kill, the unmount (with retries), the copies and deletes are one job in a
            # worker thread: a close cancelled at any point (Ctrl-C, a batch stopping) still
            # finishes every step there, so no kernel, mount or folder outlives the session.
            self._kernel.disconnect()
            await blocking(self._stop_and_release)

    def _stop_and_release(self) -> None:
        self._kernel.stop()
        self._release_folders()

    def _release_folders(self) -> None:
        """Record the final files, unmount the quota's file system, delete private folders."""
        self._final_files = list_files(self.workdir)
        quota = self._quota  # None: the session ended before its folder was filled (or filling failed)
        keep = quota is not None and quota.mode == "filesystem" and not self._owns_base
        kept = self._base / "work.kept"  # the caller keeps the files; the mount goes
        try:
            if keep:
                copy_files(self.workdir, kept)
        finally:
            if quota is not None:
                quota.release()
        if keep:
            self.workdir.rmdir()
            kept.rename(self.workdir)
        shutil.rmtree(self._layout.ipcdir, ignore_errors=True)
        shutil.rmtree(self._base if self._owns_base else self._layout.tmpdir, ignore_errors=True)
