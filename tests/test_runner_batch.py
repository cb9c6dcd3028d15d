"""Many sessions in one process: bounded, resumable, failures recorded, cancellation clean,
and sessions held by another process waited for, never run twice (scripted model, real kernels)."""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
import time
from pathlib import Path

import pytest
import yaml
from helpers.scripted import use_scripted

from colabkit.runner import arun_sessions, load_experiment, read_journal, run_experiment
from colabkit.runner import recorder as recorder_module
from colabkit.runner.workarea import SessionLock, session_work_dir, sweep
from colabkit.store import SessionRecord, atomic_write_text, is_finished, load_sessions, session_dir
from colabkit.workspace import kernel as kernel_module

CODE = {"thought": "look", "action": "execute_code", "content": "print(6 * 7)"}


def experiment(tmp_path: Path, **fields) -> Path:
    data = {"name": "b", "tasks": {"ids": ["demo_archaeology/0/0"]}, "variants": ["single", "default-dr"],
            "seeds": [0, 1], "models": {"default": "scripted/everyone"},
            "settings": {"action_budget": 2, "max_rounds": 2}, "results": str(tmp_path / "results"), **fields}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def workspaces(out: Path) -> list[Path]:
    """Workspace folders in the work area (lock files are not workspaces)."""
    root = out / ".work"
    return [p for p in root.iterdir() if p.is_dir()] if root.is_dir() else []


def test_a_batch_runs_each_session_once_and_a_rerun_finds_them_all_cached(tmp_path):
    model = use_scripted({}, default=CODE)
    path = experiment(tmp_path)
    exp = load_experiment(path)
    summary = run_experiment(path, progress=False)
    out = exp.folder()
    assert [o.status for o in summary.outcomes] == ["done"] * 4
    assert [o.session_id for o in summary.outcomes] == [spec.session_id for spec, _ in exp.sessions()]
    assert sorted(load_sessions(out).session_id) == sorted(o.session_id for o in summary.outcomes)
    assert sum(o.tokens for o in summary.outcomes) > 0 and len(model.calls) > 0
    journal = read_journal(out)
    assert sorted(journal.session_id) == sorted(o.session_id for o in summary.outcomes)
    assert set(journal.status) == {"done"} and set(journal.pid) == {os.getpid()}
    assert workspaces(out) == []
    # the batch report: per variant, the AI's steps used (mean, min, max), the endings, expired requests
    per_variant = summary.by_variant().set_index("variant")
    assert per_variant.loc["single", ["ai_steps_mean", "ai_steps_min", "ai_steps_max"]].tolist() == [2, 2, 2]
    assert per_variant.loc["default-dr", "ai_steps_max"] == 2  # the humans' steps did not end it early
    assert per_variant.loc["single", "endings"] == "budget 2" and per_variant["expired_requests"].tolist() == [0, 0]
    assert "ai_steps_mean" in summary.report() and "budget 2" in summary.report()

    again = use_scripted({}, default=CODE)
    rerun = run_experiment(path, progress=False)
    assert [o.status for o in rerun.outcomes] == ["cached"] * 4 and again.calls == []
    assert len(read_journal(out)) == 4  # cached sessions are not attempts
    assert "4 sessions: 0 done, 0 failed, 4 cached" in rerun.line()
    assert rerun.by_variant().equals(summary.by_variant())  # cached sessions report from their records


def test_sessions_run_concurrently_up_to_the_kernel_cap(tmp_path, monkeypatch):
    live, peak = 0, 0
    real = recorder_module.run_session

    async def counting(*args, **kwargs):
        nonlocal live, peak
        live += 1
        peak = max(peak, live)
        try:
            return await real(*args, **kwargs)
        finally:
            live -= 1

    monkeypatch.setattr(recorder_module, "run_session", counting)
    use_scripted({}, default=CODE)
    exp = load_experiment(experiment(tmp_path, seeds=[0, 1, 2], concurrency={"sessions": 4, "kernels": 2}))
    summary = run_experiment(exp, progress=False)
    assert summary.count("done") == 6
    assert peak == 2  # in parallel, and never past the kernel cap


