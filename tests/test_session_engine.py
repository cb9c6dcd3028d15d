"""Whole sessions with scripted participants and a real kernel: visibility, gating, memory,
end conditions, determinism and failure handling.

Each participant gets its own script (`scripted/<pid>`); a participant past its script waits.
Scenarios that depend on who moves first in a round pick a seed whose drawn order puts the
AI agent first (found with the engine's own `round_order`), so they stay deterministic.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers.scripted import use_scripted
from pydantic import ValidationError

from colabkit.llm import BudgetExceeded, Gateway, ModelConfig
from colabkit.session import ListSink, SessionSettings, SessionSpec, comparable, engine, run_session
from colabkit.session.prompting.profile import COMPACT_GATE_NOTE_CHARS, COMPACT_SLOT_CHARS
from colabkit.session.scheduler import round_order
from colabkit.store.records import SessionRecord
from colabkit.tasks import load_tasks
from colabkit.team import VariantConfig, variant

TASK = load_tasks().get("demo_archaeology/0/0")
WAIT = json.dumps({"thought": "nothing for me now", "action": "wait"})


def say(action: str, content: str = "", to: str = "", thought: str = "next step") -> dict:
    return {"thought": thought, "action": action, "content": content, "to": to}


def ai_first_seed(team: tuple[str, ...], rounds: int) -> int:
    return next(s for s in range(1000) if all(round_order(team, s, r)[0] == "ai" for r in range(1, rounds + 1)))


def run(tmp: Path, var: VariantConfig, scripts: dict, *, seed: int = 0, gateway=None, **settings):
    """Run one session; return (result, events, scripted model, observations by participant)."""
    model = use_scripted(scripts, default=WAIT)
    spec = SessionSpec(
        task_id=TASK.id, variant=var, seed=seed,
        models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team},
        settings=SessionSettings(**settings),
    )
    observations: dict[str, list] = {pid: [] for pid in var.team}
    real = engine.build_observation

    def capture(**kwargs):
        obs = real(**kwargs)
        observations[obs.participant].append(obs)
        return obs

    sink = ListSink()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine, "build_observation", capture)
        result = asyncio.run(run_session(spec, TASK, gateway=gateway or Gateway(), sink=sink, workdir_root=tmp))
    assert [e.seq for e in sink.events] == list(range(len(sink.events)))
    assert result.n_events == len(sink.events)
    return result, sink.events, model, observations


def prompts(model, pid: str) -> list[str]:
    """The user messages (rendered observations) participant `pid`'s model received."""
    return [call["messages"][-1]["content"] for call in model.calls if call["name"] == pid]


# --- visibility and determinism -----------------------------------------------------------

VISIBILITY_SCRIPTS = {
    "ai": [say("execute_code", 'print("AI" + "-OUT-1")', thought="AI-THOUGHT-X")],
    "D": [say("execute_code", 'print("D" + "-OUT-7")', thought="D-SECRET-THOUGHT"),
          say("send_message", "D-MSG-TO-AI", "ai"), say("send_message", "D-MSG-TO-R", "R"),
          say("edit_result", "D-EDIT")],
    "R": [say("send_message", "R-NOTE-ALL", "all", thought="R-THOUGHT"), say("edit_result", "R-EDIT")],
}  # the edits are activity lines: the AI sees everyone's, a simulated human its own only


@pytest.fixture(scope="module")
def visibility(tmp_path_factory):
    first = run(tmp_path_factory.mktemp("vis1"), variant("default-dr"), VISIBILITY_SCRIPTS, seed=5, action_budget=8)
    second = run(tmp_path_factory.mktemp("vis2"), variant("default-dr"), VISIBILITY_SCRIPTS, seed=5, action_budget=8)
    return first, second


def test_a_simulated_human_sees_the_cells_the_ai_ran_with_their_outputs(visibility):
    (result, events, model, observations), _ = visibility
    ai_cell = next(c for c in result.snapshot.cells if c.author == "ai")
    seen = [obs for obs in observations["R"] if any(c.index == ai_cell.index for c in obs.cells)]
    assert seen, "R never saw the AI's cell"
    view = next(c for c in seen[-1].cells if c.index == ai_cell.index)
    assert (view.author, view.output) == ("ai", "AI-OUT-1")
    assert "AI-OUT-1" in "\n".join(prompts(model, "R")) and 'print("AI" + "-OUT-1")' in "\n".join(prompts(model, "R"))
    assert "D-OUT-7" in "\n".join(prompts(model, "R"))  # the whole notebook is shared, D's cells too


