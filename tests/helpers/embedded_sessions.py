"""Sessions with the real embedded model (`local/smollm2-135m`) and what their stored
trajectory must satisfy, for tests/test_e2e_real_model.py and
tests/test_e2e_real_model_scaffolded.py (two files so the test workers, a file each, share
the model's minutes evenly). The sessions are the run's shared ones (helpers.shared_sessions):
the Default-DR session checked here is the one tests/test_eval_real_model.py scores."""

from __future__ import annotations

from pathlib import Path

import pytest

from colabkit.runner import build_session
from colabkit.session import Event, SessionSettings
from colabkit.store import SessionRecord, load_events, load_sessions
from colabkit.team import ACTION_TYPES
from colabkit.workspace import WorkspaceSnapshot
from helpers.shared_sessions import TASK, stored_session

END_STATES = {"finish", "budget", "idle", "max_rounds"}


def check_trajectory(folder: Path) -> tuple[list[Event], SessionRecord, WorkspaceSnapshot]:
    """Everything a stored session must satisfy, whatever the model said."""
    assert sorted(p.name for p in folder.iterdir()) == ["events.jsonl", "session.json", "snapshot.json"]
    events = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    record = SessionRecord.model_validate_json((folder / "session.json").read_bytes())
    snapshot = WorkspaceSnapshot.model_validate_json((folder / "snapshot.json").read_bytes())
    assert [e.seq for e in events] == list(range(len(events)))
    assert {e.session_id for e in events} == {folder.name} == {record.session_id}
    assert events[0].action == "session_start" and events[-1].action == "session_end"
    assert record.ended_by in END_STATES, events[-1].result
    assert record.n_events == len(events)
    assert record.totals.llm_calls == sum(len(e.llm_calls) for e in events) > 0
    assert all(c.model == "local/smollm2-135m" for e in events for c in e.llm_calls)
    totals = record.totals
    assert totals.ai_actions <= totals.ai_budget == record.spec.settings.action_budget
    settings = record.spec.settings  # under ai_budget each human has the cap, under the Co-Gym rules they share it
    holders = len(record.spec.variant.humans) if settings.per_member else 1
    assert totals.human_actions - totals.past_budget_decisions <= totals.human_budget * holders
    assert totals.actions == totals.ai_actions + totals.human_actions
    table = load_events(folder.parent, [folder.name])
    assert table.seq.tolist() == [e.seq for e in events]
    assert table.tokens.sum() == record.totals.tokens
    return events, record, snapshot


def embedded_session_is_valid(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, name: str, budget: int,
                              rounds: int) -> SessionRecord:
    """Variant `name` on the demo task with the embedded model (the run's shared session, a copy
    in `tmp_path`); its trajectory holds."""
    spec, _ = build_session(TASK, name, 0, settings=SessionSettings(action_budget=budget, max_rounds=rounds))
    folder = stored_session(tmp_path_factory, tmp_path, name, budget=budget, rounds=rounds)
    assert folder.name == spec.session_id
    events, record, _ = check_trajectory(folder)
    assert events[0].args["team"] == list(spec.participants)
    # The model may finish before everyone had a turn, so only "ai" is sure to have acted.
    acted = {e.participant for e in events}
    assert "ai" in acted and acted <= {"system", *spec.participants}
    steps = [e for e in events if e.participant in spec.participants and e.phase == "task"]
    assert all(e.action in (*ACTION_TYPES, "invalid_output") for e in steps)
    if name == "single":  # the AI alone: each of its own steps is a model answer
        assert all(e.llm_calls for e in steps if e.proposer is None) and record.totals.llm_calls >= len(steps)
    if name == "scaffolded-dr":
        assert record.memory is not None and record.memory_digest == record.memory.digest()
        assert any(e.phase == "build" for e in events)
        assert [e.action for e in events if e.action == "memory_frozen"] == ["memory_frozen"]
    else:
        assert record.memory is None and not any(e.phase == "build" for e in events)
    assert load_sessions(tmp_path).session_id.tolist() == [record.session_id]
    return record