def test_a_session_that_cannot_start_is_recorded_as_failed_and_the_batch_goes_on(tmp_path):
    use_scripted({}, default=CODE)
    exp = load_experiment(experiment(tmp_path))
    items = exp.sessions()
    spec, task = items[1]
    broken = task.model_copy(update={"datasets": tuple(d.model_copy(update={"path": tmp_path / "gone.csv"})
                                                       for d in task.datasets)})
    items[1] = (spec, broken)
    out = tmp_path / "out"
    summary = asyncio.run(arun_sessions(items, out=out, progress=False))
    statuses = [o.status for o in summary.outcomes]
    assert statuses == ["done", "failed", "done", "done"]
    failed = summary.outcomes[1]
    assert "workspace data file not found" in (failed.error or "") and failed.session_id == spec.session_id
    assert not is_finished(session_dir(spec, out))  # never read as finished
    assert read_journal(out).set_index("session_id").loc[spec.session_id, "status"] == "failed"
    assert workspaces(out) == []
    assert "1 failed" in summary.line()


def test_a_provider_refusal_stops_the_batch_once_and_a_rerun_resumes(tmp_path):
    import litellm

    from colabkit.errors import ColabkitError
    from colabkit.runner.batch import ProviderRefused

    refusal = litellm.AuthenticationError("HTTP 401 bad key", llm_provider="scripted", model="everyone")
    use_scripted({"everyone": [refusal] * 4}, default=CODE)
    exp = load_experiment(experiment(tmp_path))
    out = tmp_path / "out"
    with pytest.raises(ProviderRefused, match=r"bad key.*1 session\(s\) stopped by the provider, 3 not started"):
        asyncio.run(arun_sessions(exp.sessions(), out=out, sessions=1, progress=False))
    first = exp.sessions()[0][0]
    assert SessionRecord.model_validate_json((session_dir(first, out) / "session.json").read_text()).ended_by \
        == "provider_error"
    assert sum(is_finished(session_dir(spec, out)) for spec, _ in exp.sessions()) == 1  # the others never started
    use_scripted({}, default=CODE)  # the key is fixed: the refused session is no result and runs again
    summary = asyncio.run(arun_sessions(exp.sessions(), out=out, sessions=1, progress=False))
    assert [o.status for o in summary.outcomes] == ["done"] * 4
    (tmp_path / "bad").mkdir()
    bad = load_experiment(experiment(tmp_path / "bad", models={"default": "nosuchprovider/x"}))
    with pytest.raises(ColabkitError, match="nosuchprovider"):  # preflight: one line, before anything runs
        asyncio.run(arun_sessions(bad.sessions(), out=tmp_path / "bad-out", progress=False))
    assert workspaces(tmp_path / "bad-out") == [] and not any((tmp_path / "bad-out").glob("*/events.jsonl*"))


def test_retry_errors_reruns_only_sessions_that_ended_in_error(tmp_path):
    use_scripted({}, default=CODE)
    path = experiment(tmp_path, variants=["single"])
    exp = load_experiment(path)
    run_experiment(path, progress=False)
    errored = session_dir(exp.sessions()[0][0], exp.folder())
    record = SessionRecord.model_validate_json((errored / "session.json").read_bytes())
    atomic_write_text(errored / "session.json", record.model_copy(update={"ended_by": "error"}).model_dump_json())
    capped = session_dir(exp.sessions()[1][0], exp.folder())  # a spending cap's end is an outcome: never rerun
    capped_record = SessionRecord.model_validate_json((capped / "session.json").read_bytes())
    atomic_write_text(capped / "session.json", capped_record.model_copy(update={"ended_by": "llm_budget"}).model_dump_json())

    plain = run_experiment(path, progress=False)
    assert [o.status for o in plain.outcomes] == ["cached", "cached"]
    assert [o.ended_by for o in plain.outcomes] == ["error", "llm_budget"]
    retried = run_experiment(path, progress=False, retry_errors=True)
    assert [o.status for o in retried.outcomes] == ["done", "cached"]
    assert SessionRecord.model_validate_json((errored / "session.json").read_bytes()).ended_by == record.ended_by
    assert [o.status for o in run_experiment(path, progress=False, retry_errors=True).outcomes] == ["cached"] * 2