def test_a_simulated_human_never_sees_anothers_private_message_thought_or_activity(visibility):
    (result, events, model, observations), _ = visibility
    r_text, d_text = "\n".join(prompts(model, "R")), "\n".join(prompts(model, "D"))
    for secret in ("D-SECRET-THOUGHT", "D-MSG-TO-AI", "AI-THOUGHT-X"):
        assert secret not in r_text
    for secret in ("AI-THOUGHT-X", "R-THOUGHT"):
        assert secret not in d_text
    assert "R-NOTE-ALL" in d_text  # a message to all reaches everyone
    assert "D-SECRET-THOUGHT" in prompts(model, "D")[-1]  # a thought stays in its owner's scratchpad
    for obs in observations["R"]:
        assert all(m.to is None or "R" in m.to for m in obs.messages)
    r_activity = [a.line for obs in observations["R"] for a in obs.activity]
    ai_activity = [a.line for obs in observations["ai"] for a in obs.activity]
    assert any(line.split()[1:3] == ["R", "edit_result"] for line in r_activity)  # R's own: the check has lines
    assert any(line.split()[1:3] == ["D", "edit_result"] for line in ai_activity)  # D's exists (the AI sees it)
    assert all(line.split()[1] == "R" for line in r_activity)  # and R is never shown it


def test_under_the_full_profile_a_thought_joins_its_owners_timeline_and_no_one_elses(tmp_path):
    result, _, model, _ = run(tmp_path, variant("default-dr"), VISIBILITY_SCRIPTS, seed=5, context_window=128_000)
    assert result.spec.profile.timeline
    texts = {pid: prompts(model, pid) for pid in ("ai", "D", "R")}
    own = {"ai": "AI-THOUGHT-X", "D": "D-SECRET-THOUGHT", "R": "R-THOUGHT"}
    for pid, thought in own.items():
        for other in set(own) - {pid}:
            assert thought not in "\n".join(texts[other])
    shown = [p for p in texts["D"] if "D-SECRET-THOUGHT" in p]
    assert shown and all("[your private thought, r1 -> execute_code] D-SECRET-THOUGHT\n[cell" in p for p in shown)
    for pid, series in texts.items():  # every prompt starts with the previous one up to the editor
        for before, after in itertools.pairwise(series):
            assert after.startswith(before[:before.index("\n\n# Result editor")].removesuffix("\n(none)")), pid


def test_the_ai_agent_sees_all_code_outputs_and_messages_but_no_thoughts(visibility):
    (result, events, model, observations), _ = visibility
    ai_text = "\n".join(prompts(model, "ai"))
    assert "D-OUT-7" in ai_text and 'print("D"' in ai_text and "D-MSG-TO-AI" in ai_text and "R-NOTE-ALL" in ai_text
    assert "[#2 D -> R] D-MSG-TO-R" in ai_text  # messages between humans too
    assert "D-SECRET-THOUGHT" not in ai_text and "R-THOUGHT" not in ai_text
    assert {cell.author for cell in observations["ai"][-1].cells} == {"ai", "D"}
    thoughts = {e.participant: e.thought for e in events if e.action == "execute_code"}
    assert thoughts == {"ai": "AI-THOUGHT-X", "D": "D-SECRET-THOUGHT"}  # logged, though private
    assert result.ended_by == "budget" and result.totals.ai_turns == 8


def test_the_same_seed_gives_an_identical_event_log(visibility):
    (first, first_events, _, _), (second, second_events, _, _) = visibility
    assert comparable(first_events) == comparable(second_events)
    assert first.session_id == second.session_id and first.totals == second.totals



