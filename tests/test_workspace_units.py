"""Workspace building blocks that need no kernel: chat, editor, views, output capping,
the environment allow-list, the bubblewrap command line and the snapshot."""

import base64
import os
import sys
import tempfile
from pathlib import Path

import pytest
from helpers.env import require

import colabkit.workspace.files as files_module
from colabkit.errors import ColabkitError
from colabkit.workspace import CellResult, Chat, Editor, Limits, Workspace, WorkspaceSnapshot
from colabkit.workspace.boot import DROPPED_MIME
from colabkit.workspace.files import list_files
from colabkit.workspace.isolation import SANDBOX_WORKDIR, IsolationReport, Layout, Sandbox, kernel_env, rlimits
from colabkit.workspace.output import OutputCollector, clip_middle, strip_ansi, write_no_follow

REPO = Path(__file__).resolve().parents[1]


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        self.now += 1
        return self.now


def test_chat_numbers_messages_and_limits_visibility():
    chat = Chat(Clock())
    everyone = chat.post("ai", "hello team")
    private = chat.post("D", "just for R", to=["R"])
    assert (everyone.index, private.index) == (0, 1)
    assert everyone.to is None and private.to == ("R",)
    assert private.time > everyone.time
    assert [m.index for m in chat.visible_to("R")] == [0, 1]
    assert [m.index for m in chat.visible_to("D")] == [0, 1]  # the sender sees their own
    assert [m.index for m in chat.visible_to("ai")] == [0]
    assert not private.visible_to("ai")


@pytest.mark.parametrize("sender,to", [("", None), ("ai", []), ("ai", ["R", ""])])
def test_chat_rejects_bad_sender_or_recipients(sender, to):
    with pytest.raises(ColabkitError):
        Chat().post(sender, "x", to=to)


def test_editor_keeps_every_version_and_latest_text():
    editor = Editor(Clock())
    assert editor.text == ""
    editor.write("ai", "draft")
    editor.write("R", "final hypothesis")
    assert editor.text == "final hypothesis"
    assert [(v.index, v.author, v.text) for v in editor.versions] == [
        (0, "ai", "draft"), (1, "R", "final hypothesis")]
    assert editor.versions[1].time > editor.versions[0].time
    with pytest.raises(ColabkitError):
        editor.write("", "x")


def _cell(index, author):
    return CellResult(index=index, author=author, code="1", status="ok", output="", error=None,
                      images=(), truncated=False, restarted=False, duration_s=0.0)


def test_output_truncation_note_counts_every_dropped_character(tmp_path):
    sink = OutputCollector(10, workdir=tmp_path)
    sink.handle({"msg_type": "stream", "content": {"name": "stdout", "text": "0123456789abc"}})
    sink.handle({"msg_type": "stream", "content": {"name": "stderr", "text": "def"}})
    sink.handle({"msg_type": "display_data", "content": {"data": {DROPPED_MIME: {"chars": 1000}}}})
    assert sink.truncated
    assert sink.text.startswith("0123456789\n")
    assert "1,006 more characters were dropped" in sink.text


def test_output_keeps_results_and_errors_plain(tmp_path):
    sink = OutputCollector(1000, workdir=tmp_path)
    sink.handle({"msg_type": "execute_result", "content": {"data": {"text/plain": "42"}}})
    sink.handle({"msg_type": "error", "content": {
        "ename": "ValueError", "evalue": "bad", "traceback": ["\x1b[0;31mValueError\x1b[0m: bad"]}})
    assert sink.text == "42\n" and not sink.truncated
    assert sink.error == "ValueError: bad\nValueError: bad"


def test_strip_ansi_and_clip_middle_keep_the_ends():
    assert strip_ansi("\x1b[1;32mok\x1b[0m") == "ok"
    text, clipped = clip_middle("HEAD" + "x" * 100 + "TAIL", 20)
    assert clipped and text.startswith("HEAD") and text.endswith("TAIL") and "omitted" in text


def test_figures_are_saved_by_path_and_never_through_a_planted_symlink(tmp_path):
    png = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
    sink = OutputCollector(1000, workdir=tmp_path, image_stem="cell3")
    sink.handle({"msg_type": "display_data", "content": {"data": {"image/png": png, "text/plain": "<Figure>"}}})
    assert sink.images == ["figures/cell3-1.png"]
    assert (tmp_path / "figures" / "cell3-1.png").read_bytes().startswith(b"\x89PNG")
    assert "[figure saved: figures/cell3-1.png]" in sink.text and "<Figure>" not in sink.text

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    (work / "figures").symlink_to(elsewhere)
    assert not write_no_follow(work, "figures", "x.png", b"data")
    assert list(elsewhere.iterdir()) == []


