"""How the kernel is confined: detection, the bubblewrap command, the environment, the limits.

Model-written code must not reach the network, API keys, the host's files or the original
data, and must not exhaust the machine.  The strongest mechanism available is chosen once
per process (a trial run proves it works, rather than trusting that a binary exists) and
recorded in an `IsolationReport`, so every session says how it was protected:

* ``bubblewrap`` (Linux): new pid, network, ipc and uts namespaces (no network at all, not
  even loopback to the host), a root file system made only of read-only system dirs and
  the Python installation, the working folder read-write, the data copy read-only, a
  size-limited private /tmp.  The repository, the user's home and the original data are
  not mounted.  The kernel talks to the host over unix sockets in one bound folder.
* ``rlimits-only``: everything else still applies (allow-listed environment, resource
  limits, a throw-away user id when the suite runs as root), but files and network are
  the host's.  This is announced on stderr and in the report.

When the suite runs as root, the kernel switches to a fresh unprivileged user id before
any model code runs: root is exempt from RLIMIT_NPROC and ignores file permissions, so
without the switch the process limit and read-only files would not bind.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, PositiveFloat, PositiveInt

from colabkit.errors import ColabkitError
from colabkit.workspace.processes import fresh_uid, kill_uid, user_task_count

log = logging.getLogger("colabkit.workspace")

IsolationChoice = Literal["auto", "bubblewrap", "rlimits-only"]

# Fixed paths inside the bubblewrap sandbox: the kernel never learns host paths.
SANDBOX_WORKDIR = "/workspace"
SANDBOX_IPC = "/run/colabkit"
SANDBOX_VENV = "/opt/venv"
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
_BOOT_SOURCE = Path(__file__).with_name("boot.py")
# Names that must never reach the kernel, whatever a future edit adds to the allow-list.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE", re.IGNORECASE)
_PASSTHROUGH = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
_TRIALS = threading.Lock()  # workspaces open in worker threads: one trial per candidate, not one per thread


class Limits(BaseModel):
    """Resource limits for one workspace kernel.

    Memory, CPU and file size are per process; CPU time accumulates over one kernel's life
    (a restart resets it).  `max_processes` counts threads too.  `interrupt_grace_s` is how
    long a timed-out cell may take to honour the interrupt before the kernel is restarted;
    `tmp_mb` sizes the sandbox's private in-memory /tmp and /dev/shm; `disk_mb` caps the
    total the workspace may write into its working folder (see `quota`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    cell_timeout_s: PositiveFloat = 60
    memory_mb: PositiveInt = 2048
    cpu_s: PositiveInt = 600
    max_processes: PositiveInt = 256
    file_size_mb: PositiveInt = 200
    output_chars: PositiveInt = 8000
    interrupt_grace_s: PositiveFloat = 5
    tmp_mb: PositiveInt = 512
    disk_mb: PositiveInt = 1024


class IsolationReport(BaseModel):
    """What actually confines the kernel, recorded with every session."""

    model_config = ConfigDict(frozen=True)

    level: str
    network_isolated: bool
    data_read_only: bool
    env_allowlisted: bool
    host_files_hidden: bool = False
    pid_namespace: bool = False
    kernel_uid: int | None = None
    rlimits: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    disk_quota_mb: int | None = None
    disk_quota_enforced_by: str | None = None  # "filesystem" or "checked"
    kernel_start: Literal["warm", "cold"] | None = None
    """How the session's first kernel started: "warm" (forked from the template that had
    imported the task stack, into this same sandbox; see `warm`) or "cold" (its own
    interpreter); None in snapshots written before warm kernels."""
    kernel_start_note: str = ""
    """Why a kernel that could have been warm started cold ("" when warm, or cold by choice)."""


@dataclass(frozen=True)
class Layout:
    """Host folders of one workspace and where the kernel sees them."""

    workdir: Path
    datadir: Path
    ipcdir: Path
    tmpdir: Path


@dataclass(frozen=True)
class Sandbox:
    """A resolved way to launch the kernel: prefix command, identity and inside paths."""

    level: str
    uid: int | None

    def inside(self, layout: Layout) -> tuple[str, str, str]:
        """(workdir, ipc dir, tmp dir) as the kernel sees them."""
        if self.level == "bubblewrap":
            return SANDBOX_WORKDIR, SANDBOX_IPC, "/tmp"
        return str(layout.workdir), str(layout.ipcdir), str(layout.tmpdir)

    def command(self, layout: Layout, limits: Limits, boot_args: list[str]) -> list[str]:
        """The full argv that starts `boot.py` (and then the kernel) under this sandbox."""
        prefix = _bwrap_prefix(layout, limits, switch_uid=self.uid is not None) \
            if self.level == "bubblewrap" else []
        return [*prefix, self.python(), "-c", _BOOT_SOURCE.read_text(), *boot_args]

    def holder_command(self, layout: Layout, limits: Limits, holder_source: str) -> list[str]:
        """The argv of a warm kernel's sandbox: the same bubblewrap sandbox as `command`,
        whose init runs `holder_source` until the template forks the kernel into it."""
        return [*_bwrap_prefix(layout, limits, switch_uid=False, holder=True),
                self.python(), "-I", "-S", "-c", holder_source]

    def python(self) -> str:
        """The suite's own interpreter, as the kernel sees it (a venv is mounted at /opt/venv)."""
        if self.level == "bubblewrap" and sys.prefix != sys.base_prefix:
            # abspath, not resolve: normalise `tests/../.venv/bin/python` without leaving the venv
            exe = Path(os.path.abspath(sys.executable)).relative_to(os.path.abspath(sys.prefix))
            return str(Path(SANDBOX_VENV) / exe)
        return sys.executable

    def env(self, layout: Layout) -> dict[str, str]:
        """The kernel's whole environment, built from an allow-list."""
        workdir, _, tmp = self.inside(layout)
        path_dirs = [str(Path(self.python()).parent), "/usr/local/bin", "/usr/bin", "/bin"]
        return kernel_env(home=workdir, tmp=tmp, path=":".join(path_dirs))


def kernel_env(*, home: str, tmp: str, path: str, parent: dict[str, str] | None = None) -> dict[str, str]:
    """Build the kernel environment from scratch: nothing is inherited but locale and zone.

    Caches and profiles go to the private tmp so the working folder only holds what the
    participants' code creates (that folder is listed in the snapshot).
    """
    parent = dict(os.environ) if parent is None else parent
    env = {name: parent[name] for name in _PASSTHROUGH if name in parent}
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        PATH=path, HOME=home, TMPDIR=tmp, USER="sandbox", LOGNAME="sandbox",
        MPLBACKEND="module://matplotlib_inline.backend_inline",  # headless (Agg) + display_data
        MPLCONFIGDIR=f"{tmp}/matplotlib", IPYTHONDIR=f"{tmp}/ipython",
        JUPYTER_RUNTIME_DIR=f"{tmp}/jupyter", XDG_CACHE_HOME=f"{tmp}/cache",
        XDG_CONFIG_HOME=f"{tmp}/config", PYTHONHASHSEED="0", PYTHONNOUSERSITE="1",
        PYTHONDONTWRITEBYTECODE="1", PYDEVD_DISABLE_FILE_VALIDATION="1",
        OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
        NUMEXPR_MAX_THREADS="1", MALLOC_ARENA_MAX="2",
    )
    leaked = sorted(name for name in env if _SECRET_NAME.search(name))
    if leaked:
        raise ColabkitError(f"kernel environment would carry secret-like variables: {leaked}")
    return env