def test_a_session_whose_kernel_starts_after_its_first_model_calls_logs_the_same_events(visibility, tmp_path,
                                                                                        monkeypatch):
    """A batch queues kernel starts (`workspace.slots.start_slot`), so a session's first model
    calls may go out before its kernel starts: what the session does and logs is the same."""
    from colabkit.workspace import slots

    (alone, alone_events, _, _), _ = visibility
    var = variant("default-dr")
    model = use_scripted(VISIBILITY_SCRIPTS, default=WAIT)
    spec = SessionSpec(task_id=TASK.id, variant=var, seed=5,
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team},
                       settings=SessionSettings(action_budget=8))
    monkeypatch.setattr(slots, "STARTS_AT_ONCE", 1)
    monkeypatch.setattr(slots, "WARM_STARTS_AT_ONCE", 1)
    asked_before_start: list[int] = []

    async def scenario():
        held = asyncio.Event()

        async def another_start():  # holds the only slots until the session has asked its model
            async with slots.start_slot("cold"), slots.start_slot("warm"):
                held.set()
                while not model.calls:
                    await asyncio.sleep(0.01)
                asked_before_start.append(len(model.calls))

        blocker = asyncio.create_task(another_start())
        await held.wait()
        sink = ListSink()
        result = await run_session(spec, TASK, gateway=Gateway(), sink=sink, workdir_root=tmp_path)
        await blocker
        return result, sink.events

    result, events = asyncio.run(scenario())
    assert asked_before_start and asked_before_start[0] >= 1
    assert comparable(events) == comparable(alone_events)
    cells = [(c.index, c.author, c.code, c.status, c.output) for c in result.snapshot.cells]
    assert cells == [(c.index, c.author, c.code, c.status, c.output) for c in alone.snapshot.cells]
    assert result.session_id == alone.session_id and result.totals == alone.totals

# --- approval gating -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def gated(tmp_path_factory):
    scripts = {
        "ai": [say("edit_result", "H1: axes peak in the 16th century BCE"),
               say("edit_result", "H2: unsupported claim"), say("finish", "ready")],
        "D": [say("approve", "ok", "req-1")],  # req-1 is addressed to R, not D
        "R": [say("approve", "fits the data", "req-1"), say("reject", "no evidence for H2", "req-2"),
              say("approve", "ready to submit", "req-3")],
    }
    seed = ai_first_seed(("ai", "D", "R"), 3)
    return run(tmp_path_factory.mktemp("gated"), variant("preassigned-dr"), scripts, seed=seed)


def test_a_gated_edit_is_held_until_approved_then_applied_as_the_proposers(gated):
    result, events, model, observations = gated
    pending = next(e for e in events if e.action == "edit_result" and e.status == "pending")
    assert (pending.participant, pending.request_id, pending.signatory) == ("ai", "req-1", "R")
    approve = next(e for e in events if e.action == "approve" and e.status == "approved")
    assert (approve.participant, approve.request_id, approve.decision, approve.decision_reason) == (
        "R", "req-1", "approved", "fits the data")
    applied = events[approve.seq + 1]
    assert (applied.participant, applied.action, applied.status, applied.proposer, applied.request_id,
            applied.signatory) == ("ai", "edit_result", "ok", "ai", "req-1", "R")
    # while pending, the editor was untouched: R decided on an empty editor
    decision_prompt = next(p for p in prompts(model, "R") if "req-1 from ai to R [pending]" in p)
    assert "# Result editor (the submitted hypothesis)\n(empty)" in decision_prompt
    assert [(v.author, v.text) for v in result.snapshot.editor_versions][0] == (
        "ai", "H1: axes peak in the 16th century BCE")


def test_a_member_with_no_request_open_for_it_is_not_offered_a_decision(gated):
    """D signs nothing here: approve is not in its schema, so its written approve of R's req-1 is
    repaired away (a wait), and no decision of D's reaches the log."""
    _, events, model, observations = gated
    assert not [e for e in events if e.participant == "D" and e.action in ("approve", "reject")]
    assert all("approve" not in o.valid_actions for o in observations["D"])
    d_schema = next(c for c in model.calls if c["name"] == "D")["params"]["response_format"]["json_schema"]["schema"]
    assert "approve" not in json.dumps(d_schema)


def test_a_rejected_edit_leaves_the_editor_as_it_was_and_the_proposer_sees_why(gated):
    result, events, model, _ = gated
    reject = next(e for e in events if e.action == "reject")
    assert (reject.status, reject.request_id, reject.decision) == ("rejected", "req-2", "rejected")
    assert not any(e.status == "ok" and e.request_id == "req-2" for e in events)
    assert [v.text for v in result.snapshot.editor_versions] == ["H1: axes peak in the 16th century BCE"]
    assert result.final_hypothesis == "H1: axes peak in the 16th century BCE"
    assert any("req-2" in p and "[rejected]" in p and "no evidence for H2" in p for p in prompts(model, "ai"))


def test_an_approved_finish_ends_the_session(gated):
    result, events, _, _ = gated
    assert result.ended_by == "finish"
    assert events[-2].action == "finish" and events[-2].proposer == "ai" and events[-2].request_id == "req-3"
    assert events[-1].action == "session_end" and events[-1].args["ended_by"] == "finish"
    assert result.totals.approved == 2 and result.totals.rejected == 1 and result.totals.requests == 3


