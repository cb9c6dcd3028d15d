"""Session-layer logic that needs no kernel and no model: step mapping, gates, scheduling,
observation rendering and the event-log helpers."""

from __future__ import annotations

from types import SimpleNamespace
from typing import get_args

import pytest
from pydantic import ValidationError

from colabkit.llm import CallRecord
from colabkit.session import Event, ListSink, SessionSettings, SessionSpec, StepSchema, comparable
from colabkit.session.actions import ActionType, InvalidAction, to_action, valid_actions
from colabkit.session.events import EventLog
from colabkit.session.gating import Gatekeeper, gate_table
from colabkit.session.observation import build_observation
from colabkit.session.profile import compact_profile, full_profile
from colabkit.session.scheduler import Scheduler, round_order
from colabkit.team import ACTION_TYPES, GateRule, GateTable, MemoryRecord, VariantConfig, variant

TEAM = ("ai", "D", "R")


def step(action: str, content: str = "", to: str = "") -> StepSchema:
    return StepSchema(thought="t", action=action, content=content, to=to)


# --- the flat step schema and its mapping -------------------------------------------------


def test_step_schema_bounds_strings_for_the_grammar():
    schema = StepSchema.model_json_schema()["properties"]
    assert schema["thought"]["maxLength"] == 200
    assert schema["content"]["maxLength"] == 500
    assert schema["to"]["maxLength"] == 20
    # the grammar must make a small model write every field; parsing stays lenient
    assert StepSchema.model_json_schema()["required"] == ["thought", "action", "content", "to"]
    assert StepSchema.model_validate_json('{"thought": "t", "action": "wait"}').content == ""
    with pytest.raises(ValidationError):
        StepSchema(thought="x" * 201, action="wait")
    with pytest.raises(ValidationError):
        StepSchema(thought="x", action="dance")


def test_send_message_recipients_are_parsed_and_checked():
    assert to_action(step("send_message", "hi", "all"), "ai", TEAM).to is None
    assert to_action(step("send_message", "hi"), "ai", TEAM).to is None
    assert to_action(step("send_message", "hi", "d, r"), "ai", TEAM).to == ("D", "R")
    assert to_action(step("send_message", "hi", "AI"), "D", TEAM).to == ("ai",)
    with pytest.raises(InvalidAction, match="unknown recipient 'ai'"):
        to_action(step("send_message", "hi", "ai"), "ai", TEAM)  # not to oneself
    with pytest.raises(InvalidAction, match="no teammate"):
        to_action(step("send_message", "hi"), "ai", ("ai",))
    with pytest.raises(InvalidAction, match="message text"):
        to_action(step("send_message", "  ", "D"), "ai", TEAM)


def test_payload_fields_follow_the_documented_mapping():
    assert to_action(step("execute_code", "print(1)"), "ai", TEAM).code == "print(1)"
    assert to_action(step("edit_result", " H "), "ai", TEAM).text == "H"
    approve = to_action(step("approve", "looks right", "req-3"), "R", TEAM)
    assert (approve.request_id, approve.reason) == ("req-3", "looks right")
    # a small model may put the id into the content instead
    assert to_action(step("reject", "REQ-12: no evidence"), "R", TEAM).request_id == "req-12"
    assert to_action(step("finish", "done"), "ai", TEAM).reason == "done"
    with pytest.raises(InvalidAction, match="request id"):
        to_action(step("approve", "fine"), "R", TEAM)
    with pytest.raises(InvalidAction, match="code"):
        to_action(step("execute_code"), "ai", TEAM)
    assert to_action(step("edit_result", "H"), "ai", TEAM).args() == {"text": "H"}


def test_the_step_schema_offers_exactly_the_team_layers_action_types():
    assert get_args(ActionType) == ACTION_TYPES


def test_valid_actions_offer_decisions_only_with_a_request_and_messages_only_in_a_team():
    assert "approve" not in valid_actions("R", TEAM, has_requests=False)
    assert {"approve", "reject"} <= set(valid_actions("R", TEAM, has_requests=True))
    assert "send_message" not in valid_actions("ai", ("ai",), has_requests=False)


# --- gates -----------------------------------------------------------------------------------

SLOTS = dict(expertise="e", responsibility="r", plan="p", evidence_standards="s")


