"""Attack suite: model-style cells that try to escape or exhaust the workspace kernel.

Each attack runs in a fresh workspace after a `marker` variable is defined.  The test
asserts the specific containment (not just "no crash"), that the next benign cell works
with `marker` intact (directly, or after a restart and replay), and that the original task
data is byte-identical.  Dangerous attacks check their limit inside the kernel *before*
acting (fork bomb, 30 GB, killing the parent), so a broken sandbox fails the test instead
of harming the machine.
"""

import asyncio
import hashlib
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from helpers.env import require
from jupyter_client.session import Session

from colabkit.workspace import CellResult, Limits, Workspace, warm
from colabkit.workspace.isolation import choose

REPO = Path(__file__).resolve().parents[1]
FAKE_KEY = "sk-fake-" + "0123456789abcdef" * 3
OPENED: list[str] = []  # private folders of every workspace this module opened
LIMITS = Limits(cell_timeout_s=3, interrupt_grace_s=2, memory_mb=1024, max_processes=64,
                output_chars=2000, file_size_mb=20)


@pytest.fixture(scope="module")
def sandbox():
    """The sandbox this machine gives kernels; attacks needing more skip before running."""
    return choose("auto")


def warm_here() -> bool:
    return warm.mode() != "cold" and warm.unavailable(choose("auto")[0]) is None


def need_box(sandbox):
    require(sandbox[0].level == "bubblewrap", f"bubblewrap sandbox unavailable: {sandbox[1]}")


def need_unprivileged(sandbox):
    require(os.geteuid() != 0 or sandbox[0].uid is not None, f"the kernel cannot leave root here: {sandbox[1]}")


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    path = tmp_path_factory.mktemp("task") / "capital.csv"
    path.write_text("year,capital\n2000,1.5\n2001,2.5\n")
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Attack:
    """Outcome of one attack: the attacking cell, the benign follow-up, the workspace record."""

    def __init__(self, ws: Workspace, cells: list[CellResult]):
        self.ws, self.hit, self.after = ws, cells[-2], cells[-1]
        self.kinds = [e.kind for e in ws.events]


def attack(task: Path, code: str, tmp_path: Path, *, monkeypatch=None,
           after: str = "print(marker)", limits: Limits = LIMITS) -> Attack:
    before = sha(task)
    if monkeypatch is not None:
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)

    async def scenario():
        async with await Workspace.open([task], root=tmp_path / "ws", limits=limits) as ws:
            # the marker the leftover check looks for does match this live kernel
            assert live_mentions(str(ws.workdir.parent)), "marker matches no live kernel process"
            cells = [await ws.execute("marker = 12345", author="ai")]
            # the attacks run on warm kernels wherever they exist (the default start)
            assert ws.isolation.kernel_start == ("warm" if warm_here() else "cold"), ws.isolation
            cells += [await ws.execute(c, author="ai") for c in (textwrap.dedent(code), after)]
            copy = sha(ws.workdir / "data" / task.name)
        return ws, cells, copy

    ws, cells, copy = asyncio.run(scenario())
    OPENED.append(str(ws.workdir.parent))  # the private folder named in the sandbox's command line
    assert cells[0].status == "ok"
    result = Attack(ws, cells)
    if after == "print(marker)":
        assert (result.after.status, result.after.output) == ("ok", "12345\n"), result.after.error
    assert sha(task) == before and copy == before, "task data changed"
    return result