# --- memory build phase and self-selected gates ---------------------------------------------

SLOTS = {"expertise": "D knows the columns, R the periods", "responsibility": "R checks the result",
         "plan": "AI analyses, asks D and R", "evidence_standards": "cite a computed table"}


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory):
    scripts = {
        "ai": [SLOTS, {**SLOTS, "gates": [{"action": "edit_result", "signatory": "D"}]},
               say("edit_result", "H-self")],
        "D": [{**SLOTS, "gates": []}, {"reply": {"decision": "accept"}}],
        "R": [{**SLOTS, "gates": [{"action": "finish", "signatory": "R"}]}, {"reply": {"decision": "accept"}}],
    }
    return run(tmp_path_factory.mktemp("scaf"), variant("scaffolded-dr"), scripts, seed=3, action_budget=3)


def test_the_build_phase_freezes_the_memory_and_logs_its_digest(scaffolded):
    result, events, _, _ = scaffolded
    build = [e for e in events if e.phase == "build"]
    assert [e.action for e in build].count("propose_memory") == 3
    assert [e.action for e in build].count("consolidate_memory") == 1
    assert sorted((e.participant, e.action) for e in build[-3:-1]) == [("D", "ratify_memory"), ("R", "ratify_memory")]
    frozen = build[-1]
    assert frozen.action == "memory_frozen" and frozen.args["digest"] == result.memory.digest()
    assert all(e.phase == "build" for e in events[: events.index(frozen) + 1])  # session_start included
    assert all(e.phase == "task" for e in events[events.index(frozen) + 1 :])
    with pytest.raises(ValidationError):
        result.memory.plan = "changed"
    assert result.memory.digest() == frozen.result


def test_the_memory_is_in_every_task_phase_observation(scaffolded):
    result, _, model, _ = scaffolded
    task_calls = model.calls[6:]  # three proposals, one consolidation and two ratifications come first
    assert task_calls and all(  # messages[1]: the observation (a repair's prompt follows it)
        f"frozen {result.memory.digest()[:8]}" in call["messages"][1]["content"] for call in task_calls)
    assert all("Shared Group Memory" not in call["messages"][-1]["content"] for call in model.calls[:4])
    assert all("Shared Group Memory (draft" in call["messages"][-1]["content"] for call in model.calls[4:6])


def test_self_selected_gates_come_from_the_memory(scaffolded):
    result, events, _, _ = scaffolded
    pending = next(e for e in events if e.action == "edit_result")
    assert pending.status == "pending" and pending.signatory == "D"  # preassigned would say R
    expired = [e for e in events if e.action == "request_expired"]
    assert [(e.request_id, e.signatory) for e in expired] == [("req-1", "D")]  # D's closing answers failed
    assert result.final_hypothesis == "" and result.ended_by == "budget" and events[-1].args["expired"] == 1


def test_a_memory_at_the_compact_maximum_is_shown_whole_and_the_query_is_said_once(tmp_path):
    long = {slot: f"{slot} " + "w" * (COMPACT_SLOT_CHARS - len(slot) - 1) for slot in SLOTS}  # slots at the maximum
    notes = ["when the claim changes ", "only after the table is cited ", "messages to all, after a result ",
             "code that rewrites a data file ", "any code once the result is drafted "]
    notes = [note + "x" * (COMPACT_GATE_NOTE_CHARS - len(note)) for note in notes]  # notes at the maximum
    gates = [{"action": "edit_result", "signatory": "D", "note": notes[0]},
             {"action": "finish", "signatory": "D", "note": notes[1]},
             {"action": "send_message", "signatory": "D", "note": notes[2]},
             {"action": "execute_code", "signatory": "D", "scope": "data_changing", "note": notes[3]},
             {"action": "execute_code", "signatory": "D", "note": notes[4]}]
    scripts = {"ai": [long, {**long, "gates": gates}, say("send_message", "hello", "all")],
               "D": [long, {"reply": {"decision": "accept"}}]}
    result, _, model, _ = run(tmp_path, variant("scaffolded-d"), scripts, seed=1, action_budget=2)
    assert len(result.memory.gates.rules) == 5  # as many gates as can take effect, each with its note
    shown = result.memory.render()
    assert len(shown) <= (result.spec.profile.memory_chars or 0)  # so nothing the team wrote is cut
    task_calls = model.calls[4:]  # two proposals, one consolidation and one ratification come first
    # the slots in the memory section, the gates whole in the gate-rules section, every note included
    slots, rules = result.memory.render(gates=False), [f"- {r.describe()}" for r in result.memory.gates.rules]
    assert task_calls and all(slots in call["messages"][1]["content"] for call in task_calls)
    assert all(rule in call["messages"][1]["content"] for call in task_calls for rule in rules)
    assert all(notes[4] in rule for rule in rules[-1:])
    assert all(call["messages"][1]["content"].count(TASK.query) == 1 for call in model.calls)


