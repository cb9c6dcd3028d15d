"""Warm kernels: forked from a template that already imported the task stack, into the
same bubblewrap sandbox a cold kernel gets.

A cold kernel pays about a CPU-second before its first cell (the interpreter, ipykernel's
imports) and pandas' import again in that cell, and 64 sessions starting together queue
behind that on a few cores. Here one *template* per process (`forkserver.py`, in a sandbox
of its own) imports ipykernel, numpy, pandas, scipy, statsmodels and pyplot once; each kernel start
then costs a bubblewrap sandbox, a small init process in it (the *holder*) and a fork.

What stays as it was, per kernel: the sandbox itself (bubblewrap builds it with the same
arguments: mounts, namespaces, private /tmp, no network), the throw-away uid, the limits,
the environment (reset to the same allow-list), boot.py's own start-up, and the owner-death
and kill guarantees (the sandbox dies with its owner, its init with the sandbox, the kernel
with its init; `SandboxedKernel.kill` still kills the sandbox's process group and the uid).
Nothing passes from one session to the next: the template never runs model code, so every
kernel starts from the same post-import state, with its own /tmp, its own descriptors
(all inherited ones closed) and a fresh numpy seed.

Where a kernel cannot be warmed (not root, not bubblewrap, no uid switch, the template would
not start, or the sandbox's memory limit leaves too little room beside the preloaded
modules), `unavailable` says why and the kernel starts cold; the reason is recorded.
"""

from __future__ import annotations

import json
import math
import os
import select
import socket
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from colabkit.errors import ColabkitError
from colabkit.workspace.isolation import IsolationChoice, Layout, Limits, Sandbox, choose, template_prefix

KernelStart = Literal["auto", "warm", "cold"]
MODE_ENV = "COLABKIT_KERNEL_START"
PRELOAD = (
    # what IPKernelApp.initialize imports (the debugger's debugpy alone is 0.1 CPU-s a kernel)
    "ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.debugger", "IPython.core.debugger",
    "IPython.core.completerlib", "IPython.extensions.storemagic", "tornado.platform.asyncio",
    "IPython.core.oinspect", "IPython.utils.wildcard",
    # what a cell's first traceback imports (IPython's stack_data formatter, its colours)
    "stack_data", "pygments.formatters.terminal256", "IPython.core.logger",
    # the task stack
    "numpy", "pandas", "scipy.stats", "statsmodels.api", "statsmodels.formula.api", "matplotlib.pyplot")
"""What the template imports: what every kernel's start and first traceback import, and the
task stack (measured: a warm kernel then answers after 0.08 CPU-s instead of 0.2, and its
first traceback costs 0.05 CPU-s instead of 0.15; `benchmarks/README.md`).

pyplot, not its backend: importing pyplot builds matplotlib's font list (0.8 CPU-s in a
fresh private /tmp, which every kernel has), while the backend (the kernels' MPLBACKEND,
matplotlib_inline) must load in the kernel, where it hooks into the running IPython
shell to show figures after each cell. A warm kernel's first plotting cell then costs
0.3 CPU-s instead of 1.1; its outputs are the same, but its /tmp holds no font-list cache."""
TEMPLATE_TIMEOUT_S = 180.0
HOLDER_TIMEOUT_S = 60.0
HEADROOM_MB = 256
"""A warm kernel starts with the template's address space; the memory limit must leave this much."""
_FORKSERVER = Path(__file__).with_name("forkserver.py")
_BOOT = Path(__file__).with_name("boot.py")
# The sandbox's init: reaps what is re-parented to it (the kernel, orphans) and reports each
# exit as "<pid inside> <wait status>"; as pid 1 it ignores signals from inside the sandbox.
HOLDER_SOURCE = """
import os, signal
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
os.write(1, b"ready\\n")
while True:
    signal.sigwait({signal.SIGCHLD})
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        os.write(1, b"%d %d\\n" % (pid, status))
"""
_NAMESPACES = ("pid", "net", "ipc", "uts", "cgroup", "mnt")  # pid first, mount last (see forkserver)


class WarmUnavailable(ColabkitError):
    """This kernel cannot be warmed; the message says why (recorded with the cold start)."""


def mode(preference: KernelStart | None = None) -> KernelStart:
    """The kernel start asked for: the argument, else $COLABKIT_KERNEL_START, else auto."""
    chosen = preference or os.environ.get(MODE_ENV, "auto") or "auto"
    if chosen not in ("auto", "warm", "cold"):
        raise ColabkitError(f"unknown kernel start {chosen!r} (from {MODE_ENV}?); use auto, warm or cold")
    return chosen  # type: ignore[return-value]


def unavailable(sandbox: Sandbox) -> str | None:
    """Why a kernel under `sandbox` cannot be warmed on this machine, or None if it can."""
    if sandbox.level != "bubblewrap":
        return f"isolation level {sandbox.level} (warm kernels need bubblewrap)"
    if os.geteuid() != 0:
        return "not root: entering a sandbox's namespaces needs CAP_SYS_ADMIN"
    if sandbox.uid is None:
        return "the kernel cannot leave root here, and a forked kernel must"
    return None


