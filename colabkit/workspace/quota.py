"""A total limit on what one workspace may write (`Limits.disk_mb`), so a session cannot fill
the host's disk: model code once wrote 4 GB in one 15-second cell, in files each under the
per-file cap (RLIMIT_FSIZE bounds a file, not their sum).

Two ways, the stronger chosen when the machine allows it, and recorded in the session's
isolation report:

* ``filesystem``: the working folder is its own ext4 file system in a sparse image file of
  the quota's size (plus the data copy and the file system's own overhead), loop-mounted.
  The kernel then gets ENOSPC at the quota and the host's disk can never grow past the
  image's size, however fast the writes. This needs root (mount) and a loop device. A
  size-capped tmpfs would be simpler but lives in RAM: with no swap and several sessions
  at once, a 1 GB quota per session would be a 1 GB *memory* reservation each, on top of
  the kernel's own memory limit. A sparse disk image costs only what is written.
* ``checked``: where mounting is impossible (not root, no loop device), usage is measured
  by walking the folder every `POLL_S` seconds during a cell and after it; a cell over
  the quota is interrupted (killed if it ignores that), so the overshoot is bounded by
  what the cell writes in one poll interval, not by the cell's run time.

Either way, a cell that ends over the quota fails with `DiskQuotaExceeded`, and the files
it wrote (modified since it started) are removed so the workspace is usable again.

A mount outlives a process killed with SIGKILL, so each image records its owner (pid and
start time) beside it, and a process's first quota (then one every `SWEEP_EVERY_S`) first
unmounts images whose owner is gone.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Literal

log = logging.getLogger("colabkit.workspace")
POLL_S = 0.5
MIB = 1024 * 1024
_LOW_WATER = 256 * 1024  # a file system with less free space than this counts as full
_MOUNTED: set[Path] = set()
SWEEP_EVERY_S = 30.0
_SWEEPING = threading.Lock()
_last_sweep: float | None = None


class DiskQuota:
    """How the working folder's total size is capped; `used()` counts what the kernel wrote."""

    def __init__(self, workdir: Path, limit_bytes: int, mode: Literal["filesystem", "checked"],
                 image: Path | None = None, note: str = ""):
        self.workdir = workdir
        self.limit = limit_bytes
        self.mode = mode
        self.image = image
        self.note = note
        self._baseline = 0

    @classmethod
    def create(cls, workdir: Path, limit_bytes: int, *, data_bytes: int, image: Path) -> DiskQuota:
        """Mount a size-capped file system at `workdir` (which must not exist yet) if possible,
        else create the folder and check usage. Never raises for an unavailable mount."""
        workdir.mkdir()
        if os.geteuid() != 0:
            return cls(workdir, limit_bytes, "checked", note="not root, so no size-capped file system")
        _sweep_now_and_then()
        image.with_suffix(".owner").write_text(_identity(os.getpid()))
        why = _mount_image(workdir, image, limit_bytes + data_bytes)
        if why:
            image.unlink(missing_ok=True)
            return cls(workdir, limit_bytes, "checked", note=f"no size-capped file system ({why})")
        return cls(workdir, limit_bytes, "filesystem", image=image)

    def start(self) -> None:
        """Take the current usage (the data copy, the file system's own files) as zero."""
        self._baseline = self._raw_used()

    def used(self) -> int:
        """Bytes written since `start`, as the disk counts them (allocated blocks)."""
        return max(0, self._raw_used() - self._baseline)

    def exceeded(self) -> bool:
        if self.used() >= self.limit:
            return True
        if self.mode == "filesystem":
            st = os.statvfs(self.workdir)
            return st.f_bavail * st.f_frsize < _LOW_WATER or st.f_favail == 0
        return False

    def describe(self) -> str:
        mb = self.limit // MIB
        if self.mode == "filesystem":
            return (f"disk quota {mb} MB enforced by the file system: the working folder is a "
                    "loop-mounted ext4 image of that size")
        return (f"disk quota {mb} MB checked every {POLL_S:g} s during a cell and after it "
                f"(weaker: {self.note})")

    def remove_written_since(self, since: float) -> tuple[int, int]:
        """Delete regular files under the working folder (not the data copy) modified at or
        after `since` (a wall-clock time); (files removed, bytes freed)."""
        removed = freed = 0
        for top, dirs, names in os.walk(self.workdir, followlinks=False):
            if Path(top) == self.workdir:
                dirs[:] = [d for d in dirs if d != "data"]
            for name in names:
                path = Path(top) / name
                try:
                    st = path.lstat()
                    if stat.S_ISREG(st.st_mode) and st.st_mtime >= since - 0.01:
                        path.unlink()
                        removed += 1
                        freed += st.st_blocks * 512
                except OSError:
                    continue
        return removed, freed

    def release(self) -> None:
        """Unmount and delete the image (no-op in checked mode); call after the kernel is dead."""
        if self.mode != "filesystem" or self.workdir not in _MOUNTED:
            return
        _unmount(self.workdir)
        if self.image is not None:
            self.image.unlink(missing_ok=True)
            self.image.with_suffix(".owner").unlink(missing_ok=True)

    def _raw_used(self) -> int:
        if self.mode == "filesystem":
            st = os.statvfs(self.workdir)
            return (st.f_blocks - st.f_bfree) * st.f_frsize
        return _allocated(self.workdir)