def rlimits(limits: Limits, *, extra_processes: int = 0) -> dict[str, list[int]]:
    """Soft/hard pairs for `resource.setrlimit`, keyed by the constant's name.

    The CPU hard limit sits a little above the soft one so the kernel first gets SIGXCPU.
    `extra_processes` lifts RLIMIT_NPROC by the tasks the same user already runs, for the
    one case where the count is shared with the host (non-root, no user namespace).
    """
    mib = 1024 * 1024
    nproc = limits.max_processes + extra_processes
    return {
        "RLIMIT_AS": [limits.memory_mb * mib] * 2,
        "RLIMIT_CPU": [limits.cpu_s, limits.cpu_s + 5],
        "RLIMIT_NPROC": [nproc, nproc],
        "RLIMIT_FSIZE": [limits.file_size_mb * mib] * 2,
        "RLIMIT_CORE": [0, 0],
    }


def _system_binds() -> list[tuple[str, str, str]]:
    """Read-only system folders, the Python installation and the venv (at a neutral path)."""
    binds: list[tuple[str, str, str]] = [("--ro-bind-try", d, d) for d in _SYSTEM_DIRS]
    for prefix in {Path(sys.base_prefix).resolve(), Path(sys.base_exec_prefix).resolve()}:
        if not _under(prefix, _SYSTEM_DIRS):
            binds.append(("--ro-bind", str(prefix), str(prefix)))
    if sys.prefix != sys.base_prefix:  # a venv: mount it at a neutral path, not the repo's
        binds.append(("--ro-bind", str(Path(sys.prefix).resolve()), SANDBOX_VENV))
    real_exe = Path(sys.executable).resolve()
    if not any(_under(real_exe, (src,)) for _, src, _ in binds):
        binds.append(("--ro-bind", str(real_exe.parent), str(real_exe.parent)))
    return binds


