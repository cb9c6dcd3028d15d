"""A living memory (the Dynamic variants): an update is a team act that every member then sees.

Unit tests for what an update says and does (team layer) and for the team act's rules
(session layer), then scripted sessions on a real kernel: an accepted update changes every
member's next prompt and the memory's digest, a rejected one changes nothing, a gate added
mid-task holds the next matching action, and no other variant is ever offered the action.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from helpers.scripted import use_scripted

from colabkit.evaluation.metrics.gates import gate_requests
from colabkit.llm import Gateway, ModelConfig
from colabkit.runner import build_spec
from colabkit.session import ListSink, SessionSettings, SessionSpec, run_session
from colabkit.session.actions import MEMORY_UPDATE, Action, InvalidAction, valid_actions
from colabkit.session.prompting.preview import preview
from colabkit.session.scheduler import round_order
from colabkit.session.seats.react import step_schema
from colabkit.session.structure.memory_updates import LivingMemory
from colabkit.tasks import load_tasks
from colabkit.team import (
    STUDY_VARIANT_NAMES,
    GateRule,
    GateTable,
    MemoryRecord,
    MemoryUpdateError,
    apply_update,
    parse_update,
    variant,
)

TASK = load_tasks().get("demo_archaeology/0/0")
WAIT = json.dumps({"thought": "nothing for me now", "action": "wait"})
SLOTS = {"expertise": "D knows the columns", "responsibility": "R checks the claim",
         "plan": "AI analyses first", "evidence_standards": "cite a computed table"}
ACCEPT = {"reply": {"decision": "accept"}}
TEAM = variant("dynamic-dr").team_personas()
MEMORY = MemoryRecord(**SLOTS, gates=GateTable(rules=(GateRule(action="finish", signatory="R"),)))


def say(action: str, content: str = "", to: str = "") -> dict:
    return {"thought": "next", "action": action, "content": content, "to": to}


def update(slot: str, text: str) -> Action:
    return Action(type="propose_memory_update", slot=slot, text=text, reason="we learned something")


# -- what an update says (team layer) ------------------------------------------------------------
def test_a_slot_update_replaces_only_that_slot_and_changes_the_digest():
    new = apply_update(MEMORY, parse_update("Plan", "D cleans the dates first", "", TEAM, with_gates=True))
    assert new.plan == "D cleans the dates first"
    assert (new.expertise, new.gates) == (MEMORY.expertise, MEMORY.gates)
    assert new.digest() != MEMORY.digest()


def test_gate_updates_read_wordings_like_the_build_and_can_add_replace_or_remove():
    add = parse_update("gate table", "run code -> Data Analyst data_changing", "", TEAM, with_gates=True)
    assert add.rule == GateRule(action="execute_code", signatory="D", scope="data_changing")
    replaced = apply_update(MEMORY, parse_update("gates", "finish -> D", "", TEAM, with_gates=True))
    assert [(r.action, r.signatory) for r in replaced.gates.rules] == [("finish", "D")]
    removed = apply_update(MEMORY, parse_update("gates", "finish -> none", "", TEAM, with_gates=True))
    assert removed.gates.rules == ()


@pytest.mark.parametrize(("slot", "text", "fragment"), [
    ("budget", "more steps", "unknown memory slot 'budget'"),
    ("gates", "finish to R", "'action -> signatory'"),
    ("gates", "wait -> R", "cannot be gated"),
    ("gates", "finish -> Z", "not on the team"),
    ("gates", "finish -> R data_changing", "execute_code only"),
    ("plan", "  ", "needs the new text"),
])
def test_an_unreadable_update_is_refused_with_its_reason(slot, text, fragment):
    with pytest.raises(MemoryUpdateError, match=fragment):
        parse_update(slot, text, "", TEAM, with_gates=True)


# -- the team act (session layer) ----------------------------------------------------------------
def test_an_update_applies_only_when_every_other_member_approves():
    living = LivingMemory(MEMORY, TEAM)
    pending = living.propose(update("plan", "R defines the period first"), "ai", round=1)
    assert (pending.update_id, pending.voters) == ("upd-1", ("D", "R"))
    assert [u.update_id for u in living.addressed_to("D")] == ["upd-1"] and not living.addressed_to("ai")
    living.answer("upd-1", "D", "approved", "", round=1)
    assert (pending.status, living.version, living.current) == ("pending", 1, MEMORY)
    living.answer("upd-1", "R", "approved", "ok", round=2)
    assert (pending.status, living.version, living.current.plan) == ("applied", 2, "R defines the period first")
    assert "version 2" in living.render() and "last change: plan by ai (round 2, upd-1)" in living.render()


def test_one_rejection_drops_an_update_and_nothing_changes():
    living = LivingMemory(MEMORY, TEAM)
    living.propose(update("evidence_standards", "any plot will do"), "D", round=1)
    assert living.answer("upd-1", "R", "rejected", "too weak", round=1).status == "dropped"
    assert (living.version, living.current) == (1, MEMORY)
    with pytest.raises(InvalidAction, match="already dropped"):
        living.answer("upd-1", "ai", "approved", "", round=1)


@pytest.mark.parametrize(("member", "update_id", "fragment"), [
    ("ai", "upd-1", "your own update"), ("D", "upd-9", "unknown update upd-9")])
def test_only_others_answer_an_open_update(member, update_id, fragment):
    living = LivingMemory(MEMORY, TEAM)
    living.propose(update("plan", "x"), "ai", round=1)
    with pytest.raises(InvalidAction, match=fragment):
        living.answer(update_id, member, "approved", "", round=1)


def test_the_action_is_offered_and_decoded_only_where_the_memory_lives():
    team = variant("dynamic-dr").team
    assert "propose_memory_update" in valid_actions("D", team, has_requests=False, added=(MEMORY_UPDATE,))
    assert "propose_memory_update" not in valid_actions("D", team, has_requests=False)
    living = valid_actions("D", team, has_requests=False, added=(MEMORY_UPDATE,))
    enum = step_schema(200, 500, living).model_json_schema()["properties"]["action"]["enum"]
    assert "propose_memory_update" in enum
    frozen = valid_actions("D", team, has_requests=False)
    assert "propose_memory_update" not in step_schema(200, 500, frozen).model_json_schema()["properties"]["action"]["enum"]


def test_the_single_agents_schema_lists_only_the_actions_it_may_take():
    alone = valid_actions("ai", ("ai",), has_requests=False, clock=True)
    lone = step_schema(200, 500, alone).model_json_schema()["properties"]["action"]["enum"]
    assert lone == list(alone) == ["execute_code", "edit_result", "finish", "wait"]
    team = step_schema(200, 500, valid_actions("ai", ("ai", "D"), has_requests=False, clock=True))
    assert set(team.model_json_schema()["properties"]["action"]["enum"]) - set(lone) == {"send_message"}


# -- running sessions ------------------------------------------------------------------------------
def ai_first_seed(team: tuple[str, ...], rounds: int) -> int:
    return next(s for s in range(1000) if all(round_order(team, s, r)[0] == "ai" for r in range(1, rounds + 1)))


def run(tmp_path, name: str, scripts: dict, *, seed: int, **settings):
    scripted = use_scripted(scripts, default=WAIT)
    var = variant(name)
    spec = SessionSpec(task_id=TASK.id, variant=var, seed=seed,
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team},
                       settings=SessionSettings(idle_rounds=2, **settings))
    sink = ListSink()
    result = asyncio.run(run_session(spec, TASK, gateway=Gateway(), sink=sink, workdir_root=tmp_path))
    return result, sink.events, scripted.calls


def prompts_after(calls: list[dict], caller: str, skip: int) -> list[str]:
    """`caller`'s user prompts after its first `skip` calls (the build's)."""
    mine = [c for c in calls if c["caller"] == caller]
    return [c["messages"][-1]["content"] for c in mine[skip:]]


BUILD = {"ai": [SLOTS, {**SLOTS, "gates": []}], "D": [SLOTS, ACCEPT], "R": [SLOTS, ACCEPT]}
SEED = ai_first_seed(("ai", "D", "R"), 3)


def test_an_accepted_update_changes_every_members_next_prompt_and_the_memory_hash(tmp_path):
    # the AI's cell after the update is news to everyone (a memory update is not: `acts_in_view`)
    scripts = {"ai": [*BUILD["ai"], say("propose_memory_update", "D cleans dates first. Reason: bad rows", "plan"),
                      say("execute_code", "x = 1")],
               "D": [*BUILD["D"], say("approve", "yes", "upd-1")],
               "R": [*BUILD["R"], say("approve", "agreed", "upd-1")]}
    result, events, calls = run(tmp_path, "dynamic-dr", scripts, seed=SEED)
    proposal = next(e for e in events if e.action == "propose_memory_update")
    assert (proposal.status, proposal.request_id) == ("pending", "upd-1")
    assert proposal.args == {"slot": "plan", "text": "D cleans dates first.", "reason": "bad rows"}
    applied = next(e for e in events if e.action == "memory_updated")
    assert applied.args["version"] == 2 and applied.args["memory"]["plan"] == "D cleans dates first."
    assert applied.args["digest"] != result.memory.digest()
    for member in ("ai", "D", "R"):  # each member's last prompt shows the new text and version
        last = prompts_after(calls, member, 2)[-1]
        assert "D cleans dates first." in last and f"version 2 {applied.args['digest'][:8]}" in last
        assert "AI analyses first" not in last


def test_a_rejected_update_changes_nothing(tmp_path):
    scripts = {"ai": [*BUILD["ai"], say("propose_memory_update", "skip the checks", "evidence_standards")],
               "D": [*BUILD["D"], say("reject", "no", "upd-1")],
               "R": [*BUILD["R"], say("approve", "fine", "upd-1")]}
    result, events, calls = run(tmp_path, "dynamic-dr", scripts, seed=SEED)
    assert [e.args["rejected_by"] for e in events if e.action == "memory_update_dropped"] == ["D"]
    assert not [e for e in events if e.action == "memory_updated"]
    assert ("D", "rejected") in [(e.participant, e.status) for e in events if e.request_id == "upd-1"]
    last = prompts_after(calls, "ai", 2)[-1]
    assert "cite a computed table" in last and "living, version 1" in last and "skip the checks" in last


def test_a_gate_added_mid_task_holds_the_next_matching_action(tmp_path):
    scripts = {"ai": [*BUILD["ai"], say("edit_result", "H1"), say("propose_memory_update", "edit -> R", "gates"),
                      say("edit_result", "H2")],
               "D": [*BUILD["D"], WAIT, say("approve", "ok", "upd-1")],
               "R": [*BUILD["R"], WAIT, say("approve", "ok", "upd-1")]}
    result, events, _ = run(tmp_path, "dynamic-dr", scripts, seed=SEED)
    edits = [(e.args["text"], e.status) for e in events if e.action == "edit_result" and e.participant == "ai"]
    assert edits == [("H1", "ok"), ("H2", "pending")]
    held = next(e for e in events if e.action == "edit_result" and e.status == "pending")
    assert (held.signatory, held.gate_rule.signatory, held.request_id) == ("R", "R", "req-1")
    assert next(e for e in events if e.action == "memory_updated").args["gates_added"] == ["edit_result -> R"]
    # The update itself (upd-1) is a team act, not a gated action: the gate metrics see req-1 only.
    assert [r.request_id for r in gate_requests(events)] == ["req-1"]


@pytest.mark.parametrize("name", STUDY_VARIANT_NAMES)
def test_no_study_variant_is_offered_a_memory_update(name):
    # What the engine itself sets up and renders for each participant (`session.prompting.preview`).
    views = preview(build_spec(TASK.id, name, 0), TASK)
    for view in views.values():
        assert "propose_memory_update" not in view.valid_actions
        assert "propose_memory_update" not in view.task.user + view.task.system
        assert all("propose_memory_update" not in p.user and "may propose an update" not in p.user
                   for p in view.build)
    dynamic = preview(build_spec(TASK.id, "dynamic-dr", 0), TASK)["D"]
    assert "propose_memory_update" in dynamic.valid_actions  # the same check sees it where it is


def test_a_memory_update_written_in_a_frozen_variant_is_malformed_output(tmp_path):
    # The embedded model's grammar has no such action outside Dynamic; a provider without one
    # may still write it: the step schema refuses it (retried, then a failed step), never an update.
    bad = say("propose_memory_update", "x", "plan")
    _, events, _ = run(tmp_path, "default-d", {"ai": [bad] * 3, "D": [bad] * 3}, seed=0, action_budget=1)
    steps = [e for e in events if e.participant in ("ai", "D")]
    assert steps and {(e.action, e.status) for e in steps} == {("invalid_output", "failed_step")}
    assert all("invalid StepSchema: action" in e.result for e in steps)
    assert not [e for e in events if e.action in ("propose_memory_update", "memory_updated")]
