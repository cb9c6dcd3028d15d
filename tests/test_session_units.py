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


def test_scheduler_skips_a_waiter_until_its_view_changes_and_detects_idleness():
    sched = Scheduler(SessionSettings(action_budget=2, idle_rounds=2), ("ai", "D"))
    assert sched.eligible("ai", "k1")  # has not acted yet
    sched.record_step("ai", "k1", waited=False)
    assert sched.eligible("ai", "k1")  # acted, so it may follow up on its own result
    sched.record_step("ai", "k1", waited=True)
    assert not sched.eligible("ai", "k1")
    assert sched.eligible("ai", "k2")
    assert sched.end_round() is False  # one action this round: not idle
    assert sched.end_round() is False  # first idle round
    assert sched.end_round() is True  # K=2 idle rounds
    assert not sched.budget_spent and sched.actions_left == 1
    sched.record_step("D", "x", waited=False)
    assert sched.budget_spent and sched.actions == 2 and sched.waits == 1


# --- observation -----------------------------------------------------------------------------


def fake_workspace(n_messages: int, n_cells: int) -> SimpleNamespace:
    messages = [SimpleNamespace(index=i, sender="D", to=None, text=f"message {i} " + "m" * 400)
                for i in range(n_messages)]
    cells = [SimpleNamespace(index=i, author="ai", status="ok", code="x" * 600, output="o" * 5000, error=None)
             for i in range(n_cells)]
    return SimpleNamespace(
        chat=SimpleNamespace(messages=messages, visible_to=lambda p: messages),
        editor=SimpleNamespace(text="H " * 400),
        cells_visible_to=lambda p, sees_all: cells,
    )


def test_rendered_observation_stays_compact_and_says_what_was_elided():
    gates = Gatekeeper(GateTable(rules=(GateRule(action="edit_result", signatory="R"),)), TEAM)
    for _ in range(5):
        edit = to_action(step("edit_result", "z" * 500), "ai", TEAM)
        gates.open(edit, "ai", gates.rule_for(edit, "ai"), round=1)
    log = EventLog("s", ListSink())
    for i in range(30):
        log.emit(phase="task", round=i, participant="R", action="edit_result", status="ok", args={"text": "a" * 300})
    obs = build_observation(
        participant="R", team=TEAM, names=TEAM, sees_all=False, round=9, actions_left=3, query="Q? " * 50,
        briefing="B" * 1600, memory=MemoryRecord(**{k: v * 280 for k, v in SLOTS.items()}).render(),
        workspace=fake_workspace(40, 12), gatekeeper=gates, events=log.events,
        scratchpad=["thought " * 40] * 10, valid_actions=valid_actions("R", TEAM, has_requests=True),
    )
    text = obs.render()
    assert (obs.older_messages, obs.older_cells, obs.older_activity) == (35, 10, 24)
    assert "35 older messages not shown" in text and "10 older cells not shown" in text
    assert "(round 9, 3 team actions left)" in text and "- approve: to = the request id" in text
    assert len(text) < 9500  # ~2400 tokens worst case, plus a ~900-char persona
    assert text.count("Shared Group Memory") == 1
    # the scratchpad is not titled like the briefing's private notes (what the persona knows)
    assert text.count("private notes") == 0 and "# Your recent thoughts (private)" in text


def test_view_key_ignores_private_notes_and_counters():
    base = dict(participant="ai", team=TEAM, names=TEAM, sees_all=True, query="q", briefing="b", memory=None,
                workspace=fake_workspace(1, 1), gatekeeper=Gatekeeper(None, TEAM), events=[],
                valid_actions=("wait",))
    one = build_observation(round=1, actions_left=5, scratchpad=["a"], **base)
    two = build_observation(round=4, actions_left=2, scratchpad=["a", "b"], **base)
    assert one.view_key() == two.view_key()
    other = build_observation(round=1, actions_left=5, scratchpad=[], **{**base, "workspace": fake_workspace(2, 1)})
    assert other.view_key() != one.view_key()


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
