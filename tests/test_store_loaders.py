"""Loaders: stored sessions come back as the tables they were, from JSON lines or parquet,
and a parquet export is used only while it still covers every finished session."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from helpers.scripted import use_scripted

from colabkit.errors import ColabkitError
from colabkit.llm import ModelConfig
from colabkit.runner import record_session
from colabkit.session import Event, SessionSpec
from colabkit.store import SessionRecord, export_parquet, load_events, load_sessions
from colabkit.tasks import load_tasks
from colabkit.team import variant

TASK = load_tasks().get("demo_archaeology/0/0")
WAIT = {"thought": "nothing to add", "action": "wait"}


def record(out: Path, name: str, seed: int) -> Path:
    var = variant(name)
    use_scripted({
        "ai": [{"thought": "run", "action": "execute_code", "content": f"print({seed} + 1)"},
               {"thought": "tell", "action": "send_message", "content": "axes peak", "to": "all"},
               {"thought": "write", "action": "edit_result", "content": f"hypothesis {seed}"},
               {"thought": "end", "action": "finish", "content": "ok"}],
        "D": ["this is not JSON"],  # a failed step, so events carry LLM errors too
    }, default=WAIT)
    spec = SessionSpec(task_id=TASK.id, variant=var, seed=seed,
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team})
    return record_session(spec, TASK, out=out)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Path, list[Path]]:
    out = tmp_path_factory.mktemp("results")
    folders = [record(out, "single", 0), record(out, "single", 1), record(out, "default-dr", 0)]
    return out, folders


def copy_store(store, tmp_path: Path) -> tuple[Path, list[Path]]:
    out, folders = store
    shutil.copytree(out, tmp_path / "results")
    return tmp_path / "results", [tmp_path / "results" / f.name for f in folders]


def test_events_table_has_one_row_per_logged_event_with_llm_totals(store):
    out, folders = store
    events = load_events(out)
    stored = {f.name: [Event.model_validate_json(x) for x in (f / "events.jsonl").read_text().splitlines()]
              for f in folders}
    assert len(events) == sum(len(v) for v in stored.values())
    for sid, log in stored.items():
        rows = events[events.session_id == sid]
        assert rows.seq.tolist() == [e.seq for e in log]
        assert rows.event_id.tolist() == [e.event_id for e in log]
        assert rows.action.tolist() == [e.action for e in log]
        assert [None if pd.isna(t) else t for t in rows.thought] == [e.thought for e in log]
        assert [json.loads(a) for a in rows.args_json] == [e.args for e in log]
        assert rows.n_calls.tolist() == [len(e.llm_calls) for e in log]
        assert rows.tokens.tolist() == [sum(c.prompt_tokens + c.completion_tokens for c in e.llm_calls) for e in log]
        assert rows.llm_errors.tolist() == [sum(1 for c in e.llm_calls if c.error) for e in log]
    assert events.llm_errors.sum() > 0  # D's unparseable answer
    dr = events[events.variant == "default-dr"]
    assert set(dr.participant) >= {"ai", "D", "R", "system"} and set(dr.seed) == {0}


def test_sessions_table_has_one_row_per_session_matching_its_record(store):
    out, folders = store
    sessions = load_sessions(out).set_index("session_id")
    assert sorted(sessions.index) == sorted(f.name for f in folders)
    for folder in folders:
        rec = SessionRecord.model_validate_json((folder / "session.json").read_bytes())
        row = sessions.loc[folder.name]
        assert (row.task_id, row.variant, row.seed, row.ended_by) == (rec.task_id, rec.spec.variant.name,
                                                                      rec.seed, rec.ended_by)
        assert row.final_hypothesis == rec.final_hypothesis and row.n_events == rec.n_events
        assert row.variant_hash == rec.variant_hash and row.model == "scripted/ai"
        assert row.humans == ",".join(rec.spec.variant.humans)
        assert row.llm_calls == rec.totals.llm_calls and row.actions == rec.totals.actions
        assert row.duration_s == pytest.approx((rec.finished - rec.started).total_seconds())
    events = load_events(out)
    assert events.groupby("session_id").size().to_dict() == sessions.n_events.to_dict()
    assert events.groupby("session_id").n_calls.sum().to_dict() == sessions.llm_calls.astype(int).to_dict()


def test_unfinished_session_folders_are_invisible(store, tmp_path):
    out, folders = copy_store(store, tmp_path)
    (folders[0] / "session.json").unlink()
    (out / "0123456789abcdef").mkdir()
    (out / "0123456789abcdef" / "events.jsonl.part").write_text("{}\n")
    assert folders[0].name not in set(load_sessions(out).session_id)
    assert folders[0].name not in set(load_events(out).session_id)
    assert len(load_sessions(out)) == 2


def test_parquet_export_loads_exactly_what_the_json_lines_give(store, tmp_path):
    out, _ = copy_store(store, tmp_path)
    events, sessions = load_events(out), load_sessions(out)
    assert export_parquet(out) == out / "events.parquet"
    assert (out / "sessions.parquet").is_file()
    pd.testing.assert_frame_equal(pd.read_parquet(out / "events.parquet"), events)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "sessions.parquet"), sessions)
    pd.testing.assert_frame_equal(load_events(out), events)
    pd.testing.assert_frame_equal(load_sessions(out), sessions)


def test_loaders_read_a_current_export_and_ignore_a_stale_one(store, tmp_path):
    out, folders = copy_store(store, tmp_path)
    export_parquet(out)
    # Rewriting a record in place does not touch its folder, so the export still counts as
    # current: the loader must be reading the parquet (which keeps the old text).
    path = folders[0] / "session.json"
    rec = json.loads(path.read_text())
    path.write_text(json.dumps({**rec, "final_hypothesis": "edited behind the store's back"}))
    assert "edited behind the store's back" not in set(load_sessions(out).final_hypothesis)

    # A session finished after the export makes it stale: back to the JSON lines.
    later = (out / "sessions.parquet").stat().st_mtime_ns + 10**9
    os.utime(folders[0], ns=(later, later))
    assert "edited behind the store's back" in set(load_sessions(out).final_hypothesis)

    export_parquet(out)
    assert "edited behind the store's back" in set(load_sessions(out).final_hypothesis)
    shutil.rmtree(folders[1])  # a deleted session must not linger in a loaded table
    assert folders[1].name not in set(load_sessions(out).session_id)
    assert folders[1].name not in set(load_events(out).session_id)


def test_an_export_without_a_column_this_version_has_is_stale(store, tmp_path):
    out, _ = copy_store(store, tmp_path)
    export_parquet(out)
    for name, column in (("sessions.parquet", "profile"), ("events.parquet", "gate_scope")):
        stamp = (out / name).stat().st_mtime_ns
        old = pd.read_parquet(out / name).drop(columns=[column])  # as an older version wrote it
        old.to_parquet(out / name, index=False)
        os.utime(out / name, ns=(stamp, stamp))
    assert "profile" in load_sessions(out).columns and "gate_scope" in load_events(out).columns


def test_loaders_can_restrict_to_given_sessions(store, tmp_path):
    out, folders = copy_store(store, tmp_path)
    wanted = [folders[2].name]
    assert load_sessions(out, wanted).session_id.tolist() == wanted
    jsonl = load_events(out, wanted)
    assert set(jsonl.session_id) == set(wanted)
    export_parquet(out)
    pd.testing.assert_frame_equal(load_events(out, wanted), jsonl)


def test_empty_and_missing_results_folders(tmp_path):
    assert load_events(tmp_path).empty and load_sessions(tmp_path).empty
    assert "session_id" in load_sessions(tmp_path).columns and "n_calls" in load_events(tmp_path).columns
    with pytest.raises(ColabkitError, match="nowhere"):
        load_events(tmp_path / "nowhere")


@pytest.mark.parametrize("damage", [b'{"seq": 0, "truncated', b'{"phase": "task"}'])
def test_a_malformed_event_log_is_a_one_line_error_naming_the_file(store, tmp_path, damage):
    out, folders = copy_store(store, tmp_path)
    log = folders[1] / "events.jsonl"
    log.write_bytes(log.read_bytes() + damage + b"\n")
    with pytest.raises(ColabkitError, match=f"malformed event log {log}"):
        load_events(out)
