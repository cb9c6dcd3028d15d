"""Session-layer logic that needs no kernel and no model: step mapping, gates, scheduling,
observation rendering and the event-log helpers."""

from __future__ import annotations

from types import SimpleNamespace
from typing import get_args

import pytest
from pydantic import ValidationError

from colabkit.llm import CallRecord
from colabkit.session import Event, ListSink, SessionSettings, SessionSpec, StepSchema, comparable
from colabkit.session.actions import ActionType, InvalidAction, StepAction, to_action, valid_actions
from colabkit.session.events import EventLog
from colabkit.session.prompting.observation import build_observation
from colabkit.session.prompting.profile import ObservationProfile, compact_profile, full_profile
from colabkit.session.prompting.views import Thought
from colabkit.session.scheduler import Scheduler, acts_in_view, round_order
from colabkit.session.structure.gating import Gatekeeper, gate_table
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
    # upd-N names a request only where the memory lives (Dynamic); elsewhere only req-N does
    assert to_action(step("approve", "ok", "upd-1"), "D", TEAM, added=("propose_memory_update",)).request_id == "upd-1"
    with pytest.raises(InvalidAction, match="needs the id of a request"):
        to_action(step("approve", "ok", "upd-1"), "D", TEAM)
    assert to_action(step("approve", "ok upd-2 req-3", ""), "D", TEAM).request_id == "req-3"
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
    with pytest.raises(InvalidAction, match="id of a request open for you"):
        to_action(step("approve", "fine"), "R", TEAM)
    with pytest.raises(InvalidAction, match="code"):
        to_action(step("execute_code"), "ai", TEAM)
    assert to_action(step("edit_result", "H"), "ai", TEAM).args() == {"text": "H"}


def test_the_step_schema_offers_exactly_the_team_layers_action_types():
    # The Dynamic variants' memory update is the one action beyond them, decoded only there.
    assert get_args(StepAction) == ACTION_TYPES
    assert get_args(ActionType) == (*ACTION_TYPES, "propose_memory_update")


def test_valid_actions_offer_decisions_only_with_a_request_and_messages_only_in_a_team():
    assert "approve" not in valid_actions("R", TEAM, has_requests=False)
    assert {"approve", "reject"} <= set(valid_actions("R", TEAM, has_requests=True))
    assert "send_message" not in valid_actions("ai", ("ai",), has_requests=False)
    assert "wait" in valid_actions("ai", TEAM, has_requests=False)


def test_a_lone_participant_is_offered_wait_only_under_the_ais_clock():
    """Under "ai_budget" a wait is one of the AI's steps, alone as in a team; under the Co-Gym rules a
    free lone wait could only end the session idle, so it is not offered (the engine fails it)."""
    assert "wait" not in valid_actions("ai", ("ai",), has_requests=False)
    assert "wait" in valid_actions("ai", ("ai",), has_requests=False, clock=True)
    lone, team_ai = (set(valid_actions("ai", team, has_requests=False, clock=True)) for team in (("ai",), TEAM))
    assert team_ai - lone == {"send_message"} and lone <= team_ai  # the team's own action, nothing else
    assert to_action(StepSchema(thought="t", action="wait"), "ai", TEAM).type == "wait"


def test_under_the_ais_clock_only_the_ai_may_finish_and_the_closing_pass_offers_only_decisions():
    assert "finish" in valid_actions("ai", TEAM, has_requests=False, clock=True)
    assert "finish" not in valid_actions("D", TEAM, has_requests=False, clock=True)
    assert "finish" in valid_actions("D", TEAM, has_requests=False)  # the Co-Gym rules: anybody may finish
    assert valid_actions("R", TEAM, has_requests=True, clock=True, closing=True) == ("approve", "reject")


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
    sched = Scheduler(SessionSettings(action_budget=2, idle_rounds=2, termination="all_sides"),
                      {"ai": "ai", "D": "human"})
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
    assert sched.budget_end("D") is None and sched.actions == 2 and sched.waits == 1


