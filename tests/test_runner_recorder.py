"""`record_session` with the scripted model and a real kernel: what lands on disk, and that a
finished session is never run twice while an interrupted one is always redone."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from pathlib import Path

import pytest
from helpers.scripted import use_scripted

import colabkit
from colabkit.errors import ColabkitError
from colabkit.llm import ModelConfig
from colabkit.runner import record_session
from colabkit.runner import recorder as recorder_module
from colabkit.session import Event, SessionSpec
from colabkit.store import SessionRecord, session_dir
from colabkit.store.records import PLAN_LEDGER
from colabkit.tasks import load_tasks
from colabkit.team import variant

SUITE = load_tasks()
TASK = SUITE.get("demo_archaeology/0/0")
HYPOTHESIS = "Axes are most frequent in hoards of the 12th century BCE."
WAIT = {"thought": "nothing to add", "action": "wait"}


def ai_script() -> list[dict]:
    return [
        {"thought": "look at the data", "action": "execute_code", "content": "print(6 * 7)"},
        {"thought": "write it down", "action": "edit_result", "content": HYPOTHESIS},
        {"thought": "done", "action": "finish", "content": "the count peaks there"},
    ]


def spec_for(name: str = "single", seed: int = 0) -> SessionSpec:
    var = variant(name)
    return SessionSpec(task_id=TASK.id, variant=var, seed=seed,
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team})


def lines(path: Path) -> list[Event]:
    return [Event.model_validate_json(line) for line in path.read_text().splitlines()]


def test_a_session_is_stored_complete_with_its_record_written_last(tmp_path):
    model = use_scripted({"ai": ai_script()}, default=WAIT)
    spec = spec_for()
    folder = record_session(spec, TASK, out=tmp_path)

    assert folder == tmp_path / spec.identity()[:16] == session_dir(spec, tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == ["events.jsonl", "session.json", "snapshot.json"]
    events = lines(folder / "events.jsonl")
    assert [e.seq for e in events] == list(range(len(events)))
    assert {e.session_id for e in events} == {folder.name}

    record = SessionRecord.model_validate_json((folder / "session.json").read_bytes())
    assert record.session_id == folder.name and record.spec == spec
    assert record.spec_identity == spec.identity() and record.task_id == TASK.id and record.seed == 0
    assert record.variant_hash == variant("single").identity()
    assert record.models == {"ai": ModelConfig(model="scripted/ai")}
    assert record.ended_by == "finish" and record.final_hypothesis == HYPOTHESIS
    assert record.n_events == len(events)
    assert record.totals.llm_calls == len(model.calls) == sum(len(e.llm_calls) for e in events)
    assert record.memory is None and record.memory_digest is None
    assert record.analysis_plan is None  # no analysis plan in the folder
    assert record.package_version == colabkit.__version__
    lock = hashlib.sha256((Path(colabkit.__file__).parents[1] / "requirements.lock").read_bytes()).hexdigest()
    assert record.environment is not None and record.environment.lock == lock[:16]  # which environment made it
    assert record.isolation_level == record.isolation.level != ""
    assert record.started <= record.finished

    snapshot = json.loads((folder / "snapshot.json").read_text())
    assert any("print(6 * 7)" in cell["code"] and "42" in cell["output"] for cell in snapshot["cells"])


def test_a_session_records_the_analysis_plan_in_force_when_it_ran(tmp_path):
    use_scripted({"ai": ai_script()}, default=WAIT)
    (tmp_path / "analysis_plan.json").write_text(json.dumps({"plan_hash": "aaaaaaaaaaaa"}))
    (tmp_path / "analysis_plan.v2.json").write_text(json.dumps({"plan_hash": "bbbbbbbbbbbb"}))
    folder = record_session(spec_for(seed=5), TASK, out=tmp_path)
    record = SessionRecord.model_validate_json((folder / "session.json").read_bytes())
    assert record.analysis_plan == "bbbbbbbbbbbb"  # the newest version: the amendment in force


def test_no_session_json_when_the_snapshot_cannot_be_written(tmp_path, monkeypatch):
    """session.json marks a finished session, so it must come after everything else: make the
    snapshot write fail and no session.json may appear (mtimes are too coarse to show order)."""
    use_scripted({"ai": ai_script()}, default=WAIT)
    spec = spec_for()
    module = sys.modules[record_session.__module__]
    real_write = module.atomic_write_text
    attempted: list[str] = []

    def failing_snapshot(path, text, *args, **kwargs):
        attempted.append(Path(path).name)
        if Path(path).name == "snapshot.json":
            raise OSError(28, "No space left on device", str(path))
        return real_write(path, text, *args, **kwargs)

    monkeypatch.setattr(module, "atomic_write_text", failing_snapshot)
    with pytest.raises(OSError, match="No space left on device"):
        record_session(spec, TASK, out=tmp_path)
    folder = session_dir(spec, tmp_path)
    assert attempted == ["snapshot.json"]
    assert (folder / "events.jsonl").is_file() and not (folder / "session.json").exists()


def test_a_finished_session_is_returned_and_never_run_again(tmp_path):
    use_scripted({"ai": ai_script()}, default=WAIT)
    folder = record_session(spec_for(), TASK, out=tmp_path)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}

    again = use_scripted({"ai": [{"thought": "other", "action": "finish", "content": "other run"}]}, default=WAIT)
    assert record_session(spec_for(), TASK, out=tmp_path) == folder
    assert again.calls == []  # nothing ran: not even a cached replay
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name not in ("llm-cache", ".work", PLAN_LEDGER)] == [folder.name]
    assert len((tmp_path / PLAN_LEDGER).read_text().splitlines()) == 1  # one start: the second call ran nothing


def test_an_interrupted_session_leaves_no_record_and_is_redone(tmp_path, monkeypatch):
    real_run_session = recorder_module.run_session

    async def crash_midway(spec, task, *, gateway, sink, **kwargs):
        for seq in range(2):
            sink.emit(Event(session_id=spec.session_id, seq=seq, phase="task", round=1, participant="ai",
                            action="wait", status="ok", time=0.0))
        raise KeyboardInterrupt  # as when the user presses Ctrl-C mid-session

    monkeypatch.setattr(recorder_module, "run_session", crash_midway)
    use_scripted({"ai": ai_script()}, default=WAIT)
    with pytest.raises(KeyboardInterrupt):
        record_session(spec_for(), TASK, out=tmp_path)
    folder = session_dir(spec_for(), tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == ["events.jsonl.part"]
    (folder / "stray.txt").write_text("debris of the interrupted run")

    monkeypatch.setattr(recorder_module, "run_session", real_run_session)
    model = use_scripted({"ai": ai_script()}, default=WAIT)
    assert record_session(spec_for(), TASK, out=tmp_path) == folder
    assert len(model.calls) == 3  # really rerun, from scratch
    assert sorted(p.name for p in folder.iterdir()) == ["events.jsonl", "session.json", "snapshot.json"]
    assert lines(folder / "events.jsonl")[0].action == "session_start"


def test_a_redone_session_replays_model_answers_from_the_results_cache(tmp_path):
    first = use_scripted({"ai": ai_script()}, default=WAIT)
    folder = record_session(spec_for(), TASK, out=tmp_path)
    assert len(first.calls) == 3 and any((tmp_path / "llm-cache").iterdir())
    original = SessionRecord.model_validate_json((folder / "session.json").read_bytes())

    (folder / "session.json").unlink()  # as if the run had died just before finishing
    replay = use_scripted({}, default={"thought": "a different answer", "action": "finish", "content": "x"})
    record_session(spec_for(), TASK, out=tmp_path)
    record = SessionRecord.model_validate_json((folder / "session.json").read_bytes())
    assert replay.calls == []
    assert record.final_hypothesis == original.final_hypothesis == HYPOTHESIS
    assert record.totals.suite_replays == record.totals.llm_calls == 3
    assert record.totals.paid_cost == 0 and record.totals.replayed_cost == original.totals.paid_cost


def test_record_session_runs_inside_a_running_event_loop(tmp_path):
    """Jupyter cells run inside an event loop; record_session must still work there."""
    use_scripted({"ai": ai_script()}, default=WAIT)

    async def from_a_notebook_cell() -> Path:
        return record_session(spec_for(), TASK, out=tmp_path)

    folder = asyncio.run(from_a_notebook_cell())
    assert (folder / "session.json").is_file()


def test_a_spec_for_another_task_is_a_one_line_error(tmp_path):
    other = SUITE.get("demo_archaeology/1/0")
    with pytest.raises(ColabkitError, match="demo_archaeology/0/0.*demo_archaeology/1/0"):
        record_session(spec_for(), other, out=tmp_path)
    assert not any(tmp_path.iterdir())