def test_kernel_env_is_an_allow_list():
    parent = {"OPENAI_API_KEY": "sk-fake", "GITHUB_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "s",
              "LANG": "en_US.UTF-8", "HOME": "/parent/home", "PYTHONPATH": "/parent/checkout", "RANDOM_VAR": "1"}
    env = kernel_env(home="/workspace", tmp="/tmp", path="/usr/bin", parent=parent)
    assert env["HOME"] == "/workspace" and env["LANG"] == "en_US.UTF-8"
    assert not {"OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "PYTHONPATH",
                "RANDOM_VAR"} & set(env)
    assert "sk-fake" not in repr(env)
    assert env["OPENBLAS_NUM_THREADS"] == "1" and env["PYTHONHASHSEED"] == "0"


def test_rlimits_follow_limits():
    got = rlimits(Limits(memory_mb=100, cpu_s=7, max_processes=9, file_size_mb=3))
    assert got["RLIMIT_AS"] == [100 * 2**20] * 2
    assert got["RLIMIT_CPU"][0] == 7 and got["RLIMIT_CPU"][1] > 7
    assert got["RLIMIT_NPROC"] == [9, 9] and got["RLIMIT_CORE"] == [0, 0]
    assert got["RLIMIT_FSIZE"] == [3 * 2**20] * 2


def test_bubblewrap_command_mounts_no_repository_or_home(tmp_path):
    layout = Layout(tmp_path / "w", tmp_path / "w" / "data", tmp_path / "ipc", tmp_path / "t")
    cmd = Sandbox("bubblewrap", 654321).command(layout, Limits(), ["{}"])
    for flag in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"):
        assert flag in cmd
    dests = {cmd[i + 2] for i, a in enumerate(cmd) if a in ("--bind", "--ro-bind", "--ro-bind-try")}
    assert (tmp_path / "w" / "data").as_posix() in cmd
    assert cmd[cmd.index(f"{SANDBOX_WORKDIR}/data") - 2] == "--ro-bind"
    writable = {cmd[i + 2] for i, a in enumerate(cmd) if a == "--bind"}
    assert writable == {SANDBOX_WORKDIR, "/run/colabkit"}
    for dest in dests:
        assert not Path(dest).is_relative_to(REPO), dest
        assert Path(dest) != Path.home(), dest
    if sys.prefix != sys.base_prefix:
        assert cmd[cmd.index("-c") - 1] == "/opt/venv/" + Path(sys.executable).relative_to(sys.prefix).as_posix()
    assert bad_bind_sources(cmd, layout) == []
    # the check itself can fail: a bind of the repository, of home or of their ancestor "/"
    end = cmd.index("--")
    for src in (REPO, Path.home(), Path("/"), REPO / "colabkit"):
        assert bad_bind_sources([*cmd[:end], "--ro-bind", str(src), "/mnt", *cmd[end:]], layout) == [str(src)]


_BIND_FLAGS = ("--bind", "--ro-bind", "--ro-bind-try", "--bind-try", "--dev-bind", "--dev-bind-try")
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")


def bad_bind_sources(cmd: list[str], layout: Layout) -> list[str]:
    """Bind sources that are not a system folder, the Python interpreter's installation (the
    venv, its base installation) or the workspace's own folders; and any source that is the
    repository, the home folder, an ancestor of either, or inside the repository."""
    end = cmd.index("--")
    sources = [cmd[i + 1] for i, a in enumerate(cmd[:end]) if a in _BIND_FLAGS]
    interpreter = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.base_exec_prefix)}
    interpreter.add(Path(sys.executable).resolve().parent)
    own = {layout.workdir, layout.datadir, layout.ipcdir}
    bad = []
    for src in sources:
        path = Path(src)
        covers = any(path == p or path in p.parents for p in (REPO.resolve(), Path.home().resolve()))
        allowed = src in _SYSTEM or path in interpreter or path in own
        if covers or not allowed or (path.is_relative_to(REPO.resolve()) and path not in interpreter):
            bad.append(src)
    return bad