def test_memory_only_ignores_gates_the_team_wrote(tmp_path):
    scripts = {"ai": [SLOTS, {**SLOTS, "gates": [{"action": "edit_result", "signatory": "D"}]},
                      say("edit_result", "H-direct"), say("finish", "done")],
               "D": [SLOTS]}
    result, events, _, _ = run(tmp_path, variant("memory-d"), scripts, seed=1)
    assert result.memory is not None and result.memory.gates is None
    edit = next(e for e in events if e.action == "edit_result")
    assert edit.status == "ok" and edit.request_id is None
    assert result.ended_by == "finish" and result.final_hypothesis == "H-direct"


# --- end conditions and failures ------------------------------------------------------------


def test_a_malformed_answer_is_a_failed_step_and_the_session_goes_on_to_finish(tmp_path):
    # the gateway asks once more to repair an invalid answer, so it takes two bad replies
    scripts = {"ai": ["I think we should look at axes", "still not json",
                      say("edit_result", "X"), say("finish", "done")]}
    result, events, _, _ = run(tmp_path, variant("single"), scripts)
    failed = events[1]
    assert (failed.action, failed.status, len(failed.llm_calls)) == ("invalid_output", "failed_step", 2)
    assert failed.llm_calls[0].error is not None
    assert result.ended_by == "finish" and result.final_hypothesis == "X"
    assert result.totals.failed_steps == 1 and result.totals.actions == 3


def test_the_action_budget_ends_the_session(tmp_path):
    scripts = {"ai": [say("execute_code", "a = 1"), say("execute_code", "a + 1"), say("execute_code", "a + 2")]}
    result, events, _, _ = run(tmp_path, variant("single"), scripts, action_budget=2)
    assert result.ended_by == "budget"
    assert [e.status for e in events if e.action == "execute_code"] == ["ok", "ok"]
    assert result.totals.actions == 2 and result.totals.cells == 2


def test_either_side_ends_a_dr_session_when_the_humans_30_steps_are_spent_and_the_record_says_so(tmp_path):
    chatter = [say("send_message", f"note {i}", "all") for i in range(20)]
    scripts = {"ai": [say("execute_code", f"step = {i}") for i in range(40)], "D": chatter, "R": list(chatter)}
    result, events, model, _ = run(tmp_path, variant("default-dr"), scripts, max_rounds=45, termination="either_side")
    assert result.ended_by == "budget" and result.budget_side == "human"
    assert result.totals.human_actions == 30 and result.totals.ai_actions < 30
    steps = [e for e in events if e.phase == "task" and e.participant != "system"]
    assert steps[-1].participant in ("D", "R")  # the humans' 30th step was the last step anyone took
    end = events[-1]
    assert end.action == "session_end" and (end.args["termination"], end.args["budget_side"]) == ("either_side", "human")
    record = SessionRecord.from_result(result, started=datetime.now(UTC), finished=datetime.now(UTC))
    assert (record.ended_by, record.budget_side, record.spec.settings.termination) == ("budget", "human", "either_side")
    assert sum(1 for c in model.calls if c["name"] in ("D", "R")) == 30


def test_under_ai_budget_a_dr_teams_humans_cannot_end_the_session_and_everyone_sees_both_budgets(tmp_path):
    """The same chatter as above under the default rule: each human stops at its own cap of 6, the
    AI takes all of its 6 steps and its budget ends the session."""
    chatter = [say("send_message", f"note {i}", "all") for i in range(20)]
    scripts = {"ai": [say("execute_code", f"step = {i}") for i in range(40)], "D": chatter, "R": list(chatter)}
    result, events, model, observations = run(tmp_path, variant("default-dr"), scripts, action_budget=6)
    assert result.spec.settings.termination == "ai_budget"  # the default
    assert result.ended_by == "budget" and result.budget_side == "ai" and events[-1].args["termination"] == "ai_budget"
    assert result.totals.ai_actions == 6 and result.totals.human_actions == 12  # 6 each: caps are per human
    assert sum(1 for c in model.calls if c["name"] == "D") == 6  # a spent human is not asked again
    last = [e for e in events if e.phase == "task" and e.participant != "system"][-1]
    assert last.participant == "ai"
    first_d = observations["D"][0].render()
    assert re.search(r"6 actions left for you; [56] for the AI agent \(ai\)\)", first_d)
    assert "ends when the AI agent (ai) has taken all its steps" in first_d
    assert "for the AI agent" not in observations["ai"][0].render().split("# Now")[-1]
    assert "ends when the AI agent (ai) has taken all its steps" in observations["ai"][0].render()
    assert all("finish" not in o.valid_actions for pid in ("D", "R") for o in observations[pid])


