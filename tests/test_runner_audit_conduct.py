"""The documented rules one run keeps on its own (`colabkit.runner.audit.conduct`): the engine
keeps them in every team and profile, and each check catches a change to the rule it reads,
a change that fires alike in every team variant (so no comparison of twins can see it)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from colabkit.runner import build_spec
from colabkit.runner.audit import Policy, Scenario
from colabkit.runner.audit.conduct import check_conduct
from colabkit.runner.audit.player import Run, play, scenario_spec
from colabkit.session import actions, engine
from colabkit.session.actions import InvalidAction
from colabkit.session.prompting import observation
from colabkit.session.scheduler import Scheduler
from colabkit.session.structure.gating import Gatekeeper
from colabkit.tasks import load_tasks
from colabkit.team import StructureRef, VariantConfig

TASK = load_tasks().get("demo_archaeology/0/0")
BUSY = Scenario(TASK.id, "dr", budget=6, gates="edits", policies={
    "ai": Policy(("code:0", "edit:0", "dm:1", "slip", "code:3", "msg:0")),
    "D": Policy(("wait", "code:3", "dm:0", "fail", "update", "edit:1"), "approve-oldest"),
    "R": Policy(("dm:1", "wait", "code:2", "msg:1"), "approve-newest")})
"""Waits woken and not, private messages both ways, a slip and a failed repair, held edits, a
memory update (a failed step where the memory does not live)."""
QUIET = Scenario(TASK.id, "dr", budget=3, gates="none", policies={
    "ai": Policy(("wait",) * 3), "D": Policy(("wait",) * 3), "R": Policy(("wait",) * 3)})
"""Everyone waits: after round 1 no human has anything new in view."""


def played(name: str, scenario: Scenario, termination: str = "ai_budget") -> Run:
    spec = build_spec(TASK.id, name, 0)
    rules = spec.settings.model_copy(update={"termination": termination, "max_rounds": 8, "idle_rounds": 2})
    return play(scenario_spec(spec.model_copy(update={"settings": rules}), scenario), TASK, scenario)


def broken(run: Run) -> dict[str, str]:
    """Each broken rule with what was seen, every violation of it."""
    out: dict[str, str] = {}
    for v in check_conduct(run):
        out[v.invariant] = f"{out.get(v.invariant, '')}\n{v.detail}"
    return out


@pytest.mark.parametrize("profile", ["compact", "full"])
@pytest.mark.parametrize("name", ["single", "default-dr", "scaffolded-dr", "preassigned-d", "memory-r", "dynamic-dr",
                                  "solo-d"])
def test_the_engine_keeps_every_documented_rule(name: str, profile: str) -> None:
    for scenario in (BUSY, QUIET):
        run = played(name, dataclasses.replace(scenario, profile=profile))
        assert sum(bool(e.llm_calls) for e in run.events) >= scenario.budget
        assert check_conduct(run) == []


@pytest.mark.parametrize("termination", ["either_side", "all_sides"])
@pytest.mark.parametrize("name", ["single", "default-dr", "preassigned-dr"])
def test_the_engine_keeps_every_documented_rule_under_co_gyms_rules(name: str, termination: str) -> None:
    for scenario in (BUSY, QUIET):
        run = played(name, scenario, termination)
        assert run.result.ended_by in ("idle", "budget", "max_rounds", "finish")
        assert check_conduct(run) == []


def test_a_member_asked_with_nothing_new_in_view_breaks_the_wake_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Scheduler, "eligible", lambda self, pid, acts: self.actions_left(pid) > 0)
    assert "asked-as-documented" in broken(played("default-dr", QUIET))


def test_a_member_left_asleep_after_news_breaks_the_wake_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "acts_in_view", lambda *args, **kw: "0")
    assert "was not asked" in broken(played("default-dr", BUSY))["asked-as-documented"]


def test_turns_out_of_the_drawn_order_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "round_order", lambda team, seed, round: list(team))
    assert "drawn order" in broken(played("default-dr", BUSY))["asked-as-documented"]


def _observe_with(monkeypatch: pytest.MonkeyPatch, **changes: Any) -> None:
    real = engine.build_observation

    def build(**kw: Any) -> Any:
        return real(**{**kw, **{k: (v(kw) if callable(v) else v) for k, v in changes.items()}})
    monkeypatch.setattr(engine, "build_observation", build)


def test_a_human_shown_what_only_the_ai_sees_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    _observe_with(monkeypatch, sees_all=True)
    assert "shows" in broken(played("default-dr", BUSY))["shown-as-documented"]


def test_the_ai_shown_only_its_own_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    _observe_with(monkeypatch, sees_all=False)
    assert "shown-as-documented" in broken(played("default-dr", BUSY))


def test_a_notebook_beyond_the_profile_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    _observe_with(monkeypatch, profile=lambda kw: kw["profile"].model_copy(update={"cells": None, "notebook_chars": 10**6}))
    assert "cells shown" in broken(played("default-dr", BUSY))["shown-as-documented"]


def test_a_last_step_left_unsaid_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(observation, "_last_step", lambda own: None)
    assert "last step" in broken(played("default-dr", BUSY))["shown-as-documented"]


def test_a_pooled_budget_under_the_clock_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Scheduler, "holder", lambda self, pid: self.sides[pid])
    assert "together" in broken(played("default-dr", BUSY))["shown-as-documented"]


def test_finish_offered_to_a_human_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = engine._Session.offered
    monkeypatch.setattr(engine._Session, "offered", lambda self, pid: (*real(self, pid), "finish")
                        if pid != "ai" and "finish" not in real(self, pid) else real(self, pid))
    assert "finish" in broken(played("default-dr", BUSY))["shown-as-documented"]


def test_a_step_failed_before_its_repair_is_caught() -> None:
    run = played("default-dr", BUSY)
    failed = next(e for e in run.events if e.action == "invalid_output")
    assert len(failed.llm_calls) == 2 and check_conduct(run) == []
    cut = failed.model_copy(update={"llm_calls": failed.llm_calls[1:]})
    tampered = dataclasses.replace(run, events=tuple(cut if e is failed else e for e in run.events))
    assert "not after one repair" in broken(tampered)["repaired-once"]


def test_a_structure_whose_build_never_runs_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_build(self: Any) -> None:
        return None
    assert check_conduct(played("memory-dr", BUSY)) == []
    monkeypatch.setattr(engine._Session, "build", no_build)
    assert "build phase" in broken(played("memory-dr", BUSY))["structure-in-force"]


def test_a_message_to_one_teammate_sent_to_all_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(actions, "recipients", lambda raw, actor, team: None)
    assert "not as" in broken(played("default-dr", BUSY))["acted-as-answered"]


def test_lists_shown_newest_first_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = observation.recent
    monkeypatch.setattr(observation, "recent", lambda *args, **kw: (real(*args, **kw)[0][::-1], real(*args, **kw)[1]))
    assert "not oldest first" in broken(played("default-dr", BUSY))["shown-as-documented"]


def test_a_structure_never_put_in_force_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    assert check_conduct(played("preassigned-dr", BUSY)) == []
    monkeypatch.setattr(engine._Session, "start_task", lambda self: None)
    assert "in no member's task prompt" in broken(played("preassigned-dr", BUSY))["structure-in-force"]


def test_a_session_that_outlives_its_idle_end_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    assert played("default-dr", QUIET, "either_side").result.ended_by == "idle"
    monkeypatch.setattr(Scheduler, "end_round", lambda self: False)
    assert "idle" in broken(played("default-dr", QUIET, "either_side"))["ended-as-documented"]


def test_a_finish_that_never_took_effect_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = engine._Session.__init__

    def init(self: Any, *args: Any, **kw: Any) -> None:
        real(self, *args, **kw)
        self.finished = True
    late = Scenario(TASK.id, "dr", budget=2, gates="edits", policies={
        "ai": Policy(("code:0", "edit:0")), "D": Policy((), "late"), "R": Policy((), "late")})  # decided at the end
    assert check_conduct(played("preassigned-dr", late, "either_side")) == []
    monkeypatch.setattr(engine._Session, "__init__", init)
    assert "ended-as-documented" in broken(played("preassigned-dr", late, "either_side"))


def test_a_decision_not_applied_as_answered_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Any, request_id: str, *args: Any) -> Any:
        raise InvalidAction(f"{request_id} is not open")
    monkeypatch.setattr(Gatekeeper, "decide", refuse)
    assert "answered approve" in broken(played("preassigned-dr", BUSY))["acted-as-answered"]


def test_a_log_that_disagrees_with_the_workspace_is_caught() -> None:
    run = played("default-dr", BUSY)
    cell = next(e for e in run.events if e.cell_index is not None and e.status == "ok")
    flipped = tuple(e.model_copy(update={"status": "error"}) if e is cell else e for e in run.events)
    assert "notebook holds" in broken(dataclasses.replace(run, events=flipped))["logged-as-done"]


def test_a_request_charged_otherwise_than_reported_is_caught() -> None:
    run = played("default-dr", BUSY)
    step = next(e for e in run.events if e.llm_calls)
    cheap = step.model_copy(update={"llm_calls": tuple(c.model_copy(update={"prompt_tokens": 0}) for c in step.llm_calls)})
    assert "charged-as-reported" in broken(dataclasses.replace(run, events=tuple(cheap if e is step else e
                                                                              for e in run.events)))


def test_a_plugin_that_holds_shows_the_held_requests_sections() -> None:
    """Found by the checklist experiment's hunt: a plugin that holds the finish brings the held
    requests' sections with its holds (`HELD_SECTIONS`), which the rules give it as its own."""
    variant = VariantConfig(name="checklist-dr", humans=("D", "R"), structures=(StructureRef(name="evidence-checklist"),))
    rejected = Scenario(TASK.id, "dr", budget=2, gates="none", policies={
        "ai": Policy(("finish",)), "D": Policy(()), "R": Policy((), "reject-oldest")})
    run = play(scenario_spec(build_spec(TASK.id, variant, 0), rejected), TASK, rejected)
    assert any(e.status == "rejected" for e in run.events)
    assert check_conduct(run) == []