def test_open_rejects_missing_and_clashing_files(tmp_path):
    import asyncio

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.csv").write_text("1")
    (tmp_path / "b" / "x.csv").write_text("2")
    with pytest.raises(ColabkitError, match="not found: .*missing.csv"):
        asyncio.run(Workspace.open([tmp_path / "missing.csv"]))
    with pytest.raises(ColabkitError, match="share a name"):
        asyncio.run(Workspace.open([tmp_path / "a" / "x.csv", tmp_path / "b" / "x.csv"]))


def test_kernel_uid_cannot_swap_the_data_copy(tmp_path):
    require(os.geteuid() == 0, "the kernel uid switch happens only as root")
    import subprocess

    from colabkit.workspace.files import prepare as _prepare
    from colabkit.workspace.processes import fresh_uid

    (tmp_path / "x.csv").write_text("a\n1\n")
    layout = Layout(tmp_path / "work", tmp_path / "work" / "data", tmp_path / "ipc", tmp_path / "tmp")
    layout.ipcdir.mkdir()
    uid = fresh_uid()
    _prepare(layout, [tmp_path / "x.csv"], uid)
    attack = ("import os\n"
              f"os.chdir({str(layout.workdir)!r}); os.setgroups([]); os.setgid({uid}); os.setuid({uid})\n"
              "open('mine.txt', 'w').write('ok'); os.remove('mine.txt')\n"
              "open('figures/f.png', 'w').write('ok')\n"
              "try:\n    os.rename('data', 'old')\nexcept PermissionError:\n    print('refused')\n")
    done = subprocess.run([sys.executable, "-c", attack], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "refused"
    assert (layout.datadir / "x.csv").read_text() == "a\n1\n"


def test_open_that_cannot_copy_the_data_leaves_no_folders(tmp_path, monkeypatch):
    import asyncio
    import shutil

    (tmp_path / "x.csv").write_text("a\n1\n")
    root = tmp_path / "root"
    made: list[Path] = []  # this process's socket folders (other processes may make ck-* folders too)
    socket_folder = files_module.socket_folder

    def recording_socket_folder(linked_from):
        made.append(socket_folder(linked_from))
        return made[-1]

    def unreadable(src, dst):
        raise PermissionError(13, "Permission denied", str(src))

    monkeypatch.setattr(shutil, "copyfile", unreadable)
    monkeypatch.setattr(files_module, "socket_folder", recording_socket_folder)
    with pytest.raises(ColabkitError, match="cannot prepare the workspace data: .*x.csv"):
        asyncio.run(Workspace.open([tmp_path / "x.csv"], root=root))
    assert list(root.iterdir()) == []
    assert len(made) == 1 and made[0].name.startswith("ck-")  # the socket folder was made...
    assert not made[0].exists()  # ...and removed, with the private folder


def test_the_socket_folder_is_linked_before_it_exists(tmp_path, monkeypatch):
    """A process killed between making the socket folder (in the system temp dir) and linking
    it from the workspace would leak it: no sweep of the results root could find it. So the
    link comes first: at the instant the folder is made, the sweep can already see it."""
    base = tmp_path / "colabkit-ws-x"
    base.mkdir()
    seen: list[tuple[Path, Path]] = []
    mkdir = Path.mkdir

    def checking_mkdir(self, *args, **kwargs):
        if self.name.startswith("ck-"):
            seen.append((self, Path(os.readlink(base / "ipc"))))
        return mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", checking_mkdir)
    folder = files_module.socket_folder(base)
    try:
        assert seen == [(folder, folder)] and folder.is_dir() and folder.parent == Path(tempfile.gettempdir())
    finally:
        folder.rmdir()


def test_file_listing_skips_data_and_does_not_follow_links(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "task.csv").write_text("a")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "result.txt").write_text("hello")
    (tmp_path / "link").symlink_to("/etc")
    os.mkfifo(tmp_path / "pipe")
    files, omitted = list_files(tmp_path)
    by_path = {f.path: f for f in files}
    assert set(by_path) == {"out/result.txt", "link", "pipe"} and omitted == 0
    assert by_path["out/result.txt"].size == 5 and by_path["out/result.txt"].sha256
    assert by_path["link"].kind == "symlink" and by_path["pipe"].kind == "other"


