"""Warm kernels (forked from the process's template into each session's own sandbox): what a
session sees is its own, nothing passes from one session to the next, a stored session
replays identically on them, and killing their owner leaves nothing running.

The kernel and attack suites (`test_workspace_kernel.py`, `test_workspace_attacks.py`) run on
whatever `auto` gives, which is a warm kernel wherever this file's tests do not skip.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import json
import os
import platform
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers.env import require

from colabkit.errors import ColabkitError
from colabkit.workspace import Workspace, warm
from colabkit.workspace.isolation import choose


@pytest.fixture(scope="module")
def warm_ok():
    sandbox, notes = choose("auto")
    why = warm.unavailable(sandbox)
    require(why is None, f"warm kernels unavailable here: {why}")


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    """Two sessions' tasks: different files in different folders."""
    first = tmp_path_factory.mktemp("task_a") / "alpha.csv"
    first.write_text("x,y\n1,2\n")
    second = tmp_path_factory.mktemp("task_b") / "beta.csv"
    second.write_text("u,v\n3,4\n5,6\n")
    return first, second


def run_cells(data: Path, root: Path, cells: list[str], **open_kw) -> tuple[Workspace, list]:
    async def scenario():
        async with await Workspace.open([data], root=root, **open_kw) as ws:
            return ws, [await ws.execute(textwrap.dedent(c), author="ai") for c in cells]

    return asyncio.run(scenario())


LEAVE_TRACES = """
    import json, os, tempfile, pandas as pd
    secret_variable = "session-one"
    json.LEFT_BY_SESSION_ONE = True                 # a module's state
    pd.set_option("display.max_rows", 3)            # a library option
    open("/tmp/left-by-one.txt", "w").write("x")    # a temp file
    open("mine.txt", "w").write("one")              # a file in its own folder
    held = open("/tmp/held-open.txt", "w")          # an open file
    print(os.getuid(), sorted(os.listdir("data")))
"""

LOOK_FOR_TRACES = """
    import json, os, pandas as pd
    print("secret_variable" in globals(), hasattr(json, "LEFT_BY_SESSION_ONE"),
          pd.get_option("display.max_rows"), sorted(os.listdir("/tmp")), sorted(os.listdir(".")))
    targets = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # the listing's own descriptor, closed by now
            pass
    named = sorted(t for t in targets if t.startswith("/"))
    anonymous = sorted({t.split("[")[0] + t.split("[")[1].rstrip("]") * t.startswith("anon_inode:")
                        for t in targets if not t.startswith("/")})
    print(os.getuid(), sorted(os.listdir("data")), json.dumps([named, anonymous]))
"""


def test_a_variable_a_modules_state_and_files_of_one_session_are_not_seen_by_the_next(warm_ok, tasks, tmp_path):
    first, second = tasks

    async def scenario():  # session one still runs (and holds a file open) while two looks
        async with await Workspace.open([first], root=tmp_path / "one", kernel_start="warm") as one:
            left = await one.execute(textwrap.dedent(LEAVE_TRACES), author="ai")
            async with await Workspace.open([second], root=tmp_path / "two", kernel_start="warm") as two:
                seen = await two.execute(textwrap.dedent(LOOK_FOR_TRACES), author="ai")
                template = next(iter(warm._TEMPLATES.values())).proc.pid
                shared = _shared_descriptors(two._kernel._proc.kernel_pid(),
                                             [one._kernel._proc.kernel_pid(), *_tree(template)])
        return one, left, two, seen, shared

    one, left, two, seen, shared = asyncio.run(scenario())
    assert one.isolation.kernel_start == two.isolation.kernel_start == "warm"
    assert left.status == "ok" and seen.status == "ok", (left.error, seen.error)
    first_uid, first_data = left.output.split(" ", 1)
    presence, identity = seen.output.splitlines()
    # no variable, no module state, the library's default, none of its temp or own files
    assert presence.startswith("False False 60 [") and presence.endswith("] ['data', 'figures']")
    assert "left-by-one" not in presence and "held-open" not in presence and "mine.txt" not in presence
    uid, rest = identity.split(" ", 1)
    assert uid != first_uid and int(uid) == two.isolation.kernel_uid != 0
    assert first_data.strip() == "['alpha.csv']" and rest.startswith("['beta.csv'] ")
    # no descriptor inherited: none of the warm kernel's open files (sockets, pipes, eventfds,
    # files) is one that session one's kernel or the template holds
    assert shared == []
    # and what a fresh cold kernel sees: the same /tmp, the same named files open, the same
    # kinds of anonymous ones. Not their number: zmq and ipykernel make some lazily (an
    # accepted client connection, an output pipe per thread that prints), so a start under
    # load can be one short of another (58 against 59 once in CI, warm or cold alike)
    _, (cold,) = run_cells(second, tmp_path / "cold", [LOOK_FOR_TRACES], kernel_start="cold")
    cold_presence, cold_identity = cold.output.splitlines()
    named, anonymous = json.loads(rest.split(" ", 1)[1])
    assert cold_presence == presence and json.loads(cold_identity.split(" ", 2)[2]) == [named, anonymous]
    assert named == ["/dev/null"] * 3 and {"pipe:", "socket:", "anon_inode:eventfd"} <= set(anonymous)