def test_cancelling_a_batch_shuts_its_kernels_down_and_leaves_no_workspace(tmp_path):
    model = use_scripted({}, default=CODE)
    model.latency_s = 1.0  # every answer takes a second: the batch is mid-way when cancelled
    exp = load_experiment(experiment(tmp_path, seeds=[0, 1, 2]))
    out = exp.folder()

    async def run_then_cancel() -> None:
        batch = asyncio.create_task(arun_sessions(exp.sessions(), out=out, sessions=2, kernels=2, progress=False))
        while not any(is_finished(session_dir(spec, out)) for spec, _ in exp.sessions()):
            await asyncio.sleep(0.2)
        await asyncio.sleep(0.5)  # others are mid-session now
        batch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await batch

    asyncio.run(run_then_cancel())
    finished = [spec for spec, _ in exp.sessions() if is_finished(session_dir(spec, out))]
    assert 1 <= len(finished) < 6
    assert workspaces(out) == [] and not kernel_module._LIVE  # every kernel shut down
    model.latency_s = 0.0
    summary = run_experiment(exp, progress=False)
    assert summary.count("cached") == len(finished) and summary.count("done") == 6 - len(finished)


def test_a_session_another_holder_runs_is_waited_for_and_run_once(tmp_path):
    use_scripted({}, default=CODE)
    exp = load_experiment(experiment(tmp_path, variants=["single"]))
    out = exp.folder()
    busy = exp.sessions()[0][0]
    other = SessionLock(out, busy.session_id)
    assert other.try_acquire()  # as another process running it would
    released = []

    def release_later() -> None:
        time.sleep(3)
        released.append(time.time())
        other.release()

    threading.Thread(target=release_later).start()
    summary = run_experiment(exp, progress=False)
    assert [o.status for o in summary.outcomes] == ["done", "done"]
    record = SessionRecord.model_validate_json((session_dir(busy, out) / "session.json").read_bytes())
    assert record.started.timestamp() >= released[0]  # it ran only once the holder let go
    assert read_journal(out).session_id.tolist().count(busy.session_id) == 1


def test_sweep_removes_dead_workspaces_and_their_socket_folders_but_not_live_ones(tmp_path):
    out = tmp_path / "results"
    sockets = Path(tempfile.mkdtemp(prefix="ck-"))
    dead = session_work_dir(out, "dead0000dead0000") / "colabkit-ws-x"
    dead.mkdir(parents=True)
    (dead / "ipc").symlink_to(sockets)
    alive = session_work_dir(out, "live0000live0000") / "colabkit-ws-y"
    alive.mkdir(parents=True)
    holder = SessionLock(out, "live0000live0000")
    assert holder.try_acquire()
    try:
        assert sweep(out) == ["dead0000dead0000"]
        assert not dead.parent.exists() and not sockets.exists()
        assert alive.is_dir()
    finally:
        holder.release()
    assert sweep(out) == ["live0000live0000"] and workspaces(out) == []


def test_run_experiment_works_inside_a_running_event_loop_as_in_jupyter(tmp_path):
    use_scripted({}, default=CODE)
    path = experiment(tmp_path, variants=["single"])

    async def notebook_cell():
        return run_experiment(path, progress=False)

    summary = asyncio.run(notebook_cell())
    assert [o.status for o in summary.outcomes] == ["done", "done"]