def test_a_gated_edit_at_the_ais_last_step_is_decided_in_the_closing_pass_and_submitted(tmp_path):
    """preassigned-r, AI budget 2, the AI first every round: its edit (R signs edits) is its last
    step, so the budget ends the session before R's turn; the closing pass asks R, who approves."""
    scripts = {"ai": [say("execute_code", "x = 1"), say("edit_result", "H-FINAL")],
               "R": [WAIT, say("approve", "fits the cell", "req-1")]}
    seed = ai_first_seed(("ai", "R"), 2)
    result, events, model, observations = run(tmp_path, variant("preassigned-r"), scripts, seed=seed, action_budget=2)
    assert result.ended_by == "budget" and result.budget_side == "ai"
    assert result.final_hypothesis == "H-FINAL" and events[-1].args["final_hypothesis"] == "H-FINAL"
    names = [e.action for e in events]
    assert names.index("closing_pass") < names.index("approve") < names.index("session_end")
    decision = next(e for e in events if e.action == "approve")
    assert decision.args["closing_pass"] is True and decision.status == "approved"
    totals = result.totals
    assert (totals.closing_decisions, totals.expired, totals.human_actions, totals.ai_actions) == (1, 0, 0, 2)
    closing = observations["R"][-1]
    assert closing.closing and set(closing.valid_actions) <= {"approve", "reject", "wait"}
    assert "closing step" in closing.render()


def test_an_open_request_the_signatory_leaves_in_the_closing_pass_expires_counted_by_action(tmp_path):
    scripts = {"ai": [say("execute_code", "x = 1"), say("edit_result", "H-FINAL")], "R": [WAIT, WAIT]}
    seed = ai_first_seed(("ai", "R"), 2)
    result, events, _, _ = run(tmp_path, variant("preassigned-r"), scripts, seed=seed, action_budget=2)
    assert result.final_hypothesis == "" and "closing_pass" in [e.action for e in events]
    assert (result.totals.expired, result.totals.expired_edit_result, result.totals.closing_decisions) == (1, 1, 0)


def test_all_sides_keeps_the_humans_budget_and_the_ai_budget_apart_until_both_are_spent(tmp_path):
    chatter = [say("send_message", f"note {i}", "all") for i in range(20)]
    scripts = {"ai": [say("execute_code", f"step = {i}") for i in range(40)], "D": chatter, "R": list(chatter)}
    result, events, model, observations = run(tmp_path, variant("default-dr"), scripts, max_rounds=45,
                                              termination="all_sides")
    assert result.budget_side == "ai" and events[-1].args["termination"] == "all_sides"  # the AI ran out last
    totals = result.totals
    assert (totals.ai_budget, totals.human_budget, totals.team_budget) == (30, 30, None)
    assert totals.human_actions == 30 and totals.ai_actions == 30 and totals.actions == 60
    assert result.ended_by == "budget"
    steps = [e for e in events if e.phase == "task" and e.participant != "system"]
    humans_done = max(e.seq for e in steps if e.participant in ("D", "R"))
    ai_after = [e for e in steps if e.participant == "ai" and e.seq > humans_done]
    assert ai_after and all(e.status == "ok" for e in ai_after)  # the AI went on with its own steps
    assert sum(1 for c in model.calls if c["name"] in ("D", "R")) == 30  # spent humans were not asked again
    late = [obs for obs in observations["ai"] if obs.round > events[humans_done].round]
    assert late and "actions left for you" in late[-1].render()


