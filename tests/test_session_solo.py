"""Each persona alone (issue 47): `solo-d` and `solo-r` hold the clock the AI agent holds alone.

The same number of steps as the single agent, a wait included; the session ends at the human's
last step or its finish; its prompt says so, from the scheduler that applies it."""

from __future__ import annotations

import pytest
from helpers.scripted import use_scripted
from helpers.stored_session import WAIT, record_session, say

from colabkit.errors import ColabkitError
from colabkit.llm import ModelConfig
from colabkit.session import Event, SessionSettings, SessionSpec
from colabkit.session.rules import SOLO_END_RULE
from colabkit.store import SessionRecord
from colabkit.tasks import load_tasks
from colabkit.team import VARIANT_NAMES, VariantConfig, variant

TASK_ID = "demo_archaeology/0/0"


def play(name: str, script: list, tmp_path, budget: int = 3):
    var = variant(name)
    model = use_scripted({pid: list(script) for pid in var.team}, default=WAIT)
    spec = SessionSpec(task_id=TASK_ID, variant=var, seed=0, settings=SessionSettings(action_budget=budget),
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team})
    folder = record_session(spec, load_tasks().get(TASK_ID), tmp_path / name)
    events = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    return SessionRecord.model_validate_json((folder / "session.json").read_bytes()), events, model


@pytest.mark.parametrize("name", ["solo-d", "solo-r"])
def test_a_human_alone_takes_the_single_agents_steps_waits_included(name, tmp_path):
    script = [say("execute_code", "print(1)"), WAIT, say("edit_result", "a hypothesis")]
    solo, events, model = play(name, [*script, say("execute_code", "print(2)")], tmp_path)
    single, single_events, _ = play("single", [*script, say("execute_code", "print(2)")], tmp_path)
    human = variant(name).humans[0]
    turns = [e.action for e in events if e.participant == human and e.phase == "task"]
    assert turns == [e.action for e in single_events if e.participant == "ai" and e.phase == "task"]
    assert turns == ["execute_code", "wait", "edit_result"]  # its wait was a step of its clock
    assert (solo.ended_by, single.ended_by) == ("budget", "budget") and solo.final_hypothesis == "a hypothesis"
    assert events[-1].args["budget_side"] == "human"
    prompt = model.calls[0]["messages"][-1]["content"]
    assert SOLO_END_RULE in prompt and "Your steps: 3 for the task (every step is one" in prompt
    assert "AI agent (ai) has taken" not in prompt and "- finish" in prompt


def test_a_human_alone_may_finish_a_human_in_a_team_may_not(tmp_path):
    solo, events, _ = play("solo-d", [say("execute_code", "print(1)"), say("finish", "done")], tmp_path, budget=5)
    assert solo.ended_by == "finish" and [e.action for e in events if e.participant == "D"] == [
        "execute_code", "finish"]
    _, team_events, model = play("default-d", [WAIT], tmp_path, budget=2)
    d_prompts = [c["messages"][-1]["content"] for c in model.calls if c["caller"] == "D"]
    assert d_prompts and not any("- finish" in p for p in d_prompts)


def test_solo_variants_are_found_by_name_but_stay_out_of_the_studys_grid():
    assert variant("solo-d").team == ("D",) and variant("solo-r").team == ("R",)
    assert not {"solo-d", "solo-r"} & set(VARIANT_NAMES)
    assert "ai" not in variant("default-d").model_dump()  # identities of the variants with the AI unchanged
    with pytest.raises(ColabkitError, match="one human alone"):
        VariantConfig(name="solo-dr", humans=("D", "R"), ai=False)
    with pytest.raises(ColabkitError, match="one human alone"):
        VariantConfig(name="solo-mem", humans=("D",), ai=False, memory=True)
