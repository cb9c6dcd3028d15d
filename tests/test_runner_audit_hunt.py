"""The hunting audit: generated and known scenarios played in the variants through the engine,
checked against the invariants; and the audit itself tested by mutation.

Each mutant (`MUTANTS`) is a non-structural change monkeypatched into the engine (a clip or a
profile that depends on the variant or the team's size, a budget consumed differently, the
closing pass skipped for one end, a request list cut, a schema enum widened, a round order
that depends on the variant, a section dropped after round 1, and the two of issue 33's Why
item 8). Each is played on a small scenario chosen to exercise it; the unmutated engine
passes every such scenario (`test_the_engine_passes_every_mutation_scenario`), and each
mutant must break its named invariant (`test_every_mutant_is_killed_by_its_invariant`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers.env import shared_data

from colabkit.cli import main
from colabkit.llm import gateway as llm_gateway
from colabkit.runner import build_spec
from colabkit.runner.audit import Policy, Scenario, hunt
from colabkit.runner.audit.hunt import known_scenarios
from colabkit.runner.audit.invariants import INVARIANTS
from colabkit.session import engine
from colabkit.session.structure.gating import Gatekeeper
from colabkit.tasks import load_tasks

REPO = Path(__file__).resolve().parents[1]
TASK = load_tasks().get("demo_archaeology/0/0")
TASKS = {TASK.id: TASK}


def run_hunt(names: tuple[str, ...], scenario: Scenario) -> Any:
    return hunt([build_spec(TASK.id, name, 0) for name in names], TASKS, examples=0, known=[scenario])


# --- the mutation catalogue ---------------------------------------------------------------


def _observe_with(change: Callable[[Any, str, Any], Any]) -> Callable[[pytest.MonkeyPatch], None]:
    def apply(mp: pytest.MonkeyPatch) -> None:
        real = engine._Session.observe
        mp.setattr(engine._Session, "observe", lambda self, pid: change(self, pid, real(self, pid)))
    return apply


def _message_clip_by_team_size(mp: pytest.MonkeyPatch) -> None:
    real = engine.build_observation

    def build(**kw: Any) -> Any:
        if len(kw["team"]) == 3:
            kw["profile"] = kw["profile"].model_copy(update={"message_chars": 40})
        return real(**kw)
    mp.setattr(engine, "build_observation", build)


def _memory_variants_pay_twice(mp: pytest.MonkeyPatch) -> None:
    real = engine._Session.turn

    async def turn(self: Any, pid: str) -> Any:
        ended = await real(self, pid)
        if self.variant.memory and pid == "ai" and self.round == 2 and ended is None:
            self.sched.used["ai"] += 1
        return ended
    mp.setattr(engine._Session, "turn", turn)


def _no_closing_pass_at_the_budget_end(mp: pytest.MonkeyPatch) -> None:
    real = engine._Session.closing_pass

    async def closing_pass(self: Any, ended_by: Any, *args: Any, **kw: Any) -> Any:
        return ended_by if ended_by == "budget" else await real(self, ended_by, *args, **kw)
    mp.setattr(engine._Session, "closing_pass", closing_pass)


def _newest_request_never_listed(mp: pytest.MonkeyPatch) -> None:
    real = Gatekeeper.addressed_to
    mp.setattr(Gatekeeper, "addressed_to", lambda self, pid: (lambda rs: rs[:-1] if len(rs) > 1 else rs)(real(self, pid)))


def _schema_widened_with_decisions(mp: pytest.MonkeyPatch) -> None:
    real = engine.step_schema

    def step_schema(thought: int, content: int, actions: tuple[str, ...], *rest: Any) -> Any:
        return real(thought, content, tuple(dict.fromkeys((*actions, "approve", "reject"))), *rest)
    mp.setattr(engine, "step_schema", step_schema)


def _gated_variants_reverse_the_round(mp: pytest.MonkeyPatch) -> None:
    real = engine.round_order

    def round_order(team: Any, seed: int, rnd: int) -> list[str]:
        order = real(team, seed, rnd)
        session = sys._getframe(1).f_locals.get("self")
        return order[::-1] if getattr(getattr(session, "variant", None), "gate_source", "none") != "none" else order
    mp.setattr(engine, "round_order", round_order)


def _human_cap_halved_in_dr(mp: pytest.MonkeyPatch) -> None:
    real = engine.Scheduler.actions_left

    def actions_left(self: Any, pid: str) -> int:
        left = real(self, pid)
        return min(left, self.settings.action_budget // 2) if pid != "ai" and len(self.participants) == 3 else left
    mp.setattr(engine.Scheduler, "actions_left", actions_left)


def _sampling_by_memory(mp: pytest.MonkeyPatch) -> None:
    real = llm_gateway._litellm_kwargs

    def kwargs(config: Any, messages: list[dict], **kw: Any) -> dict[str, Any]:
        out = real(config, messages, **kw)
        if "# Shared Group Memory" in str(messages[-1]["content"]):
            out["top_p"] = 0.5
        return out
    mp.setattr(llm_gateway, "_litellm_kwargs", kwargs)


@dataclass(frozen=True)
class Mutant:
    name: str
    invariant: str
    apply: Callable[[pytest.MonkeyPatch], None]
    variants: tuple[str, ...]
    scenario: Scenario


BUSY = Scenario(TASK.id, "d", budget=3, gates="edits", policies={
    "ai": Policy(("code:0", "msg:1", "edit:1")), "D": Policy(("code:3", "msg:1", "code:0"))})
BUSY_DR = Scenario(TASK.id, "dr", budget=3, gates="edits", policies={**BUSY.policies, "R": Policy(("msg:0",))})
QUEUE = Scenario(TASK.id, "r", budget=3, gates="edits", policies={
    "ai": Policy(("edit:0", "edit:1", "code:0")), "R": Policy((), "late")})
MUTANTS = (
    Mutant("a team AI shown a 1-cell notebook after round 1 (Why 8)", "same-rendering", _observe_with(
        lambda s, pid, o: o.model_copy(update={"cells": o.cells[-1:]}) if len(s.team) > 1 and pid == "ai"
        and s.round > 1 else o), ("single", "default-d"), BUSY),
    Mutant("the AI in gated variants shown its editor clipped to 12 characters (Why 8)", "same-rendering",
           _observe_with(lambda s, pid, o: o.model_copy(update={"editor": o.editor[:12]})
                         if s.variant.gate_source != "none" and pid == "ai" else o), ("memory-d", "scaffolded-d"), BUSY),
    Mutant("messages clipped by team size (a profile that depends on the team)", "same-rendering",
           _message_clip_by_team_size, ("default-d", "default-dr"), BUSY),
    Mutant("the memory section dropped after round 1", "same-rendering", _observe_with(
        lambda s, pid, o: o.model_copy(update={"memory": None}) if s.round > 1 else o), ("memory-d",), BUSY),
    Mutant("memory variants' AI pays two steps for one in round 2", "ai-opportunity", _memory_variants_pay_twice,
           ("default-d", "memory-d"), BUSY),
    Mutant("the closing pass skipped at the budget end", "nothing-lost", _no_closing_pass_at_the_budget_end,
           ("preassigned-r",), QUEUE),
    Mutant("the newest open request never listed (a request list cut)", "nothing-lost", _newest_request_never_listed,
           ("preassigned-r",), QUEUE),
    Mutant("every schema's action enum widened with approve and reject", "prompts-as-sent",
           _schema_widened_with_decisions, ("single",), BUSY),
    Mutant("gated variants reverse the round order", "same-turn-order", _gated_variants_reverse_the_round,
           ("default-d", "preassigned-d"), BUSY),
    Mutant("each human's cap halved in a DR team", "same-capacity", _human_cap_halved_in_dr,
           ("default-d", "default-dr"), BUSY_DR),
    Mutant("top_p sent only where the memory is shown", "prompts-as-sent", _sampling_by_memory,
           ("default-d", "memory-d"), BUSY),
)


def test_the_engine_passes_every_mutation_scenario():
    for variants, scenario in {(m.variants, repr(m.scenario)): (m.variants, m.scenario) for m in MUTANTS}.values():
        report = run_hunt(variants, scenario)
        assert report.ok, report.render()


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_every_mutant_is_killed_by_its_invariant(mutant, monkeypatch):
    assert mutant.invariant in INVARIANTS
    mutant.apply(monkeypatch)
    report = run_hunt(mutant.variants, mutant.scenario)
    assert not report.ok
    assert mutant.invariant in {v.invariant for v in report.violations}, report.render()
    assert f"VIOLATION {mutant.invariant} [" in report.render()


def test_the_command_kills_the_two_why_8_mutants_and_names_the_invariant(monkeypatch, capsys):
    demo = ["audit", str(REPO / "experiments" / "demo.yaml"), "--quick"]  # passes unmutated: the paper test below
    for mutant in MUTANTS[:2]:
        with monkeypatch.context() as mp:
            mutant.apply(mp)
            assert main(demo) == 1
        out = capsys.readouterr().out
        assert "VIOLATION same-rendering [" in out and "minimal scenario:" in out, mutant.name


# --- the shipped experiments --------------------------------------------------------------

@pytest.mark.parametrize(("name", "variants"), [
    ("paper.yaml", None),  # all 13
    ("dynamic.yaml", None),  # all 9: a memory update is a declared act, its twin's move a failed step
    ("sensitivity.yaml", "single,default-dr,preassigned-dr"),  # each arm (all variants: docs/audit.md)
])
def test_the_shipped_experiments_pass_the_quick_hunt(name, variants, capsys):
    args = ["audit", str(REPO / "experiments" / name), "--quick", "--data-root", str(shared_data())]
    assert main(args + (["--variants", variants] if variants else [])) == 0
    out = capsys.readouterr().out
    assert out.count("every invariant held") == (3 if name == "sensitivity.yaml" else 1)
    assert "0 violation(s)" in out and "7 scenarios" in out


def test_the_known_scenarios_cover_the_issues_patterns():
    known = known_scenarios(TASK.id)
    assert {s.team for s in known} == {"r", "dr"} and len({s.gates for s in known}) >= 3
    assert any(s.cost_cap for s in known) and any(s.policy("D").moves[-1:] == ("finish",) for s in known)
    assert any("wait" in s.policy("ai").moves for s in known) and any(s.policy("R").decider == "late" for s in known)


@pytest.mark.slow
def test_a_generated_search_on_a_real_kernel_finds_no_violation():
    specs = [build_spec(TASK.id, name, 0) for name in ("single", "default-r", "scaffolded-r", "preassigned-r")]
    report = hunt(specs, TASKS, examples=4, real=True, known=known_scenarios(TASK.id)[1:2])
    assert report.ok, report.render()
    assert report.played >= 5
