"""The workspace with a real sandboxed kernel: state, errors, data, figures, output caps,
snapshot, views, recovery and clean-up.  One workspace is shared where state does not matter."""

import asyncio
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers.env import require

from colabkit.workspace import KernelUnavailable, Limits, Workspace, WorkspaceSnapshot, isolation, quota, warm

CSV = "year,capital,region\n2000,1.5,north\n2001,2.5,south\n2002,4.0,north\n"


def kernel_pids(marker: str) -> list[int]:
    """Host pids whose command line mentions `marker` (a workspace's private path)."""
    pids = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def describe_pid(pid: int) -> str:
    """`pid (state, parent): command line`, for a failure message."""
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
        cmdline = (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
    except OSError:
        return f"{pid} (gone)"
    return f"{pid} (state {stat[0]}, parent {stat[1]}): {cmdline}"


@pytest.fixture(scope="module")
def task_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("task") / "capital.csv"
    path.write_text(CSV)
    return path


@pytest.fixture(scope="module")
def runner():
    with asyncio.Runner() as r:
        yield r


@pytest.fixture(scope="module")
def ws(runner, task_file, tmp_path_factory):
    limits = Limits(cell_timeout_s=30, output_chars=2000)
    w = runner.run(Workspace.open([task_file], root=tmp_path_factory.mktemp("ws"), limits=limits))
    yield w
    runner.run(w.close())


def run(runner, ws, code, author="ai", **kw):
    return runner.run(ws.execute(textwrap.dedent(code), author=author, **kw))


def test_bubblewrap_is_used_when_available(ws):
    require(sys.platform.startswith("linux") and shutil.which("bwrap") is not None, "bubblewrap not installed")
    assert ws.isolation.level == "bubblewrap", ws.isolation.notes
    assert ws.isolation.network_isolated and ws.isolation.host_files_hidden
    assert ws.isolation.data_read_only and ws.isolation.env_allowlisted
    # so the tests below run on a warm kernel wherever one is possible (the default start)
    warm_here = warm.mode() != "cold" and warm.unavailable(isolation.choose("auto")[0]) is None
    assert ws.isolation.kernel_start == ("warm" if warm_here else "cold"), ws.isolation


def test_state_persists_across_cells(runner, ws):
    assert run(runner, ws, "x = 40").status == "ok"
    run(runner, ws, "x += 2")
    cell = run(runner, ws, "print(x)")
    assert (cell.status, cell.output) == ("ok", "42\n")


def test_raising_cell_is_an_error_with_traceback(runner, ws):
    cell = run(runner, ws, """
        print("before")
        def inner():
            return 1 / 0
        inner()
    """)
    assert cell.status == "error" and cell.output == "before\n"
    assert cell.error.startswith("ZeroDivisionError: division by zero")
    assert "Traceback" in cell.error and "inner()" in cell.error and "\x1b[" not in cell.error
    assert not cell.restarted


def test_task_data_is_read_with_pandas_from_data_folder(runner, ws):
    cell = run(runner, ws, """
        import pandas as pd
        df = pd.read_csv("data/capital.csv")
        print(df.shape, df["capital"].sum())
    """)
    assert cell.output == "(3, 3) 8.0\n", cell.error


def test_scientific_stack_is_importable(runner, ws):
    cell = run(runner, ws, """
        import numpy, scipy.stats, statsmodels.formula.api as smf, sklearn.linear_model, matplotlib
        fit = smf.ols("capital ~ year", data=df).fit()
        print(round(fit.params["year"], 2))
    """)
    assert (cell.status, cell.output) == ("ok", "1.25\n"), cell.error


def test_last_expression_is_shown(runner, ws):
    assert run(runner, ws, "6 * 7").output == "42\n"


def test_figures_are_saved_as_png_and_reported_by_path(runner, ws):
    cell = run(runner, ws, """
        import matplotlib.pyplot as plt
        plt.plot(df["year"], df["capital"])
        plt.show()
    """)
    assert cell.status == "ok", cell.error
    assert len(cell.images) == 1 and cell.images[0].endswith(".png")
    assert (ws.workdir / cell.images[0]).read_bytes()[:4] == b"\x89PNG"
    assert cell.images[0] in cell.output


def test_long_output_is_truncated_with_an_exact_note(runner, ws):
    cell = run(runner, ws, "for i in range(1000): print('%09d' % i)")  # 10,000 characters
    assert cell.truncated and cell.status == "ok"
    assert cell.output.startswith("000000000\n000000001\n")
    assert "8,000 more characters were dropped" in cell.output
    assert len(cell.output) < 2000 + 200


def test_timeout_can_be_set_per_cell(runner, ws):
    cell = run(runner, ws, "import time; time.sleep(30)", timeout=1)
    assert cell.status == "timeout" and not cell.restarted
    assert cell.error.startswith("CellTimeout: the cell ran longer than 1 s and was interrupted")
    assert run(runner, ws, "print(x)").output == "42\n"


def test_snapshot_records_cells_chat_editor_and_created_files(runner, ws, tmp_path):
    run(runner, ws, """
        import os
        os.makedirs("out", exist_ok=True)
        df.to_csv("out/summary.csv", index=False)
    """)
    ws.chat.post("ai", "saved a summary")
    ws.editor.write("ai", "Capital grows with year.")
    snap = ws.snapshot()
    paths = {f.path: f for f in snap.files}
    assert "out/summary.csv" in paths and not any(p.startswith("data/") for p in paths)
    digest = hashlib.sha256((ws.workdir / "out" / "summary.csv").read_bytes()).hexdigest()
    assert paths["out/summary.csv"].sha256 == digest
    assert any(p.startswith("figures/") for p in paths)
    assert snap.editor_versions[-1].text == "Capital grows with year."
    assert snap.messages[-1].text == "saved a summary" and snap.data_files == ("capital.csv",)
    assert [c.index for c in snap.cells] == list(range(len(ws.cells)))
    assert snap.events[0].kind == "kernel_started"
    loaded = WorkspaceSnapshot.model_validate_json(snap.save(tmp_path / "s.json").read_text())
    assert loaded == snap


@pytest.mark.slow
def test_kernel_killed_between_cells_is_restarted_and_replayed(runner, ws):
    # Its own state, so the test does not depend on which tests ran before it.
    setup = run(runner, ws, "import pandas as pd\nx = 42\ndf = pd.DataFrame([[1, 2, 3]] * 3)")
    assert setup.status == "ok", setup.error
    pids = kernel_pids(str(ws.workdir))
    assert pids, "the kernel's sandbox should be visible on the host"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.3)
    cell = run(runner, ws, "print(x, df.shape)")
    assert cell.restarted and cell.output == "42 (3, 3)\n", cell.error
    kinds = [e.kind for e in ws.events]
    assert "restarted" in kinds and "replayed" in kinds