_KCMP = {"x86_64": 312, "aarch64": 272}
_KCMP_FILE = 0


def _tree(pid: int) -> list[int]:
    """A process and its descendants (the template: bubblewrap and the forkserver)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
    return found


def _shared_descriptors(pid: int | None, others: list[int | None]) -> list[str]:
    """Descriptors of `pid` that are the same open file as one of `others`' (kcmp), as
    "fd -> target" lines. kcmp compares the kernel's file objects, so an anonymous
    descriptor (an eventfd, a pipe end) inherited through a fork is found as surely as a file."""
    assert pid is not None and None not in others, (pid, others)
    require(platform.machine() in _KCMP, f"kcmp's syscall number on {platform.machine()} is not known here")
    libc = ctypes.CDLL(None, use_errno=True)
    mine = _descriptors(pid)
    assert len(mine) > 10, mine  # the kernel's zmq sockets at least: the listing worked
    shared = []
    for other in others:
        for fd, target in mine.items():
            for their in _descriptors(other):  # type: ignore[arg-type]
                same = libc.syscall(_KCMP[platform.machine()], pid, other, _KCMP_FILE, fd, their)
                if same < 0 and ctypes.get_errno() != errno.EBADF:  # EBADF: closed meanwhile
                    raise OSError(ctypes.get_errno(), f"kcmp {pid}:{fd} {other}:{their}")
                if same == 0:
                    shared.append(f"{fd} -> {target} (also {other}:{their})")
    return shared


def _descriptors(pid: int) -> dict[int, str]:
    found = {}
    for entry in Path(f"/proc/{pid}/fd").iterdir():
        try:
            found[int(entry.name)] = os.readlink(entry)
        except OSError:
            continue
    return found


def test_a_warm_kernel_sees_only_its_own_data_and_folder(warm_ok, tasks, tmp_path):
    first, second = tasks
    one, _ = run_cells(first, tmp_path / "one", ["print(1)"], kernel_start="warm")
    probe = f"""
        import os
        print(os.getcwd(), sorted(os.listdir("/workspace/data")))
        for path in ({str(one.workdir)!r}, {str(first)!r}, {str(first.parent)!r}, {str(tmp_path)!r}):
            print(os.path.exists(path))
        open("data/beta.csv", "a")
    """
    two, (cell,) = run_cells(second, tmp_path / "two", [probe], kernel_start="warm")
    assert cell.status == "error" and cell.error.startswith(("PermissionError", "OSError")), cell.error
    assert cell.output.splitlines() == ["/workspace ['beta.csv']", "False", "False", "False", "False"]
    assert (second.read_text(), two.isolation.kernel_start) == ("u,v\n3,4\n5,6\n", "warm")


def test_a_warm_kernels_parent_is_its_sandboxs_init_as_a_cold_kernels_is(warm_ok, tasks, tmp_path):
    """The template forks one helper into the sandbox's pid namespace, which forks the kernel
    and exits: the kernel is re-parented to the sandbox's init (pid 1), never the template's
    child (its parent would then be outside the namespace: pid 0), whichever of several
    sandboxes in a row it is started in."""
    first, second = tasks
    probe = "import os\nprint(os.getpid() > 1, os.getppid())"
    seen = {}
    for kind, data in (("cold", first), ("warm", first), ("warm", second)):
        ws, (cell,) = run_cells(data, tmp_path / f"{kind}-{data.stem}", [probe], kernel_start=kind)
        assert ws.isolation.kernel_start == kind
        seen[(kind, data.stem)] = cell.output.strip()
    assert set(seen.values()) == {"True 1"}, seen


def test_provenance_is_recorded_and_a_kernel_that_cannot_be_warm_starts_cold_with_the_reason(tasks, tmp_path):
    first, _ = tasks
    cold, (cell,) = run_cells(first, tmp_path / "c", ["print(6 * 7)"], isolation="rlimits-only")
    assert cell.output == "42\n" and cold.isolation.kernel_start == "cold"
    assert "isolation level rlimits-only" in cold.isolation.kernel_start_note
    assert cold.events[0].detail.startswith("rlimits-only, cold, in ")
    chosen, _ = run_cells(first, tmp_path / "k", ["print(6 * 7)"], kernel_start="cold")
    assert chosen.isolation.kernel_start == "cold" and chosen.isolation.kernel_start_note == ""
    with pytest.raises(ColabkitError, match="unknown kernel start"):
        warm.mode("tepid")  # type: ignore[arg-type]


def test_a_template_that_fails_gives_a_cold_start_that_says_why(warm_ok, tasks, tmp_path, monkeypatch):
    def broken(sandbox):
        raise warm.WarmUnavailable("the kernel template exited: boom")

    monkeypatch.setattr(warm, "template", broken)
    ws, (cell,) = run_cells(tasks[0], tmp_path / "f", ["print(6 * 7)"])
    assert cell.output == "42\n" and ws.isolation.kernel_start == "cold"
    assert ws.isolation.kernel_start_note == "the kernel template exited: boom"
    with pytest.raises(ColabkitError, match="the kernel template exited: boom"):  # warm only: no fallback
        run_cells(tasks[0], tmp_path / "g", ["print(6 * 7)"], kernel_start="warm")


def test_a_warm_kernel_that_dies_is_restarted_warm_and_its_exit_is_described(warm_ok, tasks, tmp_path):
    first, _ = tasks
    ws, cells = run_cells(first, tmp_path / "w", ["x = 41", "import ctypes; ctypes.string_at(0)", "print(x + 1)"],
                          kernel_start="warm")
    assert cells[1].status == "died" and "SIGSEGV" in cells[1].error
    assert cells[2].output == "42\n" and [e.kind for e in ws.events][:2] == ["kernel_started", "kernel_died"]


def test_kill_9_of_the_owner_leaves_no_warm_kernel_sandbox_or_template_running(warm_ok, tasks, tmp_path):
    first, second = tasks
    script = textwrap.dedent(f"""
        import asyncio, os, sys
        from colabkit.workspace import Workspace, warm
        async def main():
            spaces = [await Workspace.open([p], root={str(tmp_path)!r}, kernel_start="warm")
                      for p in ({str(first)!r}, {str(second)!r})]
            for ws in spaces:
                assert (await ws.execute("x = 1", author="ai")).status == "ok"
            template = next(iter(warm._TEMPLATES.values())).proc.pid
            print(template, *[ws.isolation.kernel_uid for ws in spaces], flush=True)
            sys.stdin.readline()
            os.kill(os.getpid(), 9)
        asyncio.run(main())
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        template, *uids = (int(v) for v in line.split())
        assert _pids(uids) and _alive(template)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == -9
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 30
    while (_pids(uids) or _alive(template) or _under(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _pids(uids) == [] and not _alive(template) and _under(tmp_path) == []


def _pids(uids: list[int]) -> list[int]:
    """Running (not zombie) processes of these kernel uids."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if entry.stat().st_uid in uids and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _under(folder: Path) -> list[int]:
    """Processes whose command line names `folder` (the sandboxes' bind mounts)."""
    marker = str(folder).encode()
    return [int(e.name) for e in Path("/proc").glob("[0-9]*") if _cmdline_has(e, marker)]


def _cmdline_has(entry: Path, marker: bytes) -> bool:
    try:
        return marker in (entry / "cmdline").read_bytes()
    except OSError:
        return False


def test_a_stored_session_replays_identically_on_a_warm_kernel(warm_ok, tmp_path, monkeypatch):
    from helpers.stored_session import record_scaffolded_session

    from colabkit.session import Event
    from colabkit.session.fork import replay_view
    from colabkit.store import SessionRecord

    def recorded(kind: str) -> tuple[list[Event], SessionRecord]:
        monkeypatch.setenv(warm.MODE_ENV, kind)
        folder = record_scaffolded_session(tmp_path / kind)
        events = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]
        return events, SessionRecord.model_validate_json((folder / "session.json").read_bytes())

    cold_events, cold = recorded("cold")
    warm_events, hot = recorded("warm")
    assert (cold.isolation.kernel_start, hot.isolation.kernel_start) == ("cold", "warm")
    assert hot.session_id == cold.session_id and hot.spec_identity == cold.spec_identity
    assert any(e.action == "execute_code" for e in warm_events)
    assert [replay_view(e) for e in warm_events] == [replay_view(e) for e in cold_events]
    assert hot.final_hypothesis == cold.final_hypothesis and hot.ended_by == cold.ended_by
    # the same sandbox, but for the provenance and the throw-away uid (fresh per session, named in a note)
    differ = {"kernel_start", "kernel_uid", "notes"}
    assert hot.isolation.model_dump(exclude=differ) == cold.isolation.model_dump(exclude=differ)
    assert [n.replace(str(hot.isolation.kernel_uid), "UID") for n in hot.isolation.notes] == \
        [n.replace(str(cold.isolation.kernel_uid), "UID") for n in cold.isolation.notes]
