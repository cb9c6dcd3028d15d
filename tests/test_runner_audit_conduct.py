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
from colabkit.session.prompting import observation
from colabkit.session.scheduler import Scheduler
from colabkit.tasks import load_tasks

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


def played(name: str, scenario: Scenario) -> Run:
    return play(scenario_spec(build_spec(TASK.id, name, 0), scenario), TASK, scenario)


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
    assert "finish is offered" in broken(played("default-dr", BUSY))["shown-as-documented"]


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