def test_gate_table_is_read_from_the_variants_source():
    own = GateTable(rules=(GateRule(action="edit_result", signatory="D"),))
    memory = MemoryRecord(**SLOTS, gates=own)
    assert gate_table(variant("scaffolded-dr"), memory) is own
    assert gate_table(variant("scaffolded-dr"), MemoryRecord(**SLOTS)) is None
    assert gate_table(variant("preassigned-dr"), memory) == variant("preassigned-dr").preassigned
    assert gate_table(variant("default-dr"), memory) is None
    assert gate_table(variant("memory-dr"), memory) is None
    custom = VariantConfig(name="pre-custom", humans=("D", "R"), gate_source="preassigned", preassigned=own)
    assert gate_table(custom, None) is own


def test_requests_are_routed_decided_once_and_never_self_signed():
    gates = Gatekeeper(GateTable(rules=(GateRule(action="edit_result", signatory="R"),)), TEAM)
    edit = to_action(step("edit_result", "H"), "ai", TEAM)
    rule = gates.rule_for(edit, "ai")
    assert rule is not None and rule.signatory == "R"
    assert gates.rule_for(to_action(step("execute_code", "1"), "ai", TEAM), "ai") is None
    request = gates.open(edit, "ai", rule, round=1)
    assert request.request_id == "req-1"
    assert [r.request_id for r in gates.addressed_to("R")] == ["req-1"]
    with pytest.raises(InvalidAction, match="addressed to R"):
        gates.decide("req-1", "D", "approved", "")
    with pytest.raises(InvalidAction, match="own request"):
        gates.decide("req-1", "ai", "approved", "")
    with pytest.raises(InvalidAction, match="unknown request req-9; pending for you: req-1"):
        gates.decide("req-9", "R", "approved", "")
    assert gates.decide("req-1", "R", "rejected", "no evidence").status == "rejected"
    with pytest.raises(InvalidAction, match="already rejected"):
        gates.decide("req-1", "R", "approved", "")
    # R's own edit under R's gate is not held, and nobody else is drafted in to sign it
    assert gates.rule_for(to_action(step("edit_result", "H"), "R", TEAM), "R") is None
    assert request.condition == "" and request.rule.signatory == "R"
    second = gates.open(edit, "ai", rule, round=2)
    assert second.request_id == "req-2"
    assert [r.request_id for r in gates.expire_pending()] == ["req-2"]
    assert gates.requests["req-2"].status == "expired"


def test_single_agent_is_never_gated():
    gates = Gatekeeper(GateTable(rules=(GateRule(action="edit_result", signatory="R"),)), ("ai",))
    assert gates.rule_for(to_action(step("edit_result", "H"), "ai", ("ai",)), "ai") is None


# --- scheduling ------------------------------------------------------------------------------


def test_round_order_is_a_seeded_permutation_with_no_fixed_first_mover():
    assert round_order(TEAM, 7, 3) == round_order(TEAM, 7, 3)
    firsts = {round_order(TEAM, seed, r)[0] for seed in range(5) for r in range(1, 6)}
    assert firsts == set(TEAM)
    assert all(sorted(round_order(TEAM, 1, r)) == sorted(TEAM) for r in range(1, 10))


SIDES = {"ai": "ai", "D": "human", "R": "human"}


def test_scheduler_skips_a_waiter_until_its_view_changes_and_detects_idleness():
    sched = Scheduler(SessionSettings(action_budget=2, idle_rounds=2), {"ai": "ai", "D": "human"})
    assert sched.eligible("ai", "k1")  # has not acted yet
    sched.record_step("ai", "k1", waited=False)
    assert sched.eligible("ai", "k1")  # acted, so it may follow up on its own result
    sched.record_step("ai", "k1", waited=True)
    assert not sched.eligible("ai", "k1")
    assert sched.eligible("ai", "k2")
    assert sched.end_round() is False  # one action this round: not idle
    assert sched.end_round() is False  # first idle round
    assert sched.end_round() is True  # K=2 idle rounds
    assert sched.actions_left("ai") == 1 and sched.actions_left("D") == 2
    sched.record_step("D", "x", waited=False)
    assert not sched.budget_spent and sched.actions == 2 and sched.waits == 1


def test_budgets_are_per_side_and_the_humans_share_theirs():
    sched = Scheduler(SessionSettings(action_budget=2, human_action_budget=3), SIDES)
    for pid in ("D", "R", "D"):
        sched.record_step(pid, "k", waited=False)
    assert sched.used == {"ai": 0, "human": 3}
    assert sched.actions_left("R") == 0 and not sched.eligible("R", "new view")  # spent: no more steps
    assert sched.actions_left("ai") == 2 and sched.eligible("ai", "k") and not sched.budget_spent
    sched.record_step("ai", "k", waited=False)
    sched.record_step("ai", "k", waited=False)
    assert sched.budget_spent and not sched.eligible("ai", "other view")