def test_under_the_ais_clock_every_ai_turn_is_a_step_and_no_round_is_idle():
    sched = Scheduler(SessionSettings(action_budget=2, idle_rounds=1), {"ai": "ai", "D": "human"})
    sched.record_step("ai", "k", waited=True)
    assert sched.actions_left("ai") == 1 and sched.eligible("ai", "k")  # a wait spent a step; asked again
    sched.record_step("D", "k", waited=True)
    assert not sched.eligible("D", "k") and sched.actions_left("D") == 2  # a human's wait is free
    assert sched.end_round() is False and sched.round_limit == 2
    sched.record_step("ai", "k", waited=True)
    assert sched.budget_end("ai") == "ai" and not sched.eligible("ai", "k2")


def test_budgets_are_per_side_and_the_humans_share_theirs_under_all_sides():
    sched = Scheduler(SessionSettings(action_budget=2, human_action_budget=3, termination="all_sides"), SIDES)
    for pid in ("D", "R", "D"):
        sched.record_step(pid, "k", waited=False)
    assert sched.used == {"ai": 0, "human": 3}
    assert sched.actions_left("R") == 0 and not sched.eligible("R", "new view")  # spent: no more steps
    assert sched.actions_left("ai") == 2 and sched.eligible("ai", "k") and sched.budget_end("R") is None
    sched.record_step("ai", "k", waited=False)
    assert sched.budget_end("ai") is None
    sched.record_step("ai", "k", waited=False)
    assert sched.budget_end("ai") == "ai" and not sched.eligible("ai", "other view")  # the last side to run out


def test_either_side_ends_when_one_side_is_spent_and_names_it():
    sched = Scheduler(SessionSettings(action_budget=2, human_action_budget=3, termination="either_side"), SIDES)
    for pid in ("D", "R"):
        sched.record_step(pid, "k", waited=False)
        assert sched.budget_end(pid) is None
    sched.record_step("ai", "k", waited=False)
    assert sched.budget_end("ai") is None
    sched.record_step("D", "k", waited=False)
    assert sched.budget_end("D") == "human" and sched.used == {"ai": 1, "human": 3}


def test_ai_budget_is_the_default_clock_and_each_human_has_its_own_cap():
    sched = Scheduler(SessionSettings(action_budget=2), SIDES)
    assert sched.settings.termination == "ai_budget"
    for _ in range(2):  # D spends its own cap: R still has all of its steps, and nothing ends
        sched.record_step("D", "k", waited=False)
        assert sched.budget_end("D") is None
    assert sched.used == {"ai": 0, "D": 2, "R": 0}
    assert sched.actions_left("D") == 0 and sched.actions_left("R") == 2 and not sched.eligible("D", "new view")
    for _ in range(2):
        sched.record_step("R", "k", waited=False)
        assert sched.budget_end("R") is None  # both humans spent: the humans never end the session
    assert sched.ai_actions_left() == 2
    sched.record_step("ai", "k", waited=False)
    assert sched.budget_end("ai") is None
    sched.record_step("ai", "k", waited=False)
    assert sched.budget_end("ai") == "ai"


def test_a_team_wide_cap_stays_available():
    settings = SessionSettings(action_budget=30, team_action_budget=2)
    sched = Scheduler(settings, SIDES)
    sched.record_step("D", "k", waited=False)
    assert sched.actions_left("ai") == 1 and sched.actions_left("R") == 1
    assert sched.budget_end("D") is None
    sched.record_step("ai", "k", waited=False)
    assert sched.budget_end("ai") == "team" and settings.budget_for("human") == 30


# --- observation -----------------------------------------------------------------------------


COMPACT = compact_profile(8192, "test")
FULL = full_profile(128_000, "test")


