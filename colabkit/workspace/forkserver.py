"""The kernel template: a process that has imported the task stack once and forks one
kernel per session into that session's own sandbox. Runs *inside* a sandbox of its own.

Like boot.py, the host starts it as ``python -c <this source> <json config> <boot.py source>``
under bubblewrap (the same read-only system folders and venv at /opt/venv as a kernel, so
every module path is the one a kernel sees; no working folder, no data, a private /tmp, no
network). It keeps root's capabilities because its children must enter another sandbox's
namespaces; it never runs model code. Standard library only; in order, it:

1. asks to be killed with its parent, imports ipykernel and the configured scientific
   stack (pandas, numpy, scipy, statsmodels) and fills inspect's module-file cache, without
   running anything else;
2. says ``ready`` on its channel (stdin: a unix SOCK_SEQPACKET socket to the host) and
   serves fork requests, one at a time. A request carries the session's kernel config, its
   environment and, as passed descriptors (SCM_RIGHTS), the namespaces of the session's
   sandbox (a bubblewrap "holder" the host started for it), that sandbox's root folder and
   the kernel log. No host path ever reaches this process;
3. per request, forks a child into the session sandbox's pid namespace; the child joins its
   network, IPC, UTS, cgroup and mount namespaces, changes root to its root folder, forks
   the kernel and exits, so the kernel is re-parented to the sandbox's init (the holder),
   which reaps it and reports its exit status to the host (`fork_kernel`);
4. the kernel closes every inherited descriptor, starts its own session, drops every
   capability from its bounding set, sets no_new_privs, resets its environment and seeds
   numpy afresh, then runs boot.py's `main` exactly as a cold kernel does: the throw-away
   uid, parent-death signal, limits, output cap, cell hooks, ipykernel on the session's
   connection file.

So a kernel starts from the template's pristine post-import state (no other session ever
ran code in it), in the sandbox bubblewrap built for its session, with the same uid,
limits and mounts a cold kernel gets.
"""

import ctypes
import json
import os
import socket
import sys
import time
from typing import Any

_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_MAX_FDS = 16
_LIBC = ctypes.CDLL(None, use_errno=True)
_OWN_PID_NS = -1  # this process's pid namespace (`serve` opens it), restored after each fork


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def threads() -> int:
    """Threads of this process: a fork copies only the calling one, so the template must
    not hold a lock in another (a native helper thread, such as jemalloc's, only idles)."""
    return len(os.listdir("/proc/self/task"))


def vm_kb() -> int:
    """This process's address space: a forked kernel starts with it, under its RLIMIT_AS."""
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1])
    return 0


def preload(modules: list[str]) -> list[str]:
    """Import what every kernel would import anyway; return the names that imported."""
    done = []
    for name in modules:
        try:
            __import__(name)
        except Exception:  # not installed here: the kernel imports it (or fails) as cold
            continue
        done.append(name)
    return done


def fill_module_file_cache() -> None:
    """Map every loaded module to its file once, here, as a cell's first traceback would.

    IPython's traceback formatter calls `inspect.getmodule`, whose first call resolves the
    real path of every module in `sys.modules` (0.2 CPU-s of lstat calls with the task
    stack loaded) into inspect's own caches. The paths are the ones a kernel sees (the same
    mounts), so a forked kernel starts with the entries it would have computed, and resolves
    only the modules it imports itself.
    """
    import inspect

    inspect.getmodule(compile("", "<colabkit-template>", "exec"))


