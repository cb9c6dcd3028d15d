"""The audit plays any declared seat (issue 36 items 1 and 3): a three-human inline variant
(D, R and a declared Ethicist E) and its Default twin pass; an engine mutation or a plugin that
treats the third seat differently fails with the invariant named; a variant whose seats no
scenario plays fails closed."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

from colabkit.errors import ColabkitError
from colabkit.runner import build_spec
from colabkit.runner.audit import Policy, Scenario, hunt
from colabkit.runner.audit.hunt import known_scenarios, seated, teams
from colabkit.runner.audit.invariants import is_gate_twin
from colabkit.runner.audit.scenario import gate_table, scenarios
from colabkit.session import engine
from colabkit.tasks import load_tasks
from colabkit.team import GateRule, GateTable, StructureRef, VariantConfig
from colabkit.team.declare import PersonaDecl, declared_persona

TASK = load_tasks().get("demo_archaeology/0/0")
TASKS = {TASK.id: TASK}
E = declared_persona(PersonaDecl(id="E", name="Ethicist", role_line="You are Ethicist, the team's ethics reviewer.",
                                 knowledge_line="You know the ethics of data use."), Path("."), "test")
SEATS = ("D", "R", "E")
TABLE = GateTable(rules=(GateRule(action="finish", signatory="E"), GateRule(action="edit_result", signatory="E"),
                         GateRule(action="execute_code", signatory="D", scope="data_changing")))
PRE = VariantConfig(name="preassigned-dre", humans=SEATS, gate_source="preassigned", preassigned=TABLE, personas=(E,))
DEFAULT = VariantConfig(name="default-dre", humans=SEATS, personas=(E,))
BUSY = Scenario(TASK.id, SEATS, budget=3, gates="edits@E", policies={
    "ai": Policy(("code:0", "msg:1", "edit:1")), "D": Policy(("code:3",)), "R": Policy(("msg:0",)),
    "E": Policy(("msg:1", "code:0", "msg:0"), "approve-newest")})


def specs(*variants: str | VariantConfig) -> list:
    return [build_spec(TASK.id, v, 0) for v in variants]


def test_a_three_human_variant_and_its_default_twin_pass_the_hunt():
    arm = specs("single", "default-dr", DEFAULT, PRE)
    assert teams(arm) == (SEATS,) and is_gate_twin(DEFAULT, PRE) and not is_gate_twin(build_spec(
        TASK.id, "default-dr", 0).variant, PRE)
    report = hunt(arm, TASKS, examples=0)
    assert report.ok, report.render()
    assert report.played == 2 * len(known_scenarios(TASK.id))  # the study's, then each played by D, R and E


def test_the_declared_seat_draws_a_policy_a_ratification_and_gate_tables_it_signs():
    first = seated(known_scenarios(TASK.id), SEATS)[0]
    assert first.team == SEATS and first.policy("E") == first.policy("R") and first.gates == "edits@E"
    assert gate_table("edits@E")[0] == ("edit_result", "E") and gate_table("edits") == gate_table("edits@")
    assert first.seats == ("ai", "D", "R", "E") and first.ratification("E") == "accept"
    drawn: list[Scenario] = []

    @settings(max_examples=30, derandomize=True, database=None)
    @given(scenarios((TASK.id,), teams=(SEATS,)))
    def draw(scenario: Scenario) -> None:
        drawn.append(scenario)
    draw()
    assert all({"ai", "D", "R", "E"} <= set(s.policies) and len(s.ratify) == 3 for s in drawn)
    assert SEATS in {s.team for s in drawn} and any(s.gates.endswith("@E") for s in drawn)


def _extra_step_for_a_third_seat_when_gated(mp: pytest.MonkeyPatch) -> None:
    real = engine._Session.turn

    async def turn(self, pid):
        if pid == "E" and self.variant.gate_source != "none" and self.round == 1:
            self.sched.used["E"] -= 1  # (before E's first prompt: it shows one step more)
        return await real(self, pid)
    mp.setattr(engine._Session, "turn", turn)


def _third_seat_dropped_when_gated(mp: pytest.MonkeyPatch) -> None:
    real = engine._Session.turn

    async def turn(self, pid):
        return None if pid == "E" and self.variant.gate_source != "none" else await real(self, pid)
    mp.setattr(engine._Session, "turn", turn)


@pytest.mark.parametrize("mutation", [_extra_step_for_a_third_seat_when_gated, _third_seat_dropped_when_gated],
                         ids=["E gets an extra step", "E's steps are dropped"])
def test_an_engine_that_treats_the_third_seat_differently_is_killed(mutation, monkeypatch):
    mutation(monkeypatch)
    report = hunt(specs(DEFAULT, PRE), TASKS, examples=0, known=[BUSY])
    assert not report.ok
    assert "same-capacity" in {v.invariant for v in report.violations}, report.render()
    assert "VIOLATION same-capacity [" in report.render() and "preassigned-dre" in report.render()


def test_a_plugin_that_gives_the_third_seat_an_extra_step_fails_the_hunt():
    plugin = VariantConfig(name="plugin-dre", humans=SEATS, personas=(E,),
                           structures=(StructureRef(name="helpers.structure_plugins:ThirdSeatExtraStep"),))
    report = hunt(specs(DEFAULT, plugin), TASKS, examples=0, known=[BUSY])
    assert not report.ok
    assert "same-capacity" in {v.invariant for v in report.violations}, report.render()
    assert any("plugin-dre" in v.variants for v in report.violations)


def test_a_variant_whose_seats_no_scenario_plays_fails_closed():
    d_only = Scenario(TASK.id, "d", budget=2, gates="none", policies={"ai": Policy(("code:0",))})
    with pytest.raises(ColabkitError, match=r"checked nothing for variant 'default-dre' seat\(s\) E"):
        hunt(specs("default-d", DEFAULT), TASKS, examples=0, known=[d_only])