def may_warm(sandbox: Sandbox) -> bool:
    """Whether a kernel under `sandbox` can be warm: possible here and this process's
    template has not failed (a failure is kept; a template not started yet may still)."""
    return unavailable(sandbox) is None and sandbox.python() not in _FAILED


class Template:
    """The template process (`forkserver.py` under bubblewrap) and its channel."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self._lock = threading.Lock()
        self._log = tempfile.TemporaryFile(prefix="colabkit-template-")  # unlinked: a kill leaves no file
        host, inside = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._channel = host
        config = {"preload": list(PRELOAD)}
        layout = Layout(Path("/"), Path("/"), Path("/"), Path("/"))  # only the inside paths matter
        cmd = [*template_prefix(), sandbox.python(), "-c", _FORKSERVER.read_text(),
               json.dumps(config), _BOOT.read_text()]
        started = time.monotonic()
        self.proc = subprocess.Popen(cmd, env=sandbox.env(layout), stdin=inside.fileno(), stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        inside.close()
        try:
            ready = self._receive(TEMPLATE_TIMEOUT_S)
        except BaseException:
            self.close()
            raise
        self.ready_s = time.monotonic() - started
        self.preloaded: list[str] = ready.get("preloaded", [])
        self.import_cpu_s: float = ready.get("import_cpu_s", 0.0)
        self.memory_mb: int = ready.get("vm_kb", 0) // 1024

    def _receive(self, timeout: float) -> dict[str, Any]:
        ready = readable(self._channel.fileno(), timeout)
        data = self._channel.recv(1 << 20) if ready else b""
        if not data:
            self._log.seek(0)
            tail = self._log.read().decode(errors="replace").strip().splitlines()[-3:]
            raise WarmUnavailable("the kernel template " + ("did not answer" if not ready else "exited")
                                  + (f": {' | '.join(tail)}" if tail else ""))
        return json.loads(data)

    def fork(self, request: dict[str, Any], fds: list[int]) -> int:
        """Fork a kernel into the sandbox the descriptors belong to; its pid inside."""
        with self._lock:
            if self.proc.poll() is not None:
                raise WarmUnavailable(f"the kernel template exited ({self.proc.returncode})")
            socket.send_fds(self._channel, [json.dumps(request).encode()], fds)
            answer = self._receive(HOLDER_TIMEOUT_S)
        if "error" in answer:
            raise WarmUnavailable(f"the template could not fork a kernel: {answer['error']}")
        return int(answer["nspid"])

    def close(self) -> None:
        self._channel.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._log.close()


_TEMPLATES: dict[str, Template] = {}
_FAILED: dict[str, str] = {}
_STARTING = threading.Lock()
# The template's bubblewrap dies with the thread that started it (its parent-death signal
# follows the thread), so templates are started by one thread that lives as long as the process.
_STARTER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="colabkit-template")


def template(sandbox: Sandbox) -> Template:
    """This process's template, started on first use (blocking); a failed start is kept."""
    return _STARTER.submit(_template, sandbox).result()


def prestart(isolation: IsolationChoice = "auto", preference: KernelStart | None = None) -> None:
    """Start this process's template in the background, where kernels will be warm.

    A batch calls it before its sessions open their workspaces, so the template's imports
    run while the first model requests are out; never raises (a failure shows at the start).
    """
    if mode(preference) == "cold":
        return

    def begin() -> None:
        try:
            sandbox, _ = choose(isolation)
            if unavailable(sandbox) is None:
                _template(sandbox)
        except (ColabkitError, OSError):
            pass

    _STARTER.submit(begin)


def _template(sandbox: Sandbox) -> Template:
    key = sandbox.python()
    with _STARTING:
        if key in _FAILED:
            raise WarmUnavailable(_FAILED[key])
        found = _TEMPLATES.get(key)
        if found is not None and found.proc.poll() is None:
            return found
        try:
            _TEMPLATES[key] = Template(sandbox)
        except (OSError, WarmUnavailable) as exc:
            _FAILED[key] = str(exc) if isinstance(exc, WarmUnavailable) else f"the kernel template failed: {exc}"
            raise WarmUnavailable(_FAILED[key]) from exc
        return _TEMPLATES[key]


def shutdown_templates() -> None:
    """Stop this process's templates (their kernels do not depend on them)."""
    with _STARTING:
        for found in _TEMPLATES.values():
            found.close()
        _TEMPLATES.clear()
        _FAILED.clear()


