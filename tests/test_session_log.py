"""The stored log is scoreable on its own: versioned, joinable by index, with its provenance.

One stored preassigned-dr session on scripted models (a cell, a message, an edit held by a
gate and applied once approved, a finish) is checked against the versioned schemas; the
smaller checks (hashing, prompt hashes, the spec's roles) need no session.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
from helpers.scripted import use_scripted

from colabkit import hashing
from colabkit.errors import ColabkitError
from colabkit.llm import ModelConfig
from colabkit.runner import record_session
from colabkit.session import Event, SessionSpec
from colabkit.session.events import EVENT_SCHEMA_VERSION
from colabkit.session.scheduler import round_order
from colabkit.store import PROMPTS_FILE, SessionRecord, export_parquet, load_events, load_sessions
from colabkit.store import records as records_module
from colabkit.tasks import load_tasks
from colabkit.tasks.layout import demo_root
from colabkit.team import persona, variant
from colabkit.workspace import WorkspaceSnapshot

TASK = load_tasks().get("demo_archaeology/0/0")
WAIT = {"thought": "nothing to add", "action": "wait"}


def say(action: str, content: str = "", to: str = "") -> dict:
    return {"thought": "next", "action": action, "content": content, "to": to}


def spec_for(name: str, seed: int) -> SessionSpec:
    var = variant(name)
    return SessionSpec(task_id=TASK.id, variant=var, seed=seed,
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team})


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """(folder, scripted model) of one finished preassigned-dr session stored with its prompts."""
    team = ("ai", "D", "R")
    seed = next(s for s in range(1000) if all(round_order(team, s, r)[0] == "ai" for r in range(1, 5)))
    model = use_scripted({
        "ai": [say("execute_code", "x = 6 * 7\nprint(x)"), say("send_message", "x is 42", "all"),
               say("edit_result", "H: the answer is 42"), say("finish", "done")],
        "D": [say("execute_code", "print(x + 1)")],
        "R": [say("send_message", "noted", "ai"), WAIT, say("approve", "fine", "req-1"), say("approve", "go", "req-2")],
    }, default=WAIT)
    out = tmp_path_factory.mktemp("log")
    folder = record_session(spec_for("preassigned-dr", seed), TASK, out=out, log_prompts=True)
    return folder, model


def events_of(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]


def test_every_stored_event_validates_against_the_versioned_schema(stored):
    folder, _ = stored
    schema = Event.model_json_schema()
    rows = events_of(folder)
    assert rows and EVENT_SCHEMA_VERSION == 7
    for row in rows:
        jsonschema.validate(row, schema)
        assert row["schema_version"] == 7
        Event.model_validate(row)
    with pytest.raises(jsonschema.ValidationError):  # the schema pins the version
        jsonschema.validate({**rows[0], "schema_version": 1}, schema)
    record = json.loads((folder / "session.json").read_text())
    jsonschema.validate(record, SessionRecord.model_json_schema())
    assert record["schema_version"] == 7
    snapshot = WorkspaceSnapshot.model_validate_json((folder / "snapshot.json").read_bytes())
    assert snapshot.schema_version == 3


def test_every_created_cell_message_and_editor_version_is_joinable_by_index(stored):
    folder, _ = stored
    events = [Event.model_validate(row) for row in events_of(folder)]
    snapshot = WorkspaceSnapshot.model_validate_json((folder / "snapshot.json").read_bytes())
    for field, items in (("cell_index", snapshot.cells), ("message_index", snapshot.messages),
                         ("editor_version", snapshot.editor_versions)):
        creating = [e for e in events if getattr(e, field) is not None]
        assert items and sorted(getattr(e, field) for e in creating) == [item.index for item in items], field
        for event in creating:  # the event that created it names its author
            item = items[getattr(event, field)]
            assert event.participant == getattr(item, "author", getattr(item, "sender", None)), field
    cells = {e.cell_index: e for e in events if e.cell_index is not None}
    assert cells[0].participant == "ai" and cells[1].participant == "D" and cells[1].status == "ok"
    # the edit was held by R's gate: the pending event has no index, its application has
    pending = next(e for e in events if e.action == "edit_result" and e.status == "pending")
    applied = next(e for e in events if e.action == "edit_result" and e.status == "ok")
    assert pending.editor_version is None and applied.editor_version == 0
    assert (applied.request_id, applied.proposer) == (pending.request_id, "ai")
    assert pending.gate_rule is not None
    assert (pending.gate_rule.action, pending.gate_rule.scope, pending.gate_rule.signatory) == (
        "edit_result", "all", "R")
    assert all(e.gate_rule is None for e in events if e.status != "pending")


def test_the_record_keeps_briefings_persona_versions_and_task_digest_once(stored):
    folder, _ = stored
    record = SessionRecord.model_validate_json((folder / "session.json").read_bytes())
    assert record.ended_by == "finish" and record.final_hypothesis == "H: the answer is 42"
    assert set(record.briefings) == set(record.persona_versions) == {"ai", "D", "R"}
    assert record.persona_versions == {pid: persona(pid).version for pid in ("ai", "D", "R")}
    assert TASK.query in record.briefings["R"] and record.briefings["R"] != record.briefings["D"]
    metadata = demo_root() / "real" / "test" / "demo_archaeology" / "metadata_0.json"
    assert record.task_digest == TASK.task_digest == hashing.sha256_file(metadata)
    log = (folder / "events.jsonl").read_text()
    assert record.briefings["R"] not in log and record.briefings["D"] not in log  # not per event


def test_each_call_keeps_its_prompt_hash_and_log_prompts_stores_the_prompts(stored):
    folder, model = stored
    calls = [call for row in events_of(folder) for call in row["llm_calls"]]
    sent = {hashing.sha256_hex(call["messages"]) for call in model.calls}
    assert calls and {call["prompt_hash"] for call in calls} <= sent
    stored_prompts = [json.loads(line) for line in (folder / PROMPTS_FILE).read_text().splitlines()]
    by_hash = {row["prompt_hash"]: row["messages"] for row in stored_prompts}
    assert len(by_hash) == len(stored_prompts)  # each distinct prompt once
    assert {call["prompt_hash"] for call in calls} == set(by_hash)
    for digest, messages in by_hash.items():
        assert hashing.sha256_hex(messages) == digest


def test_prompts_are_not_stored_unless_asked_and_do_not_change_the_session(tmp_path, stored):
    folder, _ = stored
    use_scripted({"ai": [say("finish", "done")]}, default=WAIT)
    spec = spec_for("single", 0)
    plain = record_session(spec, TASK, out=tmp_path)
    assert not (plain / PROMPTS_FILE).exists() and plain.name == spec.session_id


def test_loaders_export_the_join_keys_and_provenance(stored):
    folder, _ = stored
    export_parquet(folder.parent)
    events, sessions = load_events(folder.parent), load_sessions(folder.parent)
    assert set(events["schema_version"]) == {7}
    assert str(events["cell_index"].dtype) == "Int64"
    assert events["cell_index"].dropna().tolist() == [0, 1]
    pending = events[events["status"] == "pending"]
    assert pending[["gate_scope", "gate_signatory"]].values.tolist() == [["all", "R"], ["all", "R"]]
    assert events.loc[events["n_calls"] > 0, "prompt_hashes"].str.len().min() >= 64
    called = events[events["n_calls"] > 0]
    assert (called["output_modes"].str.split(";").str.len() == called["n_calls"]).all()
    assert set(";".join(called["output_modes"]).split(";")) == {"json_schema"}  # scripted: a custom provider
    row = sessions.iloc[0]
    assert row["task_digest"] == TASK.task_digest and row["schema_version"] == 7
    assert json.loads(row["persona_versions_json"])["R"] == persona("R").version
    # the profile is a factor; the per-side budgets and what each side used are columns of their own
    assert row["profile"] == "compact" and pd.isna(row["context_window"])  # scripted models: unknown window
    assert str(sessions["context_window"].dtype) == "Int64"
    # R's two approvals are machinery (issue 42): off budget, in no side's actions
    assert (row["ai_budget"], row["human_budget"], row["ai_actions"], row["human_actions"]) == (30, 30, 4, 2)


def test_there_is_one_ended_by_and_one_hashing_helper():
    from colabkit.session import engine, events

    assert records_module.EndedBy is events.EndedBy and engine.EndedBy is events.EndedBy
    assert "provider_error" in events.EndedBy.__args__
    config = ModelConfig()
    assert config.identity() == hashing.sha256_hex(config.model_dump(mode="json")) == hashing.sha256_hex(config)
    assert hashing.canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'
    assert variant("single").identity() == hashing.sha256_hex(variant("single"))
    package = Path(hashing.__file__).parent
    own_hashing = [p.relative_to(package) for p in package.rglob("*.py")
                   if p.name != "hashing.py" and "import hashlib" in p.read_text()]
    assert own_hashing == []  # everything hashes through colabkit.hashing


@pytest.mark.parametrize("role", ["judge", "Judge", "reviewer"])
def test_a_spec_refuses_model_roles_that_are_not_session_roles(role):
    with pytest.raises(ColabkitError) as info:
        SessionSpec(task_id=TASK.id, variant=variant("single"), seed=0, models={role: ModelConfig()})
    assert "\n" not in str(info.value) and repr(role) in str(info.value)
    SessionSpec(task_id=TASK.id, variant=variant("default-dr"), seed=0,
                models={"default": ModelConfig(), "ai": ModelConfig(), "D": ModelConfig(), "R": ModelConfig()})