def test_close_leaves_no_kernel_process(task_file):
    async def scenario():
        ws = await Workspace.open([task_file])
        await ws.execute("import os; kid = os.fork() or __import__('time').sleep(60)", author="ai")
        marker, uid = str(ws.workdir), ws.isolation.kernel_uid
        assert kernel_pids(marker)
        await ws.close()
        return ws, marker, uid

    ws, marker, uid = asyncio.run(scenario())
    assert kernel_pids(marker) == []
    if uid is not None:
        assert not [e for e in Path("/proc").glob("[0-9]*") if _owner(e) == uid and _alive(e)]
    assert not ws.workdir.exists()  # no root given: the private folder is deleted
    assert ws.snapshot().cells[0].status == "ok"


def _alive(entry):
    try:
        return (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _owner(entry):
    try:
        return entry.stat().st_uid
    except OSError:
        return None


def test_kernel_dies_with_its_owner_process(task_file, tmp_path):
    script = textwrap.dedent(f"""
        import asyncio, os, sys
        from colabkit.workspace import Workspace
        async def main():
            ws = await Workspace.open([{str(task_file)!r}], root={str(tmp_path)!r})
            print(ws.workdir, ws._layout.ipcdir, flush=True)  # the socket folder, to clean up
            sys.stdin.readline()  # the test first sees the live kernel
            os.kill(os.getpid(), 9)
        asyncio.run(main())
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        marker, ipcdir = proc.stdout.readline().split()
        assert kernel_pids(marker), "the marker matches no live kernel"
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == -9, proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()
    # The sandbox's pid namespace is torn down by the kernel once bwrap gets its parent-death
    # signal; on a loaded machine that can take seconds, so the wait is generous and a failure
    # says what is left (state and command line) instead of a bare pid.
    deadline = time.monotonic() + 30
    while kernel_pids(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    shutil.rmtree(ipcdir)  # a SIGKILLed owner cannot clean up after itself
    assert kernel_pids(marker) == [], [describe_pid(pid) for pid in kernel_pids(marker)]
    # nor unmount its quota file system: the next workspace does (as root, where it mounts one)
    mounted = Path(marker)
    if os.path.ismount(mounted):
        assert mounted in quota.sweep_stale() and not os.path.ismount(mounted)


def test_rlimits_only_fallback_still_allowlists_and_limits(task_file, capfd, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-fallback")

    async def scenario():
        async with await Workspace.open([task_file], isolation="rlimits-only",
                                        limits=Limits(memory_mb=1500)) as ws:
            cell = await ws.execute(
                "import os, resource\n"
                "print(os.environ.get('OPENAI_API_KEY'), resource.getrlimit(resource.RLIMIT_AS)[0])\n"
                "import pandas as pd; print(pd.read_csv('data/capital.csv').shape)", author="ai")
            return ws.isolation, cell

    isolation._announce.cache_clear()  # the warning is printed once per process
    report, cell = asyncio.run(scenario())
    assert report.level == "rlimits-only" and not report.network_isolated
    assert not report.host_files_hidden and any("WEAK" in n for n in report.notes)
    assert cell.output == f"None {1500 * 2**20}\n(3, 3)\n", cell.error
    assert "WEAK kernel isolation" in capfd.readouterr().err


def test_a_task_file_that_is_not_a_table_is_copied_and_briefed_as_a_file(runner, tmp_path):
    from colabkit.tasks import load_tasks
    from colabkit.team.briefing import private_briefing

    odd = Path(__file__).resolve().parent / "fixtures" / "odd"
    task = load_tasks(odd).get("plant_invasions/0/0")
    briefing = private_briefing("D", task)
    assert "data/phylogenetic_tree.txt (0 columns): Phylogeny of the non-native species." in briefing
    assert "not a table but a .txt file: open it directly" in briefing
    assert "tab-separated: read with sep='\\t'" in briefing  # the .csv beside it
    ws = runner.run(Workspace.open(task.data_files, root=tmp_path))
    try:
        cell = run(runner, ws, """
            import pandas as pd
            tree = open("data/phylogenetic_tree.txt").read()
            print(tree.count("("), tree.strip()[-1])
            print(pd.read_csv("data/invasion_success.csv", sep="\\t").shape)
        """)
    finally:
        runner.run(ws.close())
    assert ws.data_files == ("invasion_success.csv", "phylogenetic_tree.txt")
    assert (cell.status, cell.output) == ("ok", "5 ;\n(6, 5)\n"), cell.error


def test_a_kernel_started_in_the_background_serves_the_first_cell(task_file, tmp_path):
    async def scenario():
        ws = await Workspace.open([task_file], root=tmp_path, start_kernel="background")
        assert ws.events == []  # open returned before the kernel was up
        cell = await ws.execute("import pandas as pd; print(pd.read_csv('data/capital.csv').shape)", author="ai")
        await ws.close()
        return ws, cell

    ws, cell = asyncio.run(scenario())
    assert cell.status == "ok" and cell.output == "(3, 3)\n" and not cell.restarted
    assert [e.kind for e in ws.events] == ["kernel_started"]


def test_a_background_kernel_start_that_fails_twice_is_raised_at_the_first_cell_and_recorded(task_file, tmp_path,
                                                                                             monkeypatch):
    tries = []

    async def broken(self):
        tries.append(self)
        raise RuntimeError("no kernel today")

    monkeypatch.setattr("colabkit.workspace.workspace.SandboxedKernel.start", broken)
    monkeypatch.setattr("colabkit.workspace.workspace.KERNEL_RETRY_PAUSE_S", 0.0)

    async def scenario():
        ws = await Workspace.open([task_file], root=tmp_path, start_kernel="background")
        with pytest.raises(KernelUnavailable, match="did not start in 2 attempts; the last: RuntimeError: no kernel today"):
            await ws.execute("print(1)", author="ai")
        await ws.close()
        return ws

    ws = asyncio.run(scenario())
    assert len(tries) == 2  # retried once, as infrastructure
    assert ws.cells == [] and [e.kind for e in ws.events] == ["kernel_start_retry", "kernel_start_failed"]


def test_closing_while_the_kernel_still_starts_leaves_no_kernel_process(task_file, tmp_path):
    async def scenario():
        ws = await Workspace.open([task_file], root=tmp_path, start_kernel="background")
        marker = str(ws.workdir)
        await ws.close()  # at once: the start is still running
        return ws, marker

    ws, marker = asyncio.run(scenario())
    assert kernel_pids(marker) == [] and [e.kind for e in ws.events] == ["kernel_started"]


def test_background_kernel_starts_queue_for_the_start_slots_and_every_kernel_serves(task_file, tmp_path,
                                                                                      monkeypatch):
    from colabkit.workspace import kernel, slots

    monkeypatch.setattr(slots, "STARTS_AT_ONCE", 1)
    monkeypatch.setattr(slots, "WARM_STARTS_AT_ONCE", 1)
    real_start = kernel.SandboxedKernel.start
    starting: list[object] = []
    peak = 0

    async def counted(self):
        nonlocal peak
        starting.append(self)
        peak = max(peak, len(starting))
        try:
            await real_start(self)
        finally:
            starting.remove(self)

    monkeypatch.setattr(kernel.SandboxedKernel, "start", counted)

    async def scenario():
        spaces = [await Workspace.open([task_file], root=tmp_path / str(i), start_kernel="background")
                  for i in range(3)]
        cells = await asyncio.gather(*(ws.execute("print(6 * 7)", author="ai") for ws in spaces))
        for ws in spaces:
            await ws.close()
        return spaces, cells

    spaces, cells = asyncio.run(scenario())
    assert peak == 1
    assert [(c.status, c.output) for c in cells] == [("ok", "42\n")] * 3
    assert all([e.kind for e in ws.events] == ["kernel_started"] for ws in spaces)


def test_a_workspace_whose_first_cell_waits_gets_the_next_start_slot(task_file, tmp_path, monkeypatch):
    # the start queue serves first the sessions already waiting at their first cell
    from colabkit.workspace import kernel, slots

    monkeypatch.setattr(slots, "STARTS_AT_ONCE", 1)
    monkeypatch.setattr(slots, "WARM_STARTS_AT_ONCE", 1)
    real_start = kernel.SandboxedKernel.start
    started: list[object] = []

    async def recorded(self):
        started.append(self)
        await real_start(self)

    monkeypatch.setattr(kernel.SandboxedKernel, "start", recorded)

    async def scenario():
        release = asyncio.Event()

        async def holder():  # holds both kinds' only slot while the workspaces queue behind it
            async with slots.start_slot("cold"), slots.start_slot("warm"):
                await release.wait()

        async def queued(ws):  # its folder filled in the background, its start queued for a slot
            while not any(ws in found._waiting for found in slots._slots().values()):
                await asyncio.sleep(0.01)

        held = asyncio.create_task(holder())
        await asyncio.sleep(0)
        spaces = []
        for i in range(3):  # one after another: the arrival order is the opening order
            spaces.append(await Workspace.open([task_file], root=tmp_path / str(i), start_kernel="background"))
            await asyncio.wait_for(queued(spaces[-1]), 60)
        cell = asyncio.create_task(spaces[2].execute("print(6 * 7)", author="ai"))  # the last one needs it now
        await asyncio.sleep(0.05)
        release.set()
        await held
        result = await cell
        for ws in spaces:
            await ws.close()
        return spaces, result

    spaces, result = asyncio.run(scenario())
    assert (result.status, result.output) == ("ok", "42\n")
    assert started[:3] == [spaces[2]._kernel, spaces[0]._kernel, spaces[1]._kernel]


def test_a_close_cancelled_twice_still_kills_the_kernel_and_removes_every_folder(task_file):
    # Ctrl-C on a batch cancels the sessions, and a second signal or a stopping batch may
    # cancel their closes again: the kill, unmount and deletes must still all happen.
    async def scenario():
        ws = await Workspace.open([task_file])
        assert (await ws.execute("print(1)", author="ai")).status == "ok"
        marker, ipcdir = str(ws.workdir), ws._layout.ipcdir
        assert kernel_pids(marker)
        closing = asyncio.ensure_future(ws.close())
        for _ in range(2):
            await asyncio.sleep(0)
            closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        return ws, marker, ipcdir

    ws, marker, ipcdir = asyncio.run(scenario())
    assert kernel_pids(marker) == []
    assert not ws.workdir.exists() and not ipcdir.exists()


def test_a_background_open_returns_before_its_folder_is_filled_and_its_first_cell_waits(task_file, tmp_path,
                                                                                        monkeypatch):
    """A session's first model requests need neither the data nor the kernel: with
    `start_kernel="background"` the mount and the data copy run with the kernel start, after
    `open` returned. The first cell waits for both; the isolation report is, after the close,
    the one a workspace opened at once records."""
    import threading

    from colabkit.workspace import files as files_module

    filled = threading.Event()
    real_prepare = files_module.prepare

    def held_prepare(*args, **kwargs):
        assert filled.wait(60)
        return real_prepare(*args, **kwargs)

    async def scenario():
        monkeypatch.setattr(files_module, "prepare", held_prepare)
        ws = await asyncio.wait_for(Workspace.open([task_file], root=tmp_path / "bg", start_kernel="background"), 30)
        assert not filled.is_set()  # open returned while the data copy was still held
        first = asyncio.create_task(ws.execute("print(open('data/capital.csv').read())", author="ai"))
        await asyncio.sleep(0.5)
        assert not first.done()  # the cell waits for the folder and the kernel
        filled.set()
        cell = await asyncio.wait_for(first, 120)
        await ws.close()
        monkeypatch.setattr(files_module, "prepare", real_prepare)
        at_once = await Workspace.open([task_file], root=tmp_path / "now")
        await at_once.close()
        return ws, cell, at_once

    ws, cell, at_once = asyncio.run(scenario())
    assert (cell.status, cell.output) == ("ok", CSV + "\n"), cell

    def without_uid(report):  # each kernel has its own throw-away uid
        found = report.model_dump(exclude={"kernel_uid"})
        found["notes"] = tuple(note.replace(str(report.kernel_uid), "<uid>") for note in found["notes"])
        return found

    background = without_uid(ws.isolation)
    assert background == without_uid(at_once.isolation)
    assert background["disk_quota_enforced_by"] is not None and background["kernel_start"] is not None


def test_a_session_that_ends_before_its_folder_is_filled_closes_cleanly(task_file, tmp_path, monkeypatch):
    """Closing while the background fill runs waits for it (and the kernel it starts), then
    removes everything: no kernel, no mount, no folder outside the kept record."""
    import threading

    from colabkit.workspace import files as files_module

    filled = threading.Event()
    real_prepare = files_module.prepare

    def held_prepare(*args, **kwargs):
        assert filled.wait(60)
        return real_prepare(*args, **kwargs)

    monkeypatch.setattr(files_module, "prepare", held_prepare)

    async def scenario():
        ws = await Workspace.open([task_file], start_kernel="background")
        closing = asyncio.create_task(ws.close())
        await asyncio.sleep(0.3)
        assert not closing.done()
        filled.set()
        await asyncio.wait_for(closing, 120)
        return ws

    ws = asyncio.run(scenario())
    assert not ws._base.exists() and not ws._layout.ipcdir.exists()
    assert ws.isolation.disk_quota_enforced_by is not None
    assert ws.snapshot().files == ()