def test_snapshot_round_trips_through_json(tmp_path):
    report = IsolationReport(level="bubblewrap", network_isolated=True, data_read_only=True,
                             env_allowlisted=True)
    chat = Chat(Clock())
    chat.post("ai", "hi", to=["D"])
    snap = WorkspaceSnapshot(isolation=report, limits=Limits(), data_files=("x.csv",),
                             cells=(_cell(0, "ai"),), messages=tuple(chat.messages),
                             editor_versions=(), events=(), files=())
    path = snap.save(tmp_path / "snap.json")
    assert WorkspaceSnapshot.model_validate_json(path.read_text()) == snap


def test_open_prepares_in_the_workspace_threads_while_the_event_loop_moves(tmp_path, monkeypatch):
    """Opening a workspace (mkfs, mount, the data copy) blocks neither the event loop a batch's
    sessions share nor its default executor, where litellm sets up every model request."""
    import asyncio
    import threading

    from colabkit.workspace import files, kernel

    (tmp_path / "x.csv").write_text("a\n1\n")
    loop_ran = threading.Event()
    threads: list[str] = []
    real_prepare = files.prepare

    def slow_prepare(*args, **kwargs):
        threads.append(threading.current_thread().name)
        loop_ran.wait(30)  # set by a task of the loop: only if the loop runs meanwhile
        return real_prepare(*args, **kwargs)

    async def no_kernel(self):
        return None

    monkeypatch.setattr(files, "prepare", slow_prepare)
    monkeypatch.setattr(kernel.SandboxedKernel, "start", no_kernel)

    async def scenario():
        async def meanwhile():
            while not threads:
                await asyncio.sleep(0.01)
            await asyncio.get_running_loop().run_in_executor(None, loop_ran.set)

        other = asyncio.create_task(meanwhile())
        ws = await Workspace.open([tmp_path / "x.csv"], root=tmp_path / "root")
        await other
        await ws.close()

    asyncio.run(scenario())
    assert loop_ran.is_set()
    assert threads and all(name.startswith("colabkit-workspace") for name in threads)


@pytest.mark.parametrize("kind", ["cold", "warm"])
def test_kernel_start_slots_admit_one_start_per_slot_in_arrival_order(monkeypatch, kind):
    import asyncio

    from colabkit.workspace import slots

    monkeypatch.setattr(slots, "STARTS_AT_ONCE", 2)
    monkeypatch.setattr(slots, "WARM_STARTS_AT_ONCE", 3)
    inside: list[int] = []
    peak = 0
    order: list[int] = []

    async def start(i: int) -> None:
        nonlocal peak
        async with slots.start_slot(kind):
            inside.append(i)
            order.append(i)
            peak = max(peak, len(inside))
            for _ in range(3):
                await asyncio.sleep(0)
            inside.remove(i)

    async def scenario():
        await asyncio.gather(*(start(i) for i in range(7)))

    asyncio.run(scenario())
    asyncio.run(scenario())  # a second event loop gets its own slots
    assert peak == {"cold": 2, "warm": 3}[kind] and order == list(range(7)) * 2


def test_warm_and_cold_starts_hold_separate_slots(monkeypatch):
    import asyncio

    from colabkit.workspace import slots

    monkeypatch.setattr(slots, "STARTS_AT_ONCE", 1)
    monkeypatch.setattr(slots, "WARM_STARTS_AT_ONCE", 1)

    async def warm_start() -> str:
        async with slots.start_slot("warm"):
            return "started"

    async def scenario() -> str:  # a cold start in progress does not hold back a warm one
        async with slots.start_slot("cold"):
            return await asyncio.wait_for(warm_start(), 30)  # shared slots would never enter

    assert asyncio.run(scenario()) == "started"


def test_a_start_whose_first_cell_is_waiting_is_served_before_earlier_queued_ones(monkeypatch):
    # 64 sessions on 2 cores: a session whose first answer came early waited at its first
    # cell behind the starts of sessions that did not need their kernel yet
    import asyncio

    from colabkit.workspace import slots

    monkeypatch.setattr(slots, "WARM_STARTS_AT_ONCE", 1)
    order: list[str] = []

    async def start(name: str, release: asyncio.Event | None = None) -> None:
        async with slots.start_slot("warm", ticket=name):
            order.append(name)
            if release is not None:
                await release.wait()

    async def scenario() -> None:
        release = asyncio.Event()
        first = asyncio.create_task(start("a", release))  # holds the only slot
        await asyncio.sleep(0)
        queued = [asyncio.create_task(start(name)) for name in ("b", "c", "d", "e")]
        await asyncio.sleep(0)
        slots.hurry("d")
        slots.hurry("c")
        slots.hurry("nobody")  # not waiting: nothing happens
        cancelled = queued[3]
        cancelled.cancel()  # a waiter that goes away gives up its place, not the slot
        release.set()
        await asyncio.gather(first, *queued[:3])
        await asyncio.gather(cancelled, return_exceptions=True)
        async with slots.start_slot("warm", ticket="f"):  # the slot came back
            order.append("f")

    asyncio.run(scenario())
    assert order == ["a", "d", "c", "b", "f"]