def test_a_decision_is_the_signatorys_step_never_the_proposers(tmp_path):
    scripts = {"ai": [say("edit_result", "H1"), say("finish", "done")],
               "R": [say("approve", "fits", "req-1"), say("approve", "ok", "req-2")]}
    seed = ai_first_seed(("ai", "R"), 3)
    result, events, _, _ = run(tmp_path, variant("preassigned-r"), scripts, seed=seed)
    assert result.ended_by == "finish" and result.final_hypothesis == "H1"
    # the AI proposed twice, R decided twice (machinery, off budget: issue 42); the two
    # applications are nobody's extra step
    assert (result.totals.ai_actions, result.totals.human_actions, result.totals.decisions) == (2, 0, 2)
    applied = [e for e in events if e.proposer == "ai" and e.participant == "ai"]
    assert [e.action for e in applied] == ["edit_result", "finish"]


def test_a_spent_side_may_still_decide_the_requests_addressed_to_it_and_nothing_else(tmp_path):
    """preassigned-r, the humans' budget 2: R spends it chatting, then the AI's gated edit and
    finish still get decided, in R's decision steps (machinery, off budget: issue 42), and R is
    never asked for a step of its own again."""
    scripts = {"ai": [say("execute_code", "x = 1"), say("execute_code", "x + 1"), say("edit_result", "H1"),
                      say("finish", "done")],
               "R": [say("send_message", "one", "all"), say("send_message", "two", "all"),
                     say("approve", "fits", "req-1"), say("approve", "ok", "req-2")]}
    seed = ai_first_seed(("ai", "R"), 6)
    result, events, _, observations = run(tmp_path, variant("preassigned-r"), scripts, seed=seed,
                                          human_action_budget=2, termination="all_sides")
    assert result.ended_by == "finish" and result.final_hypothesis == "H1"
    r_steps = [(e.action, e.status, e.kind) for e in events if e.participant == "R" and e.phase == "task"]
    assert r_steps == [("send_message", "ok", "step"), ("send_message", "ok", "step"),
                       ("approve", "approved", "machinery"), ("approve", "approved", "machinery")]
    assert result.totals.human_actions == result.totals.human_budget and result.totals.decisions == 2
    spent_views = [o for o in observations["R"] if "send_message" not in o.valid_actions]
    assert len(spent_views) == 2 and all(o.deciding and set(o.valid_actions) == {"approve", "reject", "wait"}
                                         for o in spent_views)


def test_under_either_side_a_request_open_when_a_side_is_spent_is_recorded_undecided(tmp_path):
    scripts = {"ai": [say("edit_result", "H1")],
               "R": [say("send_message", "one", "all"), say("send_message", "two", "all")]}
    seed = ai_first_seed(("ai", "R"), 6)
    result, events, _, _ = run(tmp_path, variant("preassigned-r"), scripts, seed=seed, human_action_budget=2,
                               termination="either_side")
    assert result.ended_by == "budget" and result.budget_side == "human" and result.final_hypothesis == ""
    assert "closing_pass" in [e.action for e in events]  # R was asked once more, and waited
    expired = [e for e in events if e.action == "request_expired"]
    assert [(e.request_id, e.args["decision"]) for e in expired] == [("req-1", "undecided")]
    assert "undecided" in expired[0].result and result.totals.expired == 1


def test_preassigned_members_see_the_gate_table_before_any_request(tmp_path):
    result, events, _, observations = run(tmp_path, variant("preassigned-dr"), {"ai": [], "D": [], "R": []},
                                          idle_rounds=1)
    assert not [e for e in events if e.status == "pending"]  # nothing was ever held
    for pid, signs in (("ai", None), ("D", "You sign: execute_code"), ("R", "You sign: edit_result, finish")):
        first = observations[pid][0].render()
        section = first.split("# Gate rules\n")[1].split("\n\n# ")[0]
        assert section.startswith("Set by: assigned to the team before the task.")
        assert "- edit_result -> R" in section and "- finish -> R" in section
        assert "- execute_code (data-changing code only) -> D" in section
        assert (signs in section) if signs else "You sign" not in section


def test_the_single_agent_waits_as_a_team_ai_does_a_step_of_its_budget(tmp_path):
    """Under the AI's clock a wait is one of the AI's steps alone as in a team: offered, never an end."""
    scripts = {"ai": [say("wait"), say("edit_result", "H1"), say("finish", "done")]}
    result, events, model, observations = run(tmp_path, variant("single"), scripts, action_budget=3)
    assert all("wait" in obs.valid_actions and "send_message" not in obs.valid_actions for obs in observations["ai"])
    assert [(e.action, e.status) for e in events if e.participant == "ai"] == [
        ("wait", "ok"), ("edit_result", "ok"), ("finish", "ok")]
    assert result.ended_by == "finish" and result.totals.ai_turns == 3 and result.final_hypothesis == "H1"


