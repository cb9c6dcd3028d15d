"""Kernel entry point that runs *inside* the sandbox, before any model code.

The host starts it as ``python -c <this source> <json config>``: colabkit itself is not
importable in the sandbox (the repository is not mounted), so this file may use only the
standard library and ipykernel.  In order, it:

1. switches to the throw-away uid the host chose (root only; needs CAP_SETUID, which
   bubblewrap grants for this step alone), so RLIMIT_NPROC and file permissions bind;
2. asks to be killed with its parent (the uid switch clears any earlier request);
3. applies the resource limits;
4. caps each cell's stdout/stderr *in the kernel*, so a 100 MB print is never serialised
   and shipped to the host; the number of dropped characters is published as a
   display_data item with a private MIME type that the host turns into the truncation note;
5. resets the working directory before every cell, so ``data/<name>`` always resolves
   even after a cell ran ``os.chdir``;
6. starts the ipykernel application on the host-written connection file.
"""

import json
import os
import resource
import signal
import sys
import threading
from typing import Any

DROPPED_MIME = "application/vnd.colabkit.dropped+json"


def switch_user(uid: int) -> None:
    """Leave root for an unprivileged uid (no supplementary groups)."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def die_with_parent(parent_pid: int) -> None:
    """Linux: SIGKILL this process when its parent dies; exit if that already happened."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(1)


def apply_limits(limits: dict[str, list[int]]) -> list[str]:
    """Set every limit this platform knows; return the names that took effect."""
    applied = []
    for name, (soft, hard) in limits.items():
        which = getattr(resource, name, None)
        if which is None:
            continue
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            continue
        applied.append(name)
    return applied


class OutputCap:
    """Per-cell budget of stream characters shared by stdout and stderr (thread-safe)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.dropped = 0
        self.lock = threading.Lock()

    def reset(self) -> None:
        with self.lock:
            self.used = 0
            self.dropped = 0

    def take(self, text: str) -> str:
        with self.lock:
            room = max(0, self.limit - self.used)
            kept = text[:room]
            self.used += len(kept)
            self.dropped += len(text) - len(kept)
        return kept


def install_output_cap(cap: OutputCap) -> None:
    """Route every OutStream write (print, sys.stdout, captured fds) through the cap."""
    from ipykernel.iostream import OutStream

    original = OutStream.write

    def capped_write(self: Any, string: Any) -> Any:
        if not isinstance(string, str):
            return original(self, string)
        kept = cap.take(string)
        if kept:
            original(self, kept)
        return len(string)

    OutStream.write = capped_write  # type: ignore[method-assign]


def install_cell_hooks(shell: Any, cap: OutputCap, workdir: str) -> None:
    """Before a cell: fresh budget and cwd.  After: report what the cap dropped."""

    def before(*_: object) -> None:
        cap.reset()
        try:
            os.chdir(workdir)
        except OSError:
            pass

    def after(*_: object) -> None:
        if cap.dropped:
            from IPython.display import publish_display_data

            publish_display_data({DROPPED_MIME: {"chars": cap.dropped}})

    shell.events.register("pre_execute", before)
    shell.events.register("post_execute", after)


def silence_echo() -> None:
    """Send the kernel's echo of raw fd output to /dev/null once start-up is over.

    ipykernel copies output written straight to fds 1/2 both to the client and to the
    original fds (the host's kernel log); only start-up messages are worth keeping there.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        copy = getattr(stream, "_original_stdstream_copy", None)
        if isinstance(copy, int):
            os.dup2(devnull, copy)
    os.close(devnull)


def main(config: dict[str, Any]) -> None:
    parent = os.getppid()
    if config["uid"] is not None:
        switch_user(config["uid"])
    die_with_parent(parent)
    applied = apply_limits(config["rlimits"])
    os.chdir(config["workdir"])
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # like ipykernel_launcher: IPython puts the cwd back later
    if config["probe"]:  # importing ipykernel proves the Python installation is readable
        import ipykernel

        print("colabkit-probe-ok", json.dumps({"uid": os.getuid(), "rlimits": applied,
                                                "ipykernel": ipykernel.__version__}))
        return
    from ipykernel.kernelapp import IPKernelApp

    cap = OutputCap(config["output_chars"])
    install_output_cap(cap)
    app = IPKernelApp.instance()
    app.initialize(["-f", config["connection_file"], "--HistoryManager.enabled=False"])
    install_cell_hooks(app.shell, cap, config["workdir"])
    silence_echo()
    app.start()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