def test_socket_to_host_loopback_is_refused(task, tmp_path, sandbox):
    need_box(sandbox)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        r = attack(task, f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=2)
                print("CONNECTED")
            except OSError as e:
                print("blocked", type(e).__name__)
        """, tmp_path)
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody ever connected
    assert r.hit.output == "blocked ConnectionRefusedError\n"


def test_socket_to_outside_address_and_dns_fail(task, tmp_path, sandbox):
    need_box(sandbox)
    r = attack(task, """
        import errno, socket
        try:
            socket.create_connection(("192.0.2.1", 80), timeout=2)  # TEST-NET: never routed
            print("CONNECTED")
        except OSError as e:
            print("blocked", errno.errorcode.get(e.errno))
        try:
            socket.getaddrinfo("example.com", 443)
            print("RESOLVED")
        except OSError as e:
            print("dns blocked")
        print([name for _, name in socket.if_nameindex()])
    """, tmp_path)
    # an offline host would refuse too: the kernel must also see no interface but loopback
    assert r.hit.output == "blocked ENETUNREACH\ndns blocked\n['lo']\n"


def test_api_key_in_another_process_environment_is_not_visible(task, tmp_path, monkeypatch):
    # /proc/<pid>/environ shows a process's *initial* environment, so the key must be there
    # from the start: a helper process launched with it (as any host process holding a key).
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                              env={**os.environ, "OPENAI_API_KEY": FAKE_KEY})
    try:
        deadline = time.monotonic() + 30  # until the helper has exec'ed (before, it shows our environment)
        while FAKE_KEY.encode() not in Path(f"/proc/{helper.pid}/environ").read_bytes():
            assert time.monotonic() < deadline, "the helper never showed the key"  # the probe would find it
            time.sleep(0.05)
        r = attack(task, f"""
            import os, glob
            print("env:", os.environ.get("OPENAI_API_KEY"))
            print("secret-like names:", [k for k in os.environ if "KEY" in k or "TOKEN" in k])
            found = 0
            for f in glob.glob("/proc/*/environ"):
                try:
                    found += {FAKE_KEY[:12]!r}.encode() in open(f, "rb").read()
                except OSError:
                    pass
            print("in /proc:", found)
        """, tmp_path, monkeypatch=monkeypatch)
    finally:
        helper.kill()
        helper.wait()
    assert os.environ["OPENAI_API_KEY"] == FAKE_KEY  # it was set in the parent too
    assert r.hit.output == "env: None\nsecret-like names: []\nin /proc: 0\n"
    assert FAKE_KEY not in r.hit.output


def test_task_data_cannot_be_written_or_deleted(task, tmp_path, sandbox):
    if sandbox[0].level != "bubblewrap":
        need_unprivileged(sandbox)
    r = attack(task, f"""
        import os, shutil
        attempts = {{
            "overwrite": lambda: open("data/capital.csv", "w").write("hacked"),
            "append": lambda: open("data/capital.csv", "a").write("hacked"),
            "delete": lambda: os.remove("data/capital.csv"),
            "chmod": lambda: os.chmod("data/capital.csv", 0o666),
            "rename dir": lambda: os.rename("data", "stolen"),
            "rmtree": lambda: shutil.rmtree("data"),
            "new file": lambda: open("data/extra.csv", "w").write("x"),
            "original": lambda: open({str(task)!r}, "a").write("hacked"),
        }}
        for name, act in attempts.items():
            try:
                act()
                print(name, "DONE")
            except OSError as e:
                print(name, "blocked")
    """, tmp_path)
    assert "DONE" not in r.hit.output and r.hit.output.count("blocked") == 8, r.hit.output


def test_writes_outside_the_working_folder_do_not_reach_the_host(task, tmp_path, sandbox):
    need_box(sandbox)
    name = f"colabkit-pwned-{uuid.uuid4().hex}.txt"
    targets = [Path.home() / name, Path(tempfile.gettempdir()) / name, REPO / name,
               task.parent / name]
    r = attack(task, f"""
        for target in {[str(t) for t in targets]!r}:
            try:
                open(target, "w").write("pwned")
                print("written inside the sandbox")
            except OSError:
                print("blocked")
    """, tmp_path)
    assert [t for t in targets if t.exists()] == []
    lines = r.hit.output.splitlines()
    assert lines[0] == lines[2] == lines[3] == "blocked"  # home, repository, data folder
    assert lines[1] == "written inside the sandbox"  # /tmp is the sandbox's private tmpfs


def test_fork_bomb_is_capped_by_the_process_limit(task, tmp_path, sandbox):
    need_box(sandbox)
    need_unprivileged(sandbox)
    r = attack(task, f"""
        import os, resource, time
        limit = resource.getrlimit(resource.RLIMIT_NPROC)[0]
        assert limit <= {LIMITS.max_processes} and os.getuid() != 0, (limit, os.getuid())
        kids, err = [], None
        for _ in range(500):
            try:
                pid = os.fork()
            except OSError as e:
                err = e
                break
            if pid == 0:
                time.sleep(20)
                os._exit(0)
            kids.append(pid)
        print(len(kids), type(err).__name__)
    """, tmp_path, after="import os, signal\nfor p in kids: os.kill(p, signal.SIGKILL); os.waitpid(p, 0)\nprint(marker)",
        # a warm kernel forks slower (the page tables of its preloaded stack): ~60 ms a fork on
        # a loaded machine, so the 60 forks before the cap need more than the usual 3 s
        limits=LIMITS.model_copy(update={"cell_timeout_s": 15}))
    assert r.hit.status == "ok", r.hit.error
    forked, err = r.hit.output.split()
    assert 0 < int(forked) < LIMITS.max_processes and err == "BlockingIOError"
    assert r.after.output == "12345\n"


def test_allocating_30_gb_raises_memory_error(task, tmp_path):
    r = attack(task, f"""
        import resource
        assert resource.getrlimit(resource.RLIMIT_AS)[0] <= {LIMITS.memory_mb} * 2**20
        import numpy as np
        big = np.ones(30 * 2**30 // 8)
    """, tmp_path)
    assert r.hit.status == "error" and r.hit.error.startswith("MemoryError")
    assert not r.after.restarted


@pytest.mark.slow
def test_infinite_loop_is_interrupted_at_the_cell_timeout(task, tmp_path):
    r = attack(task, "while True:\n    pass", tmp_path)
    assert r.hit.status == "timeout" and not r.hit.restarted
    assert r.hit.error.startswith("CellTimeout") and "KeyboardInterrupt" in r.hit.error
    assert LIMITS.cell_timeout_s <= r.hit.duration_s < LIMITS.cell_timeout_s + 2


@pytest.mark.slow
def test_loop_ignoring_interrupts_gets_the_kernel_restarted(task, tmp_path):
    r = attack(task, """
        import signal
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        while True:
            pass
    """, tmp_path)
    assert r.hit.status == "timeout" and r.hit.restarted
    assert "restarted" in r.hit.error and "1 earlier successful cell" in r.hit.error
    assert r.kinds[1:] == ["timeout", "restarted", "replayed"]


@pytest.mark.slow
def test_cpu_time_limit_kills_a_busy_kernel_which_is_recovered(task, tmp_path):
    limits = LIMITS.model_copy(update={"cpu_s": 2, "cell_timeout_s": 30})
    r = attack(task, "while True:\n    pass", tmp_path, limits=limits)
    assert r.hit.status == "died" and r.hit.restarted
    assert "SIGXCPU" in r.hit.error and r.hit.duration_s < 10
    assert r.kinds == ["kernel_started", "kernel_died", "restarted", "replayed"]


@pytest.fixture
def received(monkeypatch) -> list[int]:
    """Sizes of every Jupyter message this process receives from any kernel, in bytes."""
    sizes: list[int] = []
    feed = Session.feed_identities

    def counting(self, msg_list, copy=True):
        sizes.append(sum(len(frame) for frame in msg_list))
        return feed(self, msg_list, copy)

    monkeypatch.setattr(Session, "feed_identities", counting)
    return sizes


def test_printing_100_mb_is_truncated_without_reaching_host_memory(task, tmp_path, received):
    r = attack(task, 'print("x" * 100_000_000)', tmp_path)
    assert received and sum(received) < 1_000_000  # bytes: the 100 MB never came to this process
    assert r.hit.status == "ok" and r.hit.truncated
    assert r.hit.output.startswith("x" * LIMITS.output_chars + "\n")
    assert f"{100_000_001 - LIMITS.output_chars:,} more characters were dropped" in r.hit.output
    assert len(r.hit.output) < LIMITS.output_chars + 200


def test_oversized_display_message_is_refused_and_output_resumes(task, tmp_path, received):
    r = attack(task, """
        from IPython.display import display
        display({"text/plain": "y" * 100_000_000}, raw=True)  # bypasses the print cap
    """, tmp_path, limits=LIMITS.model_copy(update={"memory_mb": 2048}))
    assert r.hit.truncated and "output was lost" in r.hit.output and "yyyy" not in r.hit.output
    assert received and max(received) < 1_000_000  # bytes: zmq refused the 100 MB message
    assert r.after.output == "12345\n"  # the output channel was reconnected


def test_shell_subprocess_runs_without_network_keys_or_host_files(task, tmp_path, monkeypatch, sandbox):
    need_box(sandbox)
    r = attack(task, f"""
        import subprocess, sys
        probe = "import socket; socket.create_connection(('192.0.2.1', 80), timeout=2)"
        out = subprocess.run(
            f"id -u; env | grep -c sk-fake; ls {REPO} 2>&1; {{sys.executable}} -c \\"{{probe}}\\" 2>&1 | tail -1",
            shell=True, capture_output=True, text=True).stdout
        print(out)
    """, tmp_path, monkeypatch=monkeypatch)
    uid, keys, listing, net = r.hit.output.strip().splitlines()
    if r.ws.isolation.kernel_uid is not None:
        assert int(uid) == r.ws.isolation.kernel_uid != 0
    assert keys == "0" and "No such file or directory" in listing
    assert "Network is unreachable" in net


def test_killing_the_kernels_parent_fails(task, tmp_path, sandbox):
    need_box(sandbox)
    r = attack(task, f"""
        import os, signal
        parent = os.getppid()
        assert parent == 1, parent  # the sandbox's own init, never a host process
        for pid in (parent, {os.getpid()}):
            try:
                os.kill(pid, signal.SIGKILL)
                print(pid, "signalled")
            except OSError as e:
                print(pid, type(e).__name__)
    """, tmp_path)
    first, second = r.hit.output.splitlines()
    assert first in ("1 PermissionError", "1 signalled")  # init ignores signals from inside
    assert second.split()[1] in ("ProcessLookupError", "PermissionError")
    assert not r.after.restarted and r.kinds == ["kernel_started"]


def test_chdir_root_cannot_see_the_repository(task, tmp_path, sandbox):
    need_box(sandbox)
    r = attack(task, f"""
        import os
        os.chdir("/")
        print(sorted(os.listdir("/")))
        print(os.path.exists({str(REPO)!r}), os.path.exists({str(Path.home() / ".bash_history")!r}))
        print(os.listdir({str(REPO)!r}))
    """, tmp_path, after="import pandas as pd\nprint(pd.read_csv('data/capital.csv').shape, marker)")
    assert r.hit.status == "error" and r.hit.error.startswith("FileNotFoundError")
    listing, exists = r.hit.output.splitlines()
    assert exists == "False False" and "pyproject.toml" not in r.hit.output
    assert "'workspace'" in listing and "'home'" not in listing
    assert r.after.output == "(2, 2) 12345\n"  # each cell starts in the working folder again


def test_segfault_restarts_and_replays(task, tmp_path):
    r = attack(task, "import ctypes\nctypes.string_at(0)", tmp_path)
    assert r.hit.status == "died" and r.hit.restarted
    assert "SIGSEGV" in r.hit.error and "1 earlier successful cell" in r.hit.error
    assert r.kinds == ["kernel_started", "kernel_died", "restarted", "replayed"]


def test_writing_a_huge_file_hits_the_file_size_limit(task, tmp_path):
    r = attack(task, "open('big.bin', 'wb').write(b'0' * 64 * 2**20)", tmp_path)
    assert r.hit.status == "error" and "File too large" in r.hit.error
    big = [f for f in r.ws.snapshot().files if f.path == "big.bin"]
    assert big and big[0].size <= LIMITS.file_size_mb * 2**20


def test_planted_symlink_cannot_redirect_figure_saving(task, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    r = attack(task, f"""
        import os, shutil
        shutil.rmtree("figures")
        os.symlink({str(outside)!r}, "figures")
        import matplotlib.pyplot as plt
        plt.plot([1, 2])
        plt.show()
    """, tmp_path)
    assert list(outside.iterdir()) == []
    assert r.hit.images == () and "[figure not saved]" in r.hit.output
    assert [f.kind for f in r.ws.snapshot().files if f.path == "figures"] == ["symlink"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_no_attack_left_a_process_behind():
    if not OPENED:
        pytest.skip("no attack ran in this session")
    # every marker matched a live kernel while its workspace was open (asserted in `attack`)
    leftovers = [p for p in Path("/proc").glob("[0-9]*") if _mentions(p, OPENED)]
    assert leftovers == []


def live_mentions(marker: str) -> list[Path]:
    """Running processes whose command line mentions `marker`."""
    return [p for p in Path("/proc").glob("[0-9]*") if _mentions(p, [marker])]


def _mentions(entry: Path, markers: list[str]) -> bool:
    try:
        cmd = (entry / "cmdline").read_bytes()
    except OSError:
        return False
    return any(m.encode() in cmd for m in markers)
