"""One sandboxed IPython kernel and the client that drives it, cell by cell.

The process is launched directly (not through a KernelManager) because the sandbox owns
the command line: bubblewrap wraps it, boot.py runs first, and signals to the outer
process would not reach the kernel inside its pid namespace.  Consequences:

* transport is IPC (unix sockets in one folder bound into the sandbox, seen there under
  another path), since the kernel has no network namespace in common with the host;
* interrupts use Jupyter's message mode (interrupt_request on the control channel, which
  ipykernel serves on its own thread), escalating to a kill when the kernel stays busy;
* liveness is the process itself (bubblewrap exits with the kernel), so a death is seen
  within 0.1 s instead of after heartbeat timeouts;
* every zmq socket refuses frames over `MAX_MESSAGE_BYTES`, so one huge message from the
  kernel cannot blow up the host's memory (boot.py already caps ordinary printing); zmq
  drops the connection when that happens, so the client is then rebuilt.

A kernel never outlives its owner: close() kills the process group (and every process of
the throw-away uid), bubblewrap and boot.py die with their parent, and an atexit hook
kills kernels whose workspace was never closed.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import json
import logging
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from queue import Empty
from typing import Any, Literal, TypeVar

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient

from colabkit.errors import ColabkitError
from colabkit.workspace import slots, warm
from colabkit.workspace.isolation import Layout, Limits, Sandbox, boot_config
from colabkit.workspace.output import OutputCollector
from colabkit.workspace.processes import kill_uid

log = logging.getLogger("colabkit.workspace")
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
START_TIMEOUT_S = 60.0
IDLE_GRACE_S = 1.0  # after the reply, how long to wait for the trailing 'idle' on IOPub
_POLL_MS = 100
_LIVE: set[SandboxedKernel] = set()  # started and not yet shut down
_BLOCKING = ThreadPoolExecutor(max_workers=8, thread_name_prefix="colabkit-workspace")
_WARM_STARTS = ThreadPoolExecutor(max_workers=slots.WARM_STARTS_AT_ONCE, thread_name_prefix="colabkit-warm-start")
"""Warm starts wait most of their time (the sandbox, the template's fork): in threads of their
own, a workspace's quick steps (its folders, mount and data copy) never queue behind them."""
T = TypeVar("T")
_SIGNAL_HINTS = {
    "SIGSEGV": "segmentation fault",
    "SIGKILL": "out of memory, or a hard limit",
    "SIGXCPU": "CPU-time limit reached",
    "SIGABRT": "aborted (often a failed allocation under the memory limit)",
    "SIGBUS": "bus error",
}


@dataclass(frozen=True)
class Outcome:
    """How one execution ended at the kernel level (outputs are in the collector)."""

    status: Literal["ok", "error", "timeout", "died"]
    interrupted: bool = False  # timeout only: the interrupt worked and state survived
    detail: str = ""


class SandboxedKernel:
    """An ipykernel process under a `Sandbox`, with a client on unix sockets."""

    def __init__(self, sandbox: Sandbox, layout: Layout, limits: Limits, log_path: Path,
                 start_mode: warm.KernelStart = "auto"):
        self.sandbox = sandbox
        self.layout = layout
        self.limits = limits
        self.log_path = log_path
        self.start_mode = start_mode
        self.provenance: Literal["warm", "cold"] | None = None
        """How the running kernel started: forked from the template, or its own interpreter."""
        self.cold_reason = ""
        """Why the last start was cold although warm starts were allowed ("" otherwise)."""
        self._proc: subprocess.Popen | warm.WarmProcess | None = None
        self._client: AsyncKernelClient | None = None
        self._context: zmq.asyncio.Context | None = None
        self._info: dict = {}

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def expected_start(self) -> Literal["warm", "cold"]:
        """How the next start will most likely go (for its start slot): warm where allowed
        and this process's template has not failed."""
        if self.start_mode == "cold" or not warm.may_warm(self.sandbox):
            return "cold"
        return "warm"

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        """Launch the kernel (warm where allowed and possible, else cold) and wait until both
        shell and IOPub answer. A warm kernel that fails to come up is replaced by a cold one."""
        self.cold_reason = ""
        if self.start_mode != "cold":
            try:
                await self._launch(warm=True)
                return
            except warm.WarmUnavailable as exc:
                if self.start_mode == "warm":
                    raise
                self.cold_reason = str(exc)
            except ColabkitError as exc:  # forked, but it never answered: cold is the fallback
                if self.start_mode == "warm":
                    raise
                self.cold_reason = f"the warm kernel did not start ({exc})"
        await self._launch(warm=False)

    async def _launch(self, *, warm: bool) -> None:
        self._clear_sockets()
        self._info = {"transport": "ipc", "shell_port": 1, "iopub_port": 2, "stdin_port": 3,
                      "control_port": 4, "hb_port": 5, "key": secrets.token_hex(32),
                      "signature_scheme": "hmac-sha256", "kernel_name": ""}
        _, ipc_inside, _ = self.sandbox.inside(self.layout)
        conn = self.layout.ipcdir / "kernel.json"
        conn.write_text(json.dumps({**self._info, "ip": f"{ipc_inside}/k"}))
        conn.chmod(0o600)
        if self.sandbox.uid is not None:
            os.chown(conn, self.sandbox.uid, self.sandbox.uid)
        config = boot_config(self.sandbox, self.layout, self.limits)
        if warm:
            self._proc = await blocking(_start_warm, self.sandbox, self.layout, self.limits, config,
                                        self.log_path, undo=_discard_warm, pool=_WARM_STARTS)
        else:
            cmd = self.sandbox.command(self.layout, self.limits, [json.dumps(config)])
            with open(self.log_path, "ab") as log:
                self._proc = subprocess.Popen(
                    cmd, env=self.sandbox.env(self.layout), stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, cwd=self.layout.workdir, start_new_session=True)
        self.provenance = "warm" if warm else "cold"
        _LIVE.add(self)
        try:
            await self._connect()
        except BaseException:
            await self.shutdown()
            raise

    async def _connect(self) -> None:
        """(Re)create the client on a fresh zmq context and wait for both channels."""
        self.disconnect()
        self._context = zmq.asyncio.Context()
        self._context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        self._client = AsyncKernelClient(context=self._context)
        self._client.load_connection_info({**self._info, "ip": str(self.layout.ipcdir / "k")})
        self._client.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=True)
        await self._wait_ready()

    def disconnect(self) -> None:
        """Close this side's sockets (on the event loop they belong to; before `stop`)."""
        if self._client is not None:
            self._client.stop_channels()
            self._client = None
        if self._context is not None:
            self._context.destroy(linger=0)
            self._context = None

    async def _wait_ready(self) -> None:
        """Ask for kernel_info until it is answered and IOPub has delivered something."""
        assert self._client is not None and self._proc is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        replied = heard = False
        while not (replied and heard):
            if self._proc.poll() is not None:
                raise ColabkitError(f"workspace kernel failed to start: it {self._describe_exit()}; "
                                    f"see {self.log_path}")
            if time.monotonic() > deadline:
                raise ColabkitError(f"workspace kernel did not start within {START_TIMEOUT_S:.0f} s; "
                                    f"see {self.log_path}")
            self._client.kernel_info()
            try:
                msg = await self._client.get_shell_msg(timeout=0.5)
                replied = replied or msg["msg_type"] == "kernel_info_reply"
            except Empty:
                pass
            try:
                await self._client.get_iopub_msg(timeout=0.2 if replied else 0)
                heard = True
            except Empty:
                pass

    async def restart(self) -> None:
        await self.shutdown()
        await self.start()

    async def shutdown(self) -> None:
        """Kill the kernel (no graceful shutdown: its state is being discarded anyway).

        The kill runs in a worker thread: it waits for the throw-away uid's last processes
        (up to seconds while a pid namespace is torn down), which must not stall the
        event loop every other session of a batch runs on.
        """
        self.disconnect()
        await blocking(self.stop)

    def stop(self) -> None:
        """Kill the kernel, reap it and clear its sockets (blocking: run it in a worker thread)."""
        self.kill()
        _LIVE.discard(self)
        if self._proc is not None:
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                log.warning("workspace kernel %s did not exit after SIGKILL", self._proc.pid)
        self._clear_sockets()

    def kill(self) -> None:
        """SIGKILL the process group and any process left under the kernel's uid (sync)."""
        proc = self._proc
        if proc is not None and (proc.group_running() if isinstance(proc, warm.WarmProcess) else proc.poll() is None):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                proc.kill()
        if self.sandbox.uid is not None:
            kill_uid(self.sandbox.uid)

    def _clear_sockets(self) -> None:
        for stale in self.layout.ipcdir.glob("k-*"):
            stale.unlink(missing_ok=True)

    # -- execution ---------------------------------------------------------------------
    async def execute(self, code: str, sink: OutputCollector, *, timeout: float,
                      silent: bool = False) -> Outcome:
        """Run one cell; feed its outputs to `sink`; interrupt at `timeout`."""
        client = self._client
        if client is None or not self.alive:
            return Outcome("died", detail=self._describe_exit())
        msg_id = client.execute(code, silent=silent, store_history=not silent,
                                allow_stdin=False, stop_on_error=False)
        try:
            return await self._await_cell(msg_id, sink, timeout)
        except asyncio.CancelledError:  # the caller gave up: do not leave the cell running
            self.interrupt()
            raise

    async def _await_cell(self, msg_id: str, sink: OutputCollector, timeout: float) -> Outcome:
        client = self._client
        assert client is not None
        poller = zmq.asyncio.Poller()
        poller.register(client.iopub_channel.socket, zmq.POLLIN)
        poller.register(client.shell_channel.socket, zmq.POLLIN)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        reply: dict | None = None
        idle = False
        interrupted_at: float | None = None
        reply_at = 0.0
        while reply is None or not idle:
            now = loop.time()
            if reply is not None and now > reply_at + IDLE_GRACE_S:
                sink.lost = True  # zmq dropped IOPub over an oversized message: reconnect
                await self._reconnect()
                break
            if not self.alive:
                await self._drain_iopub(msg_id, sink)
                return Outcome("died", detail=self._describe_exit())
            if reply is None and interrupted_at is None and now >= deadline:
                self.interrupt()
                interrupted_at = now
            elif reply is None and interrupted_at is not None and \
                    now >= interrupted_at + self.limits.interrupt_grace_s:
                return Outcome("timeout", interrupted=False, detail="the kernel ignored the interrupt")
            await poller.poll(_POLL_MS)
            idle = await self._drain_iopub(msg_id, sink) or idle
            while reply is None and await client.shell_channel.msg_ready():
                msg = await client.get_shell_msg(timeout=0)
                if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_reply":
                    reply, reply_at = msg["content"], loop.time()
        if reply.get("status") == "ok":  # even if it finished just as the interrupt was sent
            return Outcome("ok")
        if interrupted_at is not None:
            return Outcome("timeout", interrupted=True)
        if sink.error is None:
            sink.set_error(reply)
        return Outcome("error")

    async def _reconnect(self) -> None:
        try:
            await self._connect()
        except ColabkitError as exc:  # unusable: kill it so the next cell restarts and replays
            log.warning("workspace kernel lost its client: %s", exc)
            self.kill()

    async def _drain_iopub(self, msg_id: str, sink: OutputCollector) -> bool:
        """Feed this cell's pending IOPub messages to `sink`; True once 'idle' was seen."""
        idle = False
        client = self._client
        while client is not None and await client.iopub_channel.msg_ready():
            msg = await client.get_iopub_msg(timeout=0)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status":
                idle = idle or msg["content"].get("execution_state") == "idle"
            else:
                sink.handle(msg)
        return idle

    def interrupt(self) -> None:
        """Ask the running cell to stop (KeyboardInterrupt in the kernel)."""
        if self._client is not None:
            self._client.control_channel.send(self._client.session.msg("interrupt_request", {}))

    def _describe_exit(self) -> str:
        """How the process ended, as a verb phrase ("was killed by SIGSEGV (...)")."""
        code = None if self._proc is None else self._proc.poll()
        if code is None:
            return "never started" if self._proc is None else "is still running"
        # Direct children report -N for signal N; bubblewrap reports 128+N for its child
        # (a warm kernel's own status comes from its sandbox's init, as a direct child's).
        boxed = self.sandbox.level == "bubblewrap" and not isinstance(self._proc, warm.WarmProcess)
        signum = -code if code < 0 else code - 128 if boxed and code > 128 else 0
        if not signum:
            return f"exited with status {code}"
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        hint = _SIGNAL_HINTS.get(name)
        return f"was killed by {name}" + (f" ({hint})" if hint else "")