def _allocated(folder: Path) -> int:
    """Allocated bytes of every file under `folder`, without following links (the data copy
    is counted too: `start` takes it as the baseline)."""
    total = 0
    for top, _, names in os.walk(folder, followlinks=False):
        for name in names:
            try:
                total += os.lstat(os.path.join(top, name)).st_blocks * 512
            except OSError:
                continue
    return total


def _mount_image(mountpoint: Path, image: Path, size: int) -> str:
    """Create a sparse ext4 image holding `size` bytes and mount it; "" or why it failed."""
    if shutil.which("mkfs.ext4") is None or shutil.which("mount") is None:
        return "mkfs.ext4 or mount not found"
    # ext4 keeps ~1.5% plus its inode tables for itself; -m 0: no blocks reserved for root
    # (the kernel may run as root when the uid switch is impossible).
    overhead = 4 * MIB + size // 32
    try:
        with open(image, "wb") as fh:
            fh.truncate(size + overhead)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-b", "4096", "-i", "32768",
                        "-O", "^has_journal", "-E", "nodiscard,lazy_itable_init=1", str(image)],
                       check=True, capture_output=True, timeout=60)
        # discard: blocks freed inside (a cell's files removed) are punched out of the image
        subprocess.run(["mount", "-o", "loop,nosuid,nodev,discard", str(image), str(mountpoint)],
                       check=True, capture_output=True, timeout=60)
    except subprocess.CalledProcessError as exc:
        tail = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
        return f"{Path(exc.cmd[0]).name} failed: {tail[-1] if tail else f'exit {exc.returncode}'}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    _MOUNTED.add(mountpoint)
    (mountpoint / "lost+found").rmdir()
    return ""


def _unmount(mountpoint: Path) -> None:
    """Unmount, retrying while a dying kernel still holds files; lazily as a last resort."""
    deadline = time.monotonic() + 3
    while True:
        done = subprocess.run(["umount", str(mountpoint)], capture_output=True, timeout=30)
        if done.returncode == 0:
            break
        if time.monotonic() > deadline:
            subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True, timeout=30)
            log.warning("workspace file system %s was busy; detached lazily", mountpoint)
            break
        time.sleep(0.05)
    _MOUNTED.discard(mountpoint)


def _identity(pid: int) -> str:
    """pid and start time: a pid alone may have been reused by another process."""
    try:
        start = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""
    return f"{pid} {start}"


def _mountpoints() -> list[Path]:
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    return [Path(f[1].replace("\\040", " ")) for f in (line.split() for line in lines) if len(f) > 1]


def release_mounts(folder: Path) -> list[Path]:
    """Unmount every workspace file system under `folder`, whoever mounted it; return them.

    For a caller that owns `folder` outright (the runner, holding a session's lock, before it
    removes the session's work area): a workspace whose close was interrupted (a cancelled
    batch) leaves its image mounted, and a mounted folder cannot be removed.
    """
    root = folder.resolve()
    released = [m for m in _mountpoints() if m.name == "work" and m.parent.name.startswith("colabkit-ws-")
                and root in m.parents]
    for mountpoint in released:
        _unmount(mountpoint)
    return released


def _sweep_now_and_then() -> None:
    """`sweep_stale` at this process's first quota, then at most once every `SWEEP_EVERY_S`.

    A sweep reads every mount and every image's owner, so one per workspace made a batch
    opening 64 workspaces at once do 64 x 64 of those reads while the kernels were starting.
    Leftovers come from processes that died, which is rare: a new process sweeps first, and
    a long one catches a neighbour's leftovers within the interval. A sweep under way in
    another thread is not waited for (nothing a new workspace does depends on it).
    """
    global _last_sweep
    if not _SWEEPING.acquire(blocking=False):
        return
    try:
        if _last_sweep is None or time.monotonic() - _last_sweep >= SWEEP_EVERY_S:
            sweep_stale()
            _last_sweep = time.monotonic()
    finally:
        _SWEEPING.release()


def sweep_stale() -> list[Path]:
    """Unmount workspace images whose owning process is gone (it was SIGKILLed); return them."""
    swept: list[Path] = []
    for mountpoint in _mountpoints():
        owner = mountpoint.parent / "workdir.owner"
        if (not mountpoint.parent.name.startswith("colabkit-ws-") or mountpoint.name != "work"
                or mountpoint in _MOUNTED):  # this process's own: its owner runs
            continue
        try:
            recorded = owner.read_text().strip()
        except OSError:
            continue
        pid = recorded.split()[0] if recorded else ""
        if recorded and pid.isdigit() and _identity(int(pid)) == recorded:
            continue  # its owner still runs
        _unmount(mountpoint)
        (mountpoint.parent / "workdir.img").unlink(missing_ok=True)
        owner.unlink(missing_ok=True)
        swept.append(mountpoint)
    return swept


@atexit.register
def _unmount_leftovers() -> None:
    """Workspaces never closed still leave no mount behind (their kernels die first: this
    hook may run before the kernel module's own)."""
    from colabkit.workspace.kernel import kill_leftovers

    kill_leftovers()
    for mountpoint in list(_MOUNTED):
        try:
            _unmount(mountpoint)
        except (OSError, subprocess.SubprocessError):
            continue