def test_under_either_side_the_single_agent_is_not_offered_wait_and_never_ends_idle_after_one_wait(tmp_path):
    scripts = {"ai": [say("wait"), say("edit_result", "H1"), say("finish", "done")]}
    result, events, model, observations = run(tmp_path, variant("single"), scripts, idle_rounds=1,
                                              termination="either_side")
    assert all("wait" not in obs.valid_actions for obs in observations["ai"])
    assert "wait:" not in prompts(model, "ai")[0]
    # its schema has no wait: the written wait is repaired (the next answer), never an idle step
    first = [e for e in events if e.participant == "ai"][0]
    assert (first.action, first.status, len(first.llm_calls)) == ("edit_result", "ok", 2)
    assert "not a valid" in model.calls[1]["messages"][-1]["content"]
    assert result.ended_by == "finish" and result.final_hypothesis == "H1"


def test_the_team_wide_cap_is_an_option(tmp_path):
    scripts = {"ai": [say("execute_code", f"a = {i}") for i in range(5)],
               "D": [say("send_message", f"m{i}", "all") for i in range(5)]}
    result, _, _, _ = run(tmp_path, variant("default-d"), scripts, team_action_budget=3)
    assert result.ended_by == "budget" and result.totals.actions == 3 and result.totals.team_budget == 3


def test_the_default_ai_prompt_and_view_name_teammates_but_not_their_knowledge(visibility):
    (_, _, model, _), _ = visibility
    system = next(c["messages"][0]["content"] for c in model.calls if c["name"] == "ai")
    for word in ("Data Analyst", "Researcher", "domain", "column", "quirk", "definition", "knows", "lead"):
        assert word not in system
    first = prompts(model, "ai")[0]
    assert "Team: ai (AI agent), D (Data Analyst), R (Researcher)." in first
    for word in ("domain", "column", "quirk", "Domain knowledge", "Data notes"):
        assert word.lower() not in first.split("# Team")[1].lower()


def test_idleness_ends_the_session_without_further_model_calls(tmp_path):
    result, events, model, _ = run(tmp_path, variant("default-d"), {"ai": [], "D": []}, idle_rounds=2,
                                   termination="either_side")
    assert result.ended_by == "idle"
    assert len(model.calls) == 2  # both waited in round 1; nothing new after, nobody was asked again
    assert events[-1].args["rounds"] == 2


def test_max_rounds_ends_a_session_that_keeps_going(tmp_path):
    result, _, _, _ = run(tmp_path, variant("single"), {"ai": [say("execute_code", f"{i}") for i in range(5)]},
                          max_rounds=2, termination="either_side")
    assert result.ended_by == "max_rounds" and result.totals.rounds == 2


class _Broken:
    """A gateway that fails the way only a bug or an exhausted budget can."""

    budget = None  # no spending cap of its own

    def __init__(self, exc: BaseException):
        self.exc = exc

    async def structured(self, *args, **kwargs):
        raise self.exc


@pytest.mark.parametrize(("exc", "ended_by", "status"), [
    (RuntimeError("boom"), "error", "error"),
    (BudgetExceeded("token budget reached"), "llm_budget", "info"),
])
def test_a_crash_or_spent_llm_budget_ends_the_session_recorded(tmp_path, exc, ended_by, status):
    result, events, _, _ = run(tmp_path, variant("single"), {}, gateway=_Broken(exc))
    assert result.ended_by == ended_by
    end = events[-1]
    assert end.action == "session_end" and end.status == status and str(exc) in end.result
    assert [e.action for e in events] == ["session_start", "session_end"]


def test_a_kernel_death_is_a_failed_cell_plus_a_system_restart_event_and_work_goes_on(tmp_path):
    scripts = {"ai": [say("execute_code", "x = 41"), say("execute_code", "import os; os._exit(1)"),
                      say("execute_code", "print(x + 1)")]}
    result, events, _, _ = run(tmp_path, variant("single"), scripts, action_budget=3)
    cells = [e for e in events if e.action == "execute_code"]
    assert [e.status for e in cells] == ["ok", "error", "ok"]  # Co-Gym would log the death as success
    restart = events[events.index(cells[1]) + 1]
    assert (restart.participant, restart.action) == ("system", "kernel_restart")
    assert "42" in cells[2].result  # replayed state survives the restart
    assert result.totals.kernel_restarts == 1