class WarmProcess:
    """A warm kernel as `SandboxedKernel` drives it, in place of a `subprocess.Popen`.

    `pid` is the sandbox's (bubblewrap's) process group leader, which `kill` and the
    process-group kill target exactly as for a cold kernel; `poll` is the kernel's own exit,
    reported by the sandbox's init, as an exit code (negative for a signal).
    """

    exact_status = True

    def __init__(self, holder: subprocess.Popen, holder_pid: int, pipe: int, nspid: int, template_mb: int) -> None:
        self._holder, self._pipe, self._nspid = holder, pipe, nspid
        self.pid = holder.pid
        self.holder_pid = holder_pid
        self.template_mb = template_mb
        self.returncode: int | None = None
        self._pending = b""

    def poll(self) -> int | None:
        if self.returncode is not None:
            return self.returncode
        self._read_reports()
        if self.returncode is None and self._holder.poll() is not None:
            self.returncode = -9  # the sandbox is gone, and the kernel with it
        return self.returncode

    def _read_reports(self) -> None:
        while True:
            if self._pipe < 0:
                return
            try:
                chunk = os.read(self._pipe, 4096)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                return
            self._pending += chunk
            *lines, self._pending = self._pending.split(b"\n")
            for line in lines:
                pid, status = (int(part) for part in line.split())
                if pid == self._nspid:  # not the short-lived fork that made it, nor orphans
                    self.returncode = os.waitstatus_to_exitcode(status)

    def group_running(self) -> bool:
        """Whether the sandbox (bubblewrap, its init, the kernel) may still run."""
        return self._holder.poll() is None

    def wait(self, timeout: float | None = None) -> int:
        code = self._holder.wait(timeout)
        self.poll()
        if self._pipe >= 0:
            os.close(self._pipe)
            self._pipe = -1
        return self.returncode if self.returncode is not None else code

    def kill(self) -> None:
        self._holder.kill()

    def kernel_pid(self) -> int | None:
        """The kernel's host pid (the sandbox init's child), while it runs."""
        try:
            children = Path(f"/proc/{self.holder_pid}/task/{self.holder_pid}/children").read_text().split()
        except OSError:
            return None
        return int(children[0]) if children else None


def start(sandbox: Sandbox, layout: Layout, limits: Limits, config: dict[str, Any], log_path: Path) -> WarmProcess:
    """Build the session's sandbox around a holder and fork a kernel into it (blocking).

    Raises `WarmUnavailable` (with nothing left running) where it cannot; the caller then
    starts the kernel cold.
    """
    why = unavailable(sandbox)
    if why:
        raise WarmUnavailable(why)
    found = template(sandbox)
    if found.memory_mb + HEADROOM_MB > limits.memory_mb:
        raise WarmUnavailable(f"the template's preloaded modules take {found.memory_mb} MB of the kernel's "
                              f"{limits.memory_mb} MB address-space limit")
    info_read, info_write = os.pipe()
    with open(log_path, "ab") as log:
        holder = subprocess.Popen(
            ["bwrap", "--info-fd", str(info_write), *sandbox.holder_command(layout, limits, HOLDER_SOURCE)[1:]],
            env=sandbox.env(layout), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
            cwd=layout.workdir, start_new_session=True, pass_fds=(info_write,))
    os.close(info_write)
    assert holder.stdout is not None
    pipe = os.dup(holder.stdout.fileno())
    holder.stdout.close()
    try:
        holder_pid = _holder_pid(info_read)
        _wait_line(pipe, b"ready\n", holder)
        os.set_blocking(pipe, False)
        fds = [os.open(f"/proc/{holder_pid}/ns/{ns}", os.O_RDONLY) for ns in _NAMESPACES]
        fds.append(os.open(f"/proc/{holder_pid}/root", os.O_RDONLY | os.O_DIRECTORY))
        fds.append(os.open(log_path, os.O_WRONLY | os.O_APPEND))
        try:
            nspid = found.fork({"config": config, "env": sandbox.env(layout)}, fds)
        finally:
            for fd in fds:
                os.close(fd)
    except BaseException:
        os.close(pipe)
        holder.kill()
        holder.wait()
        raise
    finally:
        os.close(info_read)
    return WarmProcess(holder, holder_pid, pipe, nspid, found.memory_mb)


def readable(fd: int, timeout: float) -> bool:
    """Whether `fd` has data (or its end) within `timeout` seconds.

    poll, not select: a batch's process holds well over 1,024 descriptors (64 sessions'
    zmq sockets), and select refuses a descriptor numbered past that.
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(math.ceil(max(0.0, timeout) * 1000)))


def _holder_pid(info_fd: int) -> int:
    """The host pid of the sandbox's init, from bubblewrap's --info-fd JSON."""
    data = b""
    deadline = time.monotonic() + HOLDER_TIMEOUT_S
    while b"}" not in data:
        chunk = os.read(info_fd, 4096) if readable(info_fd, deadline - time.monotonic()) else b""
        if not chunk:
            raise WarmUnavailable(f"bubblewrap gave no sandbox pid ({data[:200]!r})")
        data += chunk
    return int(json.loads(data)["child-pid"])


def _wait_line(fd: int, line: bytes, holder: subprocess.Popen) -> None:
    """Wait until the holder runs (its sandbox is then complete: mounts, root, namespaces)."""
    data = b""
    deadline = time.monotonic() + HOLDER_TIMEOUT_S
    while not data.startswith(line):
        chunk = os.read(fd, 64) if readable(fd, deadline - time.monotonic()) else b""
        if not chunk:
            raise WarmUnavailable(f"the warm kernel's sandbox did not start (bubblewrap {holder.poll()})")
        data += chunk
