"""A session with the real embedded model (`local/smollm2-135m`): the loop must hold up
against a tiny model's actual answers, not only against scripts."""

from __future__ import annotations

import asyncio

import pytest

from colabkit.llm import Gateway
from colabkit.session import Event, ListSink, SessionSettings, SessionSpec, run_session
from colabkit.tasks import load_tasks
from colabkit.team import ACTION_TYPES, variant

END_STATES = {"finish", "budget", "idle", "max_rounds"}


@pytest.mark.slow
def test_a_single_agent_session_with_the_embedded_model_completes(tmp_path):
    task = load_tasks().get("demo_archaeology/0/0")
    spec = SessionSpec(task_id=task.id, variant=variant("single"), seed=0,
                       settings=SessionSettings(action_budget=3, max_rounds=5))
    sink = ListSink()
    result = asyncio.run(run_session(spec, task, gateway=Gateway(), sink=sink, workdir_root=tmp_path))

    events = sink.events
    assert result.ended_by in END_STATES, events[-1].result
    assert events[0].action == "session_start" and events[-1].action == "session_end"
    assert [e.seq for e in events] == list(range(len(events)))
    steps = [e for e in events if e.participant == "ai"]
    assert steps and all(e.action in (*ACTION_TYPES, "invalid_output") for e in steps)
    assert all(call.model == "local/smollm2-135m" for e in steps for call in e.llm_calls)
    assert all(e.llm_calls for e in steps if e.proposer is None)
    assert result.totals.actions <= 3 and result.totals.llm_calls >= len(steps)
    assert [Event.model_validate_json(e.model_dump_json()) for e in events] == events
