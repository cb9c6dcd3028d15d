"""Gate latency as a declared setting (issue 44): a signatory decides a request addressed to it at
its next turn (the default) or at once, either way in a decision step that is machinery (issue
42: never one of its steps); the prompts state the rule in force, and the batch report's gate
delay (the AI's turns from proposal to effect) shows it."""

from __future__ import annotations

from colabkit.runner.audit.player import play, scenario_spec
from colabkit.runner.audit.scenario import Policy, Scenario
from colabkit.runner.build import build_spec
from colabkit.runner.prompt_lint import lint, render_all
from colabkit.session.events import DECISION_STEP
from colabkit.session.rules import GATE_COSTS
from colabkit.session.settings import SessionSettings
from colabkit.session.totals import session_totals
from colabkit.store import gate_delays
from colabkit.tasks import load_tasks

TASK_ID = "demo_archaeology/0/0"
# Preassigned DR: R signs the AI's edits, D its data-changing code (the second load reassigns df);
# both only wait (and approve) in their turns. Seed 1: one request waits a round for its signatory.
SCENARIO = Scenario(TASK_ID, "dr", seed=1, budget=6, gates="edits", policies={
    "ai": Policy(("edit:0", "code:0", "edit:1", "code:0", "wait", "wait")), "D": Policy(("wait",) * 8),
    "R": Policy(("wait",) * 8, "approve-oldest")})


def _humans_steps(spec, events) -> int:
    return session_totals(events, spec.settings, {"ai": "ai", "D": "human", "R": "human"}, rounds=0).human_actions


def _run(latency: str):
    spec = scenario_spec(build_spec(TASK_ID, "preassigned-dr", 0), SCENARIO)
    spec = spec.model_copy(update={"settings": spec.settings.model_copy(update={"gate_latency": latency})})
    return spec, play(spec, load_tasks().get(TASK_ID), SCENARIO)


def test_in_turn_the_signatory_decides_at_its_own_turn_in_a_decision_step_before_its_step():
    spec, run = _run("in_turn")
    events = list(run.events)
    approvals = [e for e in events if e.action == "approve"]
    assert approvals and all((e.args or {}).get(DECISION_STEP) and e.kind == "machinery" for e in approvals)
    for approval in approvals:  # then, in the same turn, its own step: a wait, as its policy says
        own = next(e for e in events[approval.seq + 1:] if e.participant == approval.participant)
        assert own.kind == "step" and own.action == "wait" and own.round == approval.round
    assert {(e.participant, e.request_id) for e in approvals} == {("R", "req-1"), ("R", "req-2"), ("D", "req-3")}
    assert _humans_steps(spec, events) == 0  # a decision is machinery (`Event.kind`), never one of R's steps
    assert gate_delays(events) == [0, 1, 0]  # req-2 waited a round for R's turn while the AI went on


def test_at_once_the_signatory_decides_right_after_the_proposal_off_its_budget():
    spec, run = _run("at_once")
    events = list(run.events)
    approvals = [e for e in events if e.action == "approve"]
    assert len(approvals) == 3 and all((e.args or {}).get(DECISION_STEP) for e in approvals)
    for approval in approvals:
        pending = next(e for e in events if e.request_id == approval.request_id and e.status == "pending")
        assert approval.seq == pending.seq + 1 and approval.participant == pending.signatory
        effect = events[approval.seq + 1]
        assert effect.request_id == approval.request_id and effect.action == pending.action
    assert gate_delays(events) == [0, 0, 0]
    assert _humans_steps(spec, events) == 0  # R only waited in its turns: the decisions were machinery
    assert spec.session_id != _run("in_turn")[0].session_id  # the rule is part of the identity


def test_the_prompts_state_the_rule_in_force():
    task = load_tasks().get(TASK_ID)
    for latency in ("in_turn", "at_once"):
        settings = SessionSettings(gate_latency=latency)
        prompts = render_all(build_spec(TASK_ID, "scaffolded-dr", 0, settings=settings), task)
        assert lint(prompts) == []
        build = next(p for p in prompts if p.kind == "propose")
        step = next(p for p in prompts if p.where == "scaffolded-dr/R/step")
        assert GATE_COSTS[latency] in build.user and GATE_COSTS[latency] in step.user
        decisions = [p for p in prompts if p.kind == "decision"]
        assert decisions and all("This step is not one of your steps" in p.user and set(p.enum("action")) == {
            "approve", "reject", "wait"} for p in decisions)
        assert not {"approve", "reject"} & set(step.enum("action"))  # its own step never offers a decision
    assert "gate_latency" not in SessionSettings().model_dump(mode="json")  # stored sessions keep their ids