def test_a_team_wide_cap_stays_available():
    settings = SessionSettings(action_budget=30, team_action_budget=2)
    sched = Scheduler(settings, SIDES)
    sched.record_step("D", "k", waited=False)
    assert sched.actions_left("ai") == 1 and sched.actions_left("R") == 1
    sched.record_step("ai", "k", waited=False)
    assert sched.budget_spent and settings.budget_for("human") == 30


# --- observation -----------------------------------------------------------------------------


COMPACT = compact_profile(8192, "test")
FULL = full_profile(128_000, "test")


def fake_workspace(n_messages: int, n_cells: int, output: str = "o" * 5000) -> SimpleNamespace:
    messages = [SimpleNamespace(index=i, sender="D", to=None, text=f"message {i} " + "m" * 400)
                for i in range(n_messages)]
    cells = [SimpleNamespace(index=i, author="ai", status="ok", code="x" * 600, output=f"out{i} {output}", error=None)
             for i in range(n_cells)]
    return SimpleNamespace(
        chat=SimpleNamespace(messages=messages, visible_to=lambda p: messages),
        editor=SimpleNamespace(text="H " * 400),
        cells=cells,
    )


def observe(participant="R", profile=COMPACT, **overrides):
    base = dict(participant=participant, team=TEAM, names=TEAM, sees_all=participant == "ai", profile=profile,
                round=1, actions_left=5, budget_holder="you", query="q", briefing="b", memory=None,
                workspace=fake_workspace(1, 1), gatekeeper=Gatekeeper(None, TEAM), cells_at_request={},
                events=[], scratchpad=[], valid_actions=("wait",))
    return build_observation(**{**base, **overrides})


def test_rendered_observation_stays_compact_and_says_what_was_elided():
    gates = Gatekeeper(GateTable(rules=(GateRule(action="edit_result", signatory="R"),)), TEAM)
    for _ in range(5):
        edit = to_action(step("edit_result", "z" * 500), "ai", TEAM)
        gates.open(edit, "ai", gates.rule_for(edit, "ai"), round=1)
    log = EventLog("s", ListSink())
    for i in range(30):
        log.emit(phase="task", round=i, participant="R", action="edit_result", status="ok", args={"text": "a" * 300})
    obs = observe(
        round=9, actions_left=3, budget_holder="D and R together", query="Q? " * 50,
        briefing="B" * 1600, memory=MemoryRecord(**{k: v * 280 for k, v in SLOTS.items()}).render(max_chars=1400),
        workspace=fake_workspace(40, 12), gatekeeper=gates, cells_at_request={f"req-{i}": 12 for i in range(1, 6)},
        events=log.events, scratchpad=["thought " * 40] * 10,
        valid_actions=valid_actions("R", TEAM, has_requests=True),
    )
    text = obs.render()
    assert (obs.older_messages, obs.older_cells, obs.older_activity) == (35, 10, 24)
    assert "35 older messages not shown" in text and "10 older cells not shown" in text
    assert "(round 9, 3 actions left for D and R together)" in text and "- approve: to = the request id" in text
    assert len(text) < 11000  # ~2800 tokens worst case (three requests shown whole), plus a ~900-char persona
    assert text.count("Shared Group Memory") == 1
    # the scratchpad is not titled like the briefing's private notes (what the persona knows)
    assert text.count("private notes") == 0 and "# Your recent thoughts (private)" in text


def test_view_key_ignores_private_notes_and_counters():
    one = observe("ai", round=1, actions_left=5, scratchpad=["a"])
    two = observe("ai", round=4, actions_left=2, scratchpad=["a", "b"])
    assert one.view_key() == two.view_key()
    other = observe("ai", round=1, actions_left=5, scratchpad=[], workspace=fake_workspace(2, 1))
    assert other.view_key() != one.view_key()


def test_a_simulated_human_sees_every_cell_with_its_output():
    obs = observe("D", workspace=fake_workspace(0, 2, output="the-output"))
    assert [(c.index, c.author) for c in obs.cells] == [(0, "ai"), (1, "ai")]
    assert "out1 the-output" in obs.render()