def fake_workspace(n_messages: int, n_cells: int, output: str = "o" * 5000) -> SimpleNamespace:
    # cell i ran before message i, which came before cell i + 1
    messages = [SimpleNamespace(index=i, sender="D", to=None, text=f"message {i} " + "m" * 400, time=2.0 * i + 1)
                for i in range(n_messages)]
    cells = [SimpleNamespace(index=i, author="ai", status="ok", code="x" * 600, output=f"out{i} {output}", error=None,
                             time=2.0 * i) for i in range(n_cells)]
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
        events=log.events, scratchpad=[Thought(round=i, action="wait", text="thought " * 40) for i in range(10)],
        valid_actions=valid_actions("R", TEAM, has_requests=True),
    )
    text = obs.render()
    assert (obs.older_messages, obs.older_cells, obs.older_activity) == (35, 10, 24)
    assert "35 older messages not shown" in text and "10 older cells not shown" in text
    assert "(round 9, 3 actions left for D and R together)" in text and "- approve: to = one of the requests open for you (req-5, req-4, req-3, req-2, req-1)" in text
    assert len(text) < 11000  # ~2800 tokens worst case (three requests shown whole), plus a ~900-char persona
    assert text.count("Shared Group Memory") == 1
    # the scratchpad is not titled like the briefing's private notes (what the persona knows)
    assert text.count("private notes") == 0 and "# Your recent thoughts (private)" in text


def test_what_wakes_a_member_is_a_teammates_act_held_or_not_never_machinery():
    def ev(seq, who, action, status="ok", **fields):
        return Event(session_id="s", seq=seq, phase="task", round=1, participant=who, action=action, status=status,
                     time=0.0, **fields)
    default = [ev(0, "ai", "edit_result", args={"text": "H"}), ev(1, "ai", "send_message", args={"text": "x", "to": ["D"]})]
    held = [ev(0, "ai", "edit_result", "pending", args={"text": "H"}, request_id="req-1", signatory="R"),
            ev(1, "R", "approve", "approved", request_id="req-1", decision="approved", args={"decision_step": True}),
            ev(2, "R", "wait", args={"decision_step": True}),
            ev(3, "ai", "edit_result", args={"text": "H"}, request_id="req-1", proposer="ai", decision="approved"),
            ev(4, "ai", "send_message", args={"text": "x", "to": ["D"]})]
    for pid, sees_all, acts in (("D", False, "2"), ("R", False, "1"), ("ai", True, "0")):
        assert acts_in_view(default, pid, sees_all=sees_all) == acts_in_view(held, pid, sees_all=sees_all) == acts
    waits = [ev(5, "D", "wait"), ev(6, "D", "execute_code", "failed_step", args={"code": ""})]
    assert acts_in_view(held + waits, "R", sees_all=False) == "1" and acts_in_view(held + waits, "ai", sees_all=True) == "0"


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


def test_cells_and_messages_are_shown_in_the_order_they_happened_and_a_new_one_is_appended():
    before = observe("ai", workspace=fake_workspace(3, 3)).render()
    after = observe("ai", workspace=fake_workspace(4, 4)).render()
    order = [after.index(mark) for mark in ("[cell 2 by", "[#2 D", "[cell 3 by", "[#3 D")]
    assert order == sorted(order)
    assert before.index("# Valid actions") < before.index("# Code cells and chat") < before.index("# Result editor")


def test_under_the_full_profile_thoughts_and_activity_are_appended_to_the_timeline_and_bookkeeping_after_it():
    """Each step's prompt starts with the previous one up to the end of the timeline (a provider's
    prefix cache serves it): own thoughts and activity are timeline entries; a request and its
    decision are structure bookkeeping, after the common part in sections of their own (issue 42)."""
    gates = Gatekeeper(GateTable(rules=(GateRule(action="edit_result", signatory="D"),)), TEAM)
    edit = to_action(step("edit_result", "H-DRAFT"), "ai", TEAM)
    request = gates.open(edit, "ai", gates.rule_for(edit, "ai"), round=1)
    # on the fake workspace's clock: cell i ran at 2i, message i came at 2i + 1
    events = [Event(session_id="s", seq=0, phase="task", round=1, participant="ai", action="edit_result",
                    status="pending", args=edit.args(), request_id=request.request_id, time=5.2)]
    thoughts = [Thought(round=i + 1, action="execute_code", text=f"T-{i}", time=2.0 * i - 0.5) for i in range(4)]
    observe_ai = dict(participant="ai", profile=FULL, gatekeeper=gates, events=events)
    first = observe(**observe_ai, workspace=fake_workspace(3, 3), scratchpad=thoughts[:3])
    before = first.render()
    gates.decide(request.request_id, "D", "approved", "R-OK")
    events.append(Event(session_id="s", seq=1, phase="task", round=1, participant="D", action="approve",
                        status="approved", args={"to": request.request_id, "reason": "R-OK"},
                        request_id=request.request_id, proposer="ai", time=7.5))
    after = observe(**observe_ai, workspace=fake_workspace(4, 4), scratchpad=thoughts).render()
    end = before.index("\n\n# Requests and decisions")
    assert after[:end] == before[:end]
    marks = ["] T-0", "[cell 0 by", "[#0 D", "] T-1", "[cell 1 by", "[#2 D", "] T-3", "[cell 3 by", "[#3 D",
             "# Requests and decisions\nr1 ai edit_result req-1 -> pending", "r1 D approve req-1 -> approved",
             "# Result editor", "# Your requests\nreq-1 from ai to D [approved]"]
    assert [after.index(m) for m in marks] == sorted(after.index(m) for m in marks) and after.index("] T-3") > end
    assert "[your private thought, r4 -> execute_code] T-3" in after and "[activity]" not in after
    assert "# Your requests\nreq-1 from ai to D [pending]" in before
    for section in ("# Activity", "# Your recent thoughts", "# Your last step"):
        assert section not in before and section not in after
    assert after.rstrip().endswith("# Now (round 1, 5 actions left for you)")
    assert (first.timeline, observe("ai").timeline) == (True, False)


