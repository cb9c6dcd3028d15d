"""A session whose kernel will not start: retried once inside the session, then ended as
infrastructure ("kernel_unavailable", rerun without being asked), its logs kept in the
session's folder where its error says they are; `colabkit run --retry-errors` reruns a crash."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.scripted import use_scripted

from colabkit.cli import main
from colabkit.errors import ColabkitError
from colabkit.llm import ModelConfig
from colabkit.runner import record_session
from colabkit.session import SessionSpec
from colabkit.store import SessionRecord
from colabkit.tasks import load_tasks
from colabkit.team import variant
from colabkit.workspace import kernel as kernel_module
from colabkit.workspace import workspace as workspace_module

TASK = load_tasks().get("demo_archaeology/0/0")
SCRIPT = [{"thought": "look", "action": "execute_code", "content": "print(6 * 7)"},
          {"thought": "write", "action": "edit_result", "content": "Axes peak in the 12th century BCE."},
          {"thought": "done", "action": "finish", "content": "checked"}]
WAIT = {"thought": "nothing to add", "action": "wait"}
START_FAILED = "boot: the sandbox's python died before ipykernel answered"


def spec() -> SessionSpec:
    return SessionSpec(task_id=TASK.id, variant=variant("single"), seed=0, models={"ai": ModelConfig(model="scripted/ai")})


@pytest.fixture
def failing_starts(monkeypatch):
    """Make the next `n[0]` kernel starts fail as a dying kernel does: a line in its log, then the error."""
    real_start = kernel_module.SandboxedKernel.start
    left = [0]

    async def start(self):
        if left[0] > 0:
            left[0] -= 1
            with open(self.log_path, "a") as log:
                log.write(START_FAILED + "\n")
            raise ColabkitError(f"workspace kernel failed to start: it exited with status 1; see {self.log_path}")
        await real_start(self)

    monkeypatch.setattr(kernel_module.SandboxedKernel, "start", start)
    monkeypatch.setattr(workspace_module, "KERNEL_RETRY_PAUSE_S", 0.0)
    return left


def test_a_kernel_start_that_fails_once_is_retried_and_its_log_kept(tmp_path, failing_starts):
    failing_starts[0] = 1
    use_scripted({"ai": list(SCRIPT)}, default=WAIT)
    folder = record_session(spec(), TASK, out=tmp_path)
    record = SessionRecord.model_validate_json((folder / "session.json").read_bytes())
    kinds = [e.kind for e in record_snapshot_events(folder)]
    assert record.ended_by == "finish" and kinds[:2] == ["kernel_start_retry", "kernel_started"]
    assert START_FAILED in (folder / "logs" / "kernel.log").read_text()  # kept: the start had trouble
    assert "kernel_start_retry: attempt 1 failed" in (folder / "logs" / "workspace.log").read_text()


def test_a_kernel_that_fails_twice_ends_the_session_as_rerunnable_infrastructure(tmp_path, failing_starts, capsys):
    failing_starts[0] = 2
    use_scripted({"ai": list(SCRIPT)}, default=WAIT)
    args = ["run", "--task", TASK.id, "--variant", "single", "--seed", "0", "--model", "scripted/ai",
            "--out", str(tmp_path), "--quiet"]
    assert main(args) == 2
    out, err = capsys.readouterr()
    folder = Path(out.splitlines()[0].removeprefix("session: "))
    record = SessionRecord.model_validate_json((folder / "session.json").read_bytes())
    logs = folder / "logs"
    assert record.ended_by == "kernel_unavailable"
    assert f"logs kept: {logs}" in out and "did not start in 2 attempts" in err
    assert str(logs / "kernel.log") in err  # the error names where the log is, and it is there
    assert (logs / "kernel.log").read_text().count(START_FAILED) == 2
    assert "ended by kernel_unavailable" in (logs / "host.log").read_text()
    assert "load average" in (logs / "host.log").read_text()
    # no result: asking again reruns it without a flag, and a clean run keeps no logs
    use_scripted({"ai": list(SCRIPT)}, default=WAIT)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "already finished" not in out and "ended by: finish" in out
    assert not logs.exists()


def test_run_retry_errors_reruns_a_crashed_session_and_only_with_the_flag(tmp_path, monkeypatch, capsys):
    from colabkit.session import run as run_module

    async def crash(self):
        raise RuntimeError("a bug in the engine")

    real_play = run_module._Session.play
    monkeypatch.setattr(run_module._Session, "play", crash)
    args = ["run", "--task", TASK.id, "--variant", "single", "--seed", "0", "--model", "scripted/ai",
            "--out", str(tmp_path), "--quiet"]
    use_scripted({"ai": list(SCRIPT)}, default=WAIT)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "ended by: error" in out and "rerun: the same command with --retry-errors" in out
    host = (Path(out.splitlines()[0].removeprefix("session: ")) / "logs" / "host.log").read_text()
    assert "ended by error" in host and "RuntimeError: a bug in the engine" in host  # with its traceback
    monkeypatch.setattr(run_module._Session, "play", real_play)
    assert main(args) == 0
    assert "already finished: not rerun" in capsys.readouterr().out
    use_scripted({"ai": list(SCRIPT)}, default=WAIT)
    assert main([*args, "--retry-errors"]) == 0
    out = capsys.readouterr().out
    assert "already finished" not in out and "ended by: finish" in out


def record_snapshot_events(folder):
    from colabkit.workspace import WorkspaceSnapshot

    return WorkspaceSnapshot.model_validate_json((folder / "snapshot.json").read_bytes()).events