def test_the_full_profile_cuts_nothing_that_fits_and_summarises_the_oldest_outputs_first():
    big = "B" * 9000
    obs = observe(profile=FULL, briefing=big, query="Q" * 2000, workspace=fake_workspace(30, 12, output="o" * 300))
    assert obs.briefing == big and obs.query == "Q" * 2000 and obs.older_messages == 0 and obs.older_cells == 0
    assert all(c.code == "x" * 600 and not c.summarised for c in obs.cells)
    # a cell is ~1,650 chars whole and ~900 with its output summarised: 15,500 fits 6 of each
    tight = FULL.model_copy(update={"notebook_chars": 15_500})
    cells = observe(profile=tight, workspace=fake_workspace(0, 12, output="o" * 1000)).cells
    assert len(cells) == 12 and [c.index for c in cells if c.summarised] == [0, 1, 2, 3, 4, 5]  # oldest first
    assert cells[0].output.startswith("out0 ooo") and "[1005 chars, 1 lines]" in cells[0].output
    assert cells[-1].output == "out11 " + "o" * 1000
    tiny = FULL.model_copy(update={"notebook_chars": 3000})
    obs = observe(profile=tiny, workspace=fake_workspace(0, 12, output="o" * 300))
    assert obs.older_cells > 0 and obs.cells[-1].index == 11 and "older cells not shown" in obs.render()


def test_a_signatory_sees_the_proposed_action_whole_and_the_cells_it_depends_on():
    gates = Gatekeeper(GateTable(rules=(GateRule(action="execute_code", signatory="D"),)), TEAM)
    code = "df = df[df.x > 0]\n" + "# long comment " * 30
    action = to_action(step("execute_code", code), "ai", TEAM)
    request = gates.open(action, "ai", gates.rule_for(action, "ai"), round=1)
    ws = fake_workspace(0, 6, output="value")
    text = observe("D", workspace=ws, gatekeeper=gates, cells_at_request={request.request_id: 4}).render()
    assert code.strip() in text  # in full, newlines kept
    # compact shows cells 4 and 5 in the notebook; 3 and 2 were the latest before the request
    notebook_part, request_part = text.split("# Approval requests")
    assert "[cell 3 by ai: ok]" not in notebook_part and "[cell 3 by ai: ok]\n>>> xxx" in request_part
    assert request_part.index("[cell 3 by") < request_part.index("[cell 2 by")  # most recent first
    later = observe("D", workspace=ws, gatekeeper=gates, cells_at_request={request.request_id: 6}).render()
    assert "cells 5, 4 (shown above)" in later and later.count("[cell 5 by ai") == 1  # never shown twice
    full = observe("D", profile=FULL, workspace=ws, gatekeeper=gates, cells_at_request={request.request_id: 4})
    assert [c.index for c in full.requests_for_me[0].depends_on] == [3, 2, 1, 0]
    none = observe("D", workspace=ws, gatekeeper=gates, cells_at_request={request.request_id: 0}).render()
    assert "No cells had been run when it was proposed." in none


# --- events ----------------------------------------------------------------------------------


def test_event_log_numbers_events_and_comparable_drops_wall_clock_fields():
    sink = ListSink()
    log = EventLog("abc", sink)
    call = CallRecord(caller="ai", model="m", latency_s=1.5)
    first = log.emit(phase="task", round=1, participant="ai", action="wait", status="ok", llm_calls=(call,))
    log.emit(phase="task", round=1, participant="D", action="wait", status="ok")
    assert [e.seq for e in sink.events] == [0, 1] and first.event_id == "abc-00000"
    other = first.model_copy(update={"time": first.time + 5,
                                     "llm_calls": (call.model_copy(update={"latency_s": 9.0}),)})
    assert comparable([first]) == comparable([other])
    assert "time" not in comparable([first])[0]
    with pytest.raises(ValidationError):
        Event(session_id="a", seq=0, phase="task", round=0, participant="ai", action="x", status="weird", time=0)


def test_spec_identity_and_model_defaulting():
    from colabkit.llm import ModelConfig

    spec = SessionSpec(task_id="t/0/0", variant=variant("default-d"), seed=1,
                       models={"default": ModelConfig(model="scripted/x")})
    assert spec.identity() == SessionSpec.model_validate(spec.model_dump()).identity()
    assert spec.session_id == spec.identity()[:16]
    assert spec.model_for("D").model == "scripted/x"
    assert SessionSpec(task_id="t/0/0", variant=variant("default-d"), seed=1).model_for("ai") == ModelConfig()
    assert spec.identity() != spec.model_copy(update={"seed": 2}).identity()


def test_the_event_log_refuses_actions_outside_its_vocabulary():
    log = EventLog("abc", ListSink())
    with pytest.raises(ValueError, match="not one of"):
        log.emit(phase="task", round=1, participant="ai", action="session_end", status="info")
    with pytest.raises(ValueError, match="not one of"):
        log.emit(phase="task", round=1, participant="system", action="wait", status="ok")
