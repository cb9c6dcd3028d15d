"""A failed session's logs, kept in its own folder: `<session>/logs/`.

A session's workspace lives in the results' work area, which is removed when the session
ends; what went wrong there (a kernel that would not start, a crash) must outlive it. The
recorder has the workspace write its kernel's log straight into `<session>/logs/`
(`Workspace.open(logs=...)`), so the path a kernel's error names is where the log stays.
When the session ends as infrastructure (`RETRYABLE_ENDINGS`), raised before it could
end, or its kernel needed a second start, three files are kept:

- `kernel.log`: the kernel's start-up output, every start attempt appended (bubblewrap's and
  boot's messages, ipykernel's banner; a traceback when it died starting);
- `workspace.log`: the workspace's own record: its isolation report, then each of its events
  (kernel started, a start retried or failed, deaths, restarts) with its time;
- `host.log`: the machine at the end (cores, load, memory), the versions, how the session
  ended and, when it raised, the exception with its traceback.

A session that ended as a team's outcome with one clean kernel start keeps none: its folder
is the store's format and nothing else.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import sys
import traceback
from datetime import UTC, datetime
from pathlib import Path

from colabkit import __version__
from colabkit.session import Event, SessionResult
from colabkit.session.events import INFRASTRUCTURE_ENDINGS
from colabkit.store import EVENTS_FILE, LOGS_DIR, atomic_write_text

KERNEL_TROUBLE = frozenset({"kernel_start_retry", "kernel_start_failed"})
"""Workspace events that keep the logs even when the session itself ended well."""


def logs_dir(folder: Path) -> Path:
    return folder / LOGS_DIR


def settle_logs(folder: Path, result: SessionResult | None, error: BaseException | None = None) -> bool:
    """Keep `<folder>/logs/` (completed with the workspace's and the host's logs) when the
    session failed or its kernel had trouble starting, else remove it; True when kept."""
    logs = logs_dir(folder)
    troubled = result is not None and any(e.kind in KERNEL_TROUBLE for e in result.snapshot.events)
    if result is not None and result.ended_by not in INFRASTRUCTURE_ENDINGS and not troubled:
        shutil.rmtree(logs, ignore_errors=True)
        return False
    logs.mkdir(parents=True, exist_ok=True)
    if result is not None:
        atomic_write_text(logs / "workspace.log", workspace_log(result))
    atomic_write_text(logs / "host.log", host_log(folder, result, error))
    return True


def workspace_log(result: SessionResult) -> str:
    """The workspace's isolation report and its events, one line each."""
    snapshot = result.snapshot
    lines = [f"isolation: {snapshot.isolation.model_dump_json()}", "events:"]
    lines += [f"  {_when(e.time)} {e.kind}" + (f" (cell {e.cell})" if e.cell is not None else "")
              + (f": {e.detail}" if e.detail else "") for e in snapshot.events]
    if not snapshot.events:
        lines.append("  (none: the session ended before its kernel was asked for)")
    return "\n".join(lines) + "\n"


def host_log(folder: Path, result: SessionResult | None, error: BaseException | None) -> str:
    """The machine and the versions at the end, and how the session ended (its `session_end`
    event's reason and traceback, from the folder's event log) or what it raised."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
    lines = [f"written: {datetime.now(UTC).isoformat(timespec='seconds')}",
             f"host: {socket.gethostname()} ({platform.platform()}), pid {os.getpid()}",
             f"cores usable: {cores} of {os.cpu_count()}; load average (1, 5, 15 min): {load}",
             f"memory: {_memory()}",
             f"colabkit {__version__}, Python {sys.version.split()[0]}"]
    if result is not None:
        lines.append(f"session {result.session_id} ended by {result.ended_by}")
        end = _session_end(folder)
        if end is not None:
            lines.append(f"its last event: {end.result}")
            lines += [str(end.args["traceback"])] if end.args.get("traceback") else []
    if error is not None:
        lines.append("raised before it could end:")
        lines += traceback.format_exception(error)
    return "\n".join(line.rstrip("\n") for line in lines) + "\n"


def _session_end(folder: Path) -> Event | None:
    """The session's last logged event when it is its end (None when the log has none)."""
    path = folder / EVENTS_FILE
    if not path.is_file():
        return None
    last = path.read_bytes().rstrip(b"\n").rpartition(b"\n")[2]
    event = Event.model_validate_json(last) if last else None
    return event if event is not None and event.action == "session_end" else None


def _memory() -> str:
    """MemAvailable of MemTotal from /proc/meminfo ("unknown" elsewhere)."""
    try:
        fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines() if ":" in line)
    except OSError:
        return "unknown"
    return f"{fields.get('MemAvailable', '?').strip()} available of {fields.get('MemTotal', '?').strip()}"


def _when(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="milliseconds")