def test_the_full_profile_trims_its_own_history_like_the_chat_and_says_so():
    """Thoughts and activity lines share one budget (as large as the chat's): the most recent fit."""
    tight = FULL.model_copy(update={"chat_chars": 1000})
    thoughts = [Thought(round=i, action="wait", text=f"t{i:02d}" + "t" * 157, time=2.0 * i) for i in range(10)]
    events = [Event(session_id="s", seq=i, phase="task", round=i, participant="R", action="edit_result", status="ok",
                    args={"text": f"e{i:02d}" + "e" * 137}, time=2.0 * i + 1) for i in range(10)]
    obs = observe(profile=tight, workspace=fake_workspace(0, 0), scratchpad=thoughts, events=events)
    kept = sorted([(t.time, len(t.text) + 40) for t in obs.scratchpad] + [(a.time, len(a.line) + 20) for a in obs.activity])
    assert sum(size for _, size in kept) <= 1000 < sum(size for _, size in kept) + 200  # as many as fit
    assert [time for time, _ in kept] == [float(t) for t in range(20 - len(kept), 20)]  # the most recent, both kinds
    assert obs.older_thoughts + len(obs.scratchpad) == 10 and obs.older_activity + len(obs.activity) == 10
    text = obs.render()
    assert f"{obs.older_activity} older actions not shown" in text and f"{obs.older_thoughts} older thoughts not shown" in text
    assert "] t09" in text and "] t0" + str(9 - len(obs.scratchpad)) not in text
    with pytest.raises(ValidationError, match="timeline layout"):  # thoughts and activity go together
        ObservationProfile.model_validate(FULL.model_dump() | {"activity": 40})


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


def test_the_signatory_reads_the_teams_whole_note_and_the_proposer_the_reason_as_the_profile_allows():
    note = "n" * 119 + "!"  # as long as a team may write it
    rule = GateRule(action="execute_code", signatory="D", scope="data_changing", note=note)
    gates = Gatekeeper(GateTable(rules=(rule,)), TEAM)
    action = to_action(step("execute_code", "df = df.dropna()"), "ai", TEAM)
    request = gates.open(action, "ai", gates.rule_for(action, "ai", existing=("df",)), round=1)
    assert f"(rule: data-changing code only; note: {note})" in observe("D", gatekeeper=gates).render()
    reason = "the rows dropped here are the 1950s samples we need; " * 6  # ~320 characters
    gates.decide(request.request_id, "D", "rejected", reason)
    assert reason.strip() in observe("ai", profile=FULL, gatekeeper=gates).render()
    compact = observe("ai", gatekeeper=gates)
    shown = compact.my_requests[0].reason  # the compact profile clips it like a chat message
    assert shown.startswith(reason[:150]) and shown.endswith(" chars]") and len(shown) < COMPACT.message_chars + 20


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