def _start_warm(sandbox: Sandbox, layout: Layout, limits: Limits, config: dict, log_path: Path) -> warm.WarmProcess:
    return warm.start(sandbox, layout, limits, config, log_path)


def _discard_warm(proc: warm.WarmProcess) -> None:
    """A warm start whose caller was cancelled: kill what it started."""
    proc.kill()
    proc.wait()


async def blocking(function: Callable[..., T], *args: Any, undo: Callable[[T], object] | None = None,
                   pool: Executor = _BLOCKING) -> T:
    """Run a blocking workspace step (mkfs, mount, data copy, kill, unmount, deletes) in the
    workspaces' own worker threads (or in `pool`: the runner's file steps have their own).

    Not on the event loop, which every session of a batch shares; and not in the loop's
    default executor either: litellm runs each model request's setup there
    (`run_in_executor(None, ...)`), so 64 workspaces preparing in it held back every
    session's first request. If the caller is cancelled meanwhile, the step still finishes
    (a kill or an unmount must not be left half done); `undo` then gets its result.
    """
    job = asyncio.get_running_loop().run_in_executor(pool, functools.partial(function, *args))
    try:
        return await asyncio.shield(job)
    except asyncio.CancelledError:
        while not job.done():  # a second cancel (a batch stopping, Ctrl-C twice) waits too
            try:
                await asyncio.wait([job])
            except asyncio.CancelledError:
                continue
        if undo is not None and not job.cancelled() and job.exception() is None:
            undo(job.result())
        raise


@atexit.register
def kill_leftovers() -> None:
    """Kernels whose workspace was never closed die with the interpreter."""
    for kernel in list(_LIVE):
        kernel.kill()