def _mounts(binds: list[tuple[str, str, str]], extra_dirs: list[str]) -> list[str]:
    args: list[str] = []
    for ancestor in _ancestors([dest for _, _, dest in binds] + extra_dirs):
        args += ["--perms", "0755", "--dir", ancestor]
    for flag, src, dest in binds:
        args += [flag, src, dest]
    return args


def _bwrap_prefix(layout: Layout, limits: Limits, *, switch_uid: bool, holder: bool = False) -> list[str]:
    """bubblewrap arguments that mount only what the kernel needs, ending in "--".

    `holder`: the sandbox of a warm kernel (see `warm`), identical but for its first
    process, which is not the kernel but the sandbox's init (`--as-pid-1`): a root process
    without capabilities that waits for the kernel the template forks into it.
    """
    args = ["bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
            "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if holder:
        args.append("--as-pid-1")
    if os.geteuid() == 0:  # bubblewrap run by root keeps every capability unless told
        args += ["--cap-drop", "ALL"]
    if switch_uid and not holder:  # only what boot.py needs to leave root; the switch clears them again
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    args += _mounts(_system_binds(), [SANDBOX_WORKDIR, SANDBOX_IPC])
    size = str(limits.tmp_mb * 1024 * 1024)
    args += ["--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", size, "--tmpfs", "/tmp",
             "--perms", "1777", "--size", size, "--tmpfs", "/dev/shm",
             "--bind", str(layout.workdir), SANDBOX_WORKDIR,
             "--ro-bind", str(layout.datadir), f"{SANDBOX_WORKDIR}/data",
             "--bind", str(layout.ipcdir), SANDBOX_IPC,
             "--chdir", SANDBOX_WORKDIR, "--"]
    return args


def template_prefix() -> list[str]:
    """bubblewrap arguments for the kernel template (see `forkserver`): the kernels' system
    folders and venv at the same paths, a private /tmp, no network; no working folder or
    data. It stays in the host's pid namespace and keeps root's capabilities, which its
    children need to enter a session's sandbox before they drop them for good."""
    return ["bwrap", "--die-with-parent", "--new-session", "--unshare-net", "--unshare-ipc",
            "--unshare-uts", "--hostname", "sandbox", *_mounts(_system_binds(), []),
            "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(64 * 1024 * 1024),
            "--tmpfs", "/tmp", "--chdir", "/", "--"]


def _under(path: Path, roots: tuple[str, ...]) -> bool:
    return any(path == Path(r) or Path(r) in path.parents for r in roots)


def _ancestors(dests: list[str]) -> list[str]:
    """Parent dirs bubblewrap would otherwise create with mode 0700 (unreadable after the uid switch)."""
    out: list[str] = []
    for dest in dests:
        for parent in reversed(Path(dest).parents):
            p = str(parent)
            if p != "/" and p not in out and p not in dests:
                out.append(p)
    return out


def choose(preference: IsolationChoice = "auto") -> tuple[Sandbox, tuple[str, ...]]:
    """Pick the strongest working sandbox (trial-run, cached per process); notes say why.

    As root the kernel should also leave root; if that fails (the Python installation is
    not readable by other users, say) the same level is kept without the switch, noted.
    """
    if preference not in ("auto", "bubblewrap", "rlimits-only"):
        raise ColabkitError(f"unknown isolation {preference!r}; use auto, bubblewrap or rlimits-only")
    root = os.geteuid() == 0
    notes: list[str] = []
    levels = ["bubblewrap"] if preference == "bubblewrap" else \
        ["rlimits-only"] if preference == "rlimits-only" else ["bubblewrap", "rlimits-only"]
    for level in levels:
        with _TRIALS:
            ok, why = _trial(level, root)
        if ok:
            return Sandbox(level, fresh_uid() if root else None), tuple(notes)
        if root:
            with _TRIALS:
                ok_as_root, why_as_root = _trial(level, False)
            if ok_as_root:
                notes.append(f"could not switch the kernel to an unprivileged uid ({why}; is the "
                             "Python installation readable by other users?); it runs as root")
                return Sandbox(level, None), tuple(notes)
            why = why_as_root
        if level == "bubblewrap":
            if preference == "bubblewrap":
                raise ColabkitError(f"bubblewrap isolation requested but unavailable: {why}")
            notes.append(f"bubblewrap unavailable ({why})")
    raise ColabkitError(f"the workspace kernel cannot start on this machine: {why}")


@functools.cache
def _trial(level: str, drop_uid: bool) -> tuple[bool, str]:
    """Start boot.py in probe mode under the candidate sandbox; (works, reason if not)."""
    if level == "bubblewrap":
        if not sys.platform.startswith("linux"):
            return False, f"platform {sys.platform}"
        if shutil.which("bwrap") is None:
            return False, "bwrap not found on PATH"
    with tempfile.TemporaryDirectory(prefix="colabkit-probe-") as tmp:
        Path(tmp).chmod(0o711)
        layout = _probe_layout(Path(tmp))
        sandbox = Sandbox(level, fresh_uid() if drop_uid else None)
        if sandbox.uid is not None:
            for d in (layout.workdir, layout.ipcdir, layout.tmpdir):
                os.chown(d, sandbox.uid, sandbox.uid)
        cmd = sandbox.command(layout, Limits(), [json.dumps(boot_config(sandbox, layout, Limits(), probe=True))])
        try:
            proc = subprocess.run(cmd, env=sandbox.env(layout), capture_output=True, text=True,
                                  timeout=120, cwd=layout.workdir, start_new_session=True)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"trial run failed: {exc}"
        finally:
            if sandbox.uid is not None:
                kill_uid(sandbox.uid)
    if proc.returncode != 0 or "colabkit-probe-ok" not in proc.stdout:
        tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return False, f"trial run failed: {tail[:200]}"
    return True, ""


def _probe_layout(base: Path) -> Layout:
    layout = Layout(base / "work", base / "work" / "data", base / "ipc", base / "tmp")
    for d in (layout.workdir, layout.datadir, layout.ipcdir, layout.tmpdir):
        d.mkdir(parents=True, exist_ok=True)
    return layout


def boot_config(sandbox: Sandbox, layout: Layout, limits: Limits, *, probe: bool = False) -> dict:
    """The JSON handed to boot.py: identity, limits, paths and the kernel-side output cap."""
    workdir, ipc, _ = sandbox.inside(layout)
    shares_count = sandbox.uid is None and sandbox.level != "bubblewrap"
    extra = user_task_count(os.getuid()) if shares_count else 0
    return {
        "uid": sandbox.uid, "workdir": workdir, "connection_file": f"{ipc}/kernel.json",
        "rlimits": rlimits(limits, extra_processes=extra), "output_chars": limits.output_chars,
        "probe": probe,
    }


def report(sandbox: Sandbox, limits: Limits, notes: tuple[str, ...], *,
           disk: tuple[str, str] | None = None) -> IsolationReport:
    """Describe the chosen sandbox; weak isolation is also announced on stderr (once per reason).

    `disk` is the workspace's quota as (enforcement, one-line description).
    """
    boxed = sandbox.level == "bubblewrap"
    dropped = sandbox.uid is not None
    lines = list(notes)
    if boxed:
        lines.append("own network namespace (no network, not even loopback to the host); "
                     "repository, home and original data are not mounted; /tmp is private")
        lines.append(f"Python installation visible read-only at {Path(sys.base_prefix).resolve()}")
    else:
        lines.append("WEAK ISOLATION: the kernel shares the host's network and file system")
    if dropped:
        lines.append(f"kernel runs as unprivileged uid {sandbox.uid}, so RLIMIT_NPROC and file "
                     "permissions bind")
    elif os.geteuid() == 0:
        lines.append("kernel runs as root: RLIMIT_NPROC does not bind root")
    lines.append("RLIMIT_AS caps virtual memory per process; RLIMIT_FSIZE caps each file")
    if disk is not None:
        lines.append(disk[1])
    names = tuple(f"{k}={v[0]}" for k, v in rlimits(limits).items())
    rep = IsolationReport(
        level=sandbox.level, network_isolated=boxed, data_read_only=boxed or dropped,
        env_allowlisted=True, host_files_hidden=boxed, pid_namespace=boxed,
        kernel_uid=sandbox.uid, rlimits=names, notes=tuple(lines),
        disk_quota_mb=limits.disk_mb if disk else None, disk_quota_enforced_by=disk[0] if disk else None)
    if not boxed:
        _announce("colabkit: WEAK kernel isolation (rlimits-only): model code shares the host's "
                  "network and files; only the environment allow-list and resource limits apply"
                  + "".join(f"; {note}" for note in notes))
    return rep


@functools.cache
def _announce(message: str) -> None:
    """Say it once per process on screen (stderr) and in the log."""
    print(message, file=sys.stderr)
    log.info(message)