def drop_privileges_for_kernel() -> None:
    """What bubblewrap's --cap-drop ALL and no_new_privs give a cold kernel; the uid switch
    in boot.main then clears the permitted and effective sets."""
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last + 1):
        _check(_LIBC.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), "drop capability")
    _LIBC.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _check(_LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def become_kernel(request: dict[str, Any], log_fd: int, boot: dict[str, Any]) -> None:
    """In the forked kernel (pid namespace joined): tidy up, then boot as a cold kernel."""
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the host channel, namespaces, log copy
    os.setsid()
    deadline = time.monotonic() + 10
    while os.getppid() != 1:  # until re-parented to the sandbox's init (the holder)
        if time.monotonic() > deadline:
            os._exit(70)
        time.sleep(0.001)
    drop_privileges_for_kernel()
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["-c", json.dumps(request["config"])]
    numpy = sys.modules.get("numpy")
    if numpy is not None:  # its global generator was seeded in the template: one per kernel
        numpy.random.seed()
    boot["main"](request["config"])


def fork_kernel(request: dict[str, Any], fds: list[int], boot: dict[str, Any]) -> dict[str, Any]:
    """Fork a kernel into the sandbox whose descriptors came with `request`; its pid there.

    Two forks, because an orphan goes to the init of its *parent's* pid namespace: this
    process sets the sandbox's pid namespace for its children (its own stays the host's),
    so the first child is born inside; it joins the other namespaces and forks the kernel,
    then exits, and the kernel's parent becomes the sandbox's init, as a cold kernel's is.
    Each fork copies the template's page tables and each exit tears a copy down (tens of
    ms on a loaded machine), so the helper is one child, not two.

    The answer goes back as soon as the kernel's pid is known; the helper's exit and its
    reaping happen off the host's path, before the next request at the latest.
    """
    reap()
    pid_ns, *namespaces, root, log_fd = fds
    reader, writer = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        _check(_LIBC.setns(pid_ns, 0), "setns")
        child = os.fork()
    except BaseException:
        _LIBC.setns(_OWN_PID_NS, 0)
        for fd in (reader, writer, *fds):
            os.close(fd)
        raise
    if child == 0:
        _enter(namespaces, root, log_fd, reader, writer, request, boot)
    # the template's next child is born at home again (a sandbox's namespace may be gone by then)
    _check(_LIBC.setns(_OWN_PID_NS, 0), "setns")
    os.close(writer)
    for fd in fds:
        os.close(fd)
    answer = b""
    while not answer.endswith(b"\n") and (chunk := os.read(reader, 4096)):  # the pid line, or EOF
        answer += chunk
    os.close(reader)
    reap()
    text = answer.decode(errors="replace").strip()
    return {"nspid": int(text)} if text.isdigit() else {"error": text or "the fork children died"}


def reap() -> None:
    """Collect the fork helpers that have exited (the template has no other children)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _enter(namespaces: list[int], root: int, log_fd: int, reader: int, writer: int,
           request: dict[str, Any], boot: dict[str, Any]) -> None:
    """The child, born in the sandbox's pid namespace: join the rest, fork the kernel, exit."""
    try:
        os.close(reader)
        for ns in namespaces:  # mount last: the others are found through descriptors anyway
            _check(_LIBC.setns(ns, 0), "setns")
        os.fchdir(root)
        os.chroot(".")
        kernel = os.fork()
        if kernel == 0:
            try:
                os.close(writer)
                become_kernel(request, log_fd, boot)
            finally:
                os._exit(71)
        os.write(writer, b"%d\n" % kernel)
        os._exit(0)
    except BaseException as exc:
        os.write(writer, f"error {type(exc).__name__}: {exc}".encode())
    finally:
        os._exit(1)


def serve(config: dict[str, Any], boot_source: str) -> None:
    parent = os.getppid()
    _LIBC.prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # as boot.py does: a kernel's sys.path is the same either way
    global _OWN_PID_NS
    _OWN_PID_NS = os.open("/proc/self/ns/pid", os.O_RDONLY)
    boot: dict[str, Any] = {"__name__": "colabkit_boot"}
    exec(compile(boot_source, "<string>", "exec"), boot)
    started = time.process_time()
    loaded = preload(config["preload"])
    fill_module_file_cache()
    channel = socket.socket(fileno=0)
    channel.send(json.dumps({"ready": True, "preloaded": loaded, "threads": threads(), "vm_kb": vm_kb(),
                             "import_cpu_s": round(time.process_time() - started, 3)}).encode())
    while True:
        message, fds, _, _ = socket.recv_fds(channel, 1 << 20, _MAX_FDS)
        if not message:
            return  # the host closed the channel
        try:
            answer = fork_kernel(json.loads(message), list(fds), boot)
        except Exception as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        channel.send(json.dumps(answer).encode())


if __name__ == "__main__":
    serve(json.loads(sys.argv[1]), sys.argv[2])