def test_a_start_already_needed_when_it_queues_is_served_first(monkeypatch):
    # its first cell came while the workspace was still being filled: `hurry` found nothing
    # queued then, so the start says so itself when it queues
    import asyncio

    from colabkit.workspace import slots

    monkeypatch.setattr(slots, "WARM_STARTS_AT_ONCE", 1)
    order: list[str] = []

    async def start(name: str, hurried: bool = False, release: asyncio.Event | None = None) -> None:
        async with slots.start_slot("warm", ticket=name, hurried=hurried):
            order.append(name)
            if release is not None:
                await release.wait()

    async def scenario() -> None:
        release = asyncio.Event()
        first = asyncio.create_task(start("a", release=release))
        await asyncio.sleep(0)
        later = [asyncio.create_task(start("b")), asyncio.create_task(start("c"))]
        await asyncio.sleep(0)
        needed = asyncio.create_task(start("d", hurried=True))
        await asyncio.sleep(0)
        release.set()
        await asyncio.gather(first, *later, needed)

    asyncio.run(scenario())
    assert order == ["a", "d", "b", "c"]


def test_fresh_uids_are_never_in_use_never_repeated_in_a_process_and_proc_is_read_once_a_second(monkeypatch):
    from colabkit.workspace import processes

    reads: list[int] = []

    def fake_processes():
        reads.append(1)
        return iter([(Path("/proc/1"), 200_007), (Path("/proc/2"), 0)])

    draws = iter([7, 7, 8, 8, 8, 9])  # 200_007 is in use; 200_008 is handed out once
    monkeypatch.setattr(processes, "_processes", fake_processes)
    monkeypatch.setattr(processes.secrets, "randbelow", lambda n: next(draws))
    monkeypatch.setattr(processes, "_SEEN_IN_USE", (-1e9, frozenset()))
    monkeypatch.setattr(processes, "_HANDED_OUT", set())
    assert [processes.fresh_uid(), processes.fresh_uid()] == [200_008, 200_009]
    assert len(reads) == 1  # the second draw used the same read
    monkeypatch.setattr(processes, "_SEEN_IN_USE", (-1e9, processes._SEEN_IN_USE[1]))  # a second later
    monkeypatch.setattr(processes.secrets, "randbelow", lambda n: 10)
    assert processes.fresh_uid() == 200_010 and len(reads) == 2


def test_the_warm_start_waits_on_descriptors_numbered_past_select_s_limit():
    # A batch of 64 sessions holds over 1,024 descriptors; select() refused them, and three
    # warm starts of such a batch failed ("filedescriptor out of range in select()").
    import resource

    from colabkit.workspace import warm

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    require(hard == resource.RLIM_INFINITY or hard > 2000, f"the descriptor limit here is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2001) if soft != resource.RLIM_INFINITY else soft, hard))
    reader, writer = os.pipe()
    high = os.dup2(reader, 2000)
    try:
        assert not warm.readable(high, 0.01)
        os.write(writer, b"ready\n")
        assert warm.readable(high, 0.01)
    finally:
        for fd in (high, reader, writer):
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_stale_mounts_are_swept_at_a_processs_first_quota_then_once_an_interval(monkeypatch):
    """A sweep reads every mount and owner: one per workspace made a batch's 64 workspaces
    do 64 x 64 reads while their kernels started. Not swept again within the interval."""
    from colabkit.workspace import quota

    calls = []
    monkeypatch.setattr(quota, "sweep_stale", lambda: calls.append(1) or [])
    monkeypatch.setattr(quota, "_last_sweep", None)
    for _ in range(5):
        quota._sweep_now_and_then()
    assert len(calls) == 1
    monkeypatch.setattr(quota, "_last_sweep", quota._last_sweep - quota.SWEEP_EVERY_S)
    quota._sweep_now_and_then()
    assert len(calls) == 2
