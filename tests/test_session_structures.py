"""Structures as plugins (issue 36 item 2): found built in, by entry point and by import path;
declared in an experiment file with options; bad declarations refused in one line; the worked
example (the evidence checklist) holds the finish for its signatory and is otherwise its
Default twin."""

from __future__ import annotations

import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from colabkit.errors import ColabkitError
from colabkit.runner import build_spec, load_experiment
from colabkit.runner.audit.player import play, scenario_spec
from colabkit.runner.audit.scenario import Policy, Scenario
from colabkit.session.structure import registry
from colabkit.session.structure.checklist import EvidenceChecklist
from colabkit.session.structure.registry import BUILTIN, STUDY, structure_class, structures_for
from colabkit.tasks import load_tasks
from colabkit.team import StructureRef, VariantConfig, variant
from colabkit.team.declare import declare

REPO = Path(__file__).resolve().parents[1]
TASK = load_tasks().get("demo_archaeology/0/0")


def checklist(humans: tuple[str, ...] = ("R",), **options: object) -> VariantConfig:
    return VariantConfig(name="checklist", humans=humans,
                         structures=(StructureRef(name="evidence-checklist", options=dict(options)),))


def test_pyproject_declares_every_shipped_structure_as_an_entry_point():
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["colabkit.structures"]
    shipped = {**STUDY, **BUILTIN}
    assert set(declared) == set(shipped)
    for name, target in declared.items():
        module, _, attr = target.partition(":")
        assert f"{shipped[name].__module__}:{shipped[name].__qualname__}" == target, name
        assert shipped[name].name == name


def test_a_plugin_is_found_by_entry_point_and_by_import_path(monkeypatch):
    ep = EntryPoint(name="reminder", value="helpers.structure_plugins:Reminder", group=registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "entry_points", lambda group: [ep] if group == registry.ENTRY_POINT_GROUP else [])
    assert structure_class("reminder").__name__ == "Reminder"
    assert structure_class("helpers.structure_plugins:Reminder").name == "reminder"
    wrong = EntryPoint(name="other", value="helpers.structure_plugins:Reminder", group=registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "entry_points", lambda group: [wrong])
    with pytest.raises(ColabkitError, match="named 'reminder', not 'other'"):
        structure_class("other")


@pytest.mark.parametrize(("ref", "message"), [
    ("nope", "structure 'nope': unknown; built in or installed: evidence-checklist"),
    ("memory", "structure 'memory': a study structure"),
    ("helpers.nothing_here:X", "cannot import: ModuleNotFoundError"),
    ("colabkit.team:VariantConfig", "not a colabkit.session.structure.base.Structure subclass"),
])
def test_an_unknown_or_wrong_structure_is_one_line(ref, message):
    with pytest.raises(ColabkitError, match=message) as caught:
        build_spec(TASK.id, VariantConfig(name="v", humans=("R",), structures=(StructureRef(name=ref),)), 0)
    assert "\n" not in str(caught.value) and "variant 'v'" in str(caught.value)


def test_declarations_name_the_file_and_field(tmp_path):
    def decl(**fields: object) -> VariantConfig:
        return declare([{"name": "v", "humans": ["R"], **fields}], [], tmp_path, "exp.yaml")[1][0]

    made = decl(structure=["scaffolded", "evidence-checklist"], options={"signatory": "R"})
    assert (made.memory, made.gate_source) == (True, "self")
    assert made.structures == (StructureRef(name="evidence-checklist", options={"signatory": "R"}),)
    assert [s.name for s in structures_for(made)] == ["memory", "self-gates", "evidence-checklist"]
    for fields, message in [
        ({"structure": ["memory", "scaffolded"]}, "exp.yaml: variants.0 ('v').structure: one study structure at most"),
        ({"structure": "memory", "options": {"x": 1}}, ".options: options belong to a plugin structure"),
        ({"structure": "a b"}, ".structure: 'a b' is neither a study structure"),
        ({"structure": ["evidence-checklist", "helpers.structure_plugins:Reminder"], "options": {"x": {}}},
         ".options: with several plugins"),
    ]:
        with pytest.raises(ColabkitError, match=message.replace("(", r"\(").replace(")", r"\)")):
            decl(**fields)
    bad = tmp_path / "exp.yaml"
    bad.write_text("name: x\ntasks: {data_root: null}\nvariants:\n  - {name: v, humans: [R], structure: "
                   "evidence-checklist, options: {signatory: D}}\nseeds: [0]\nresults: r\n")
    with pytest.raises(ColabkitError, match=r"exp.yaml: variant 'v': structure 'evidence-checklist': signatory: "
                                            r"'D' is not a human on the team \(R\)"):
        load_experiment(bad)


def test_the_study_variants_are_their_fields_structures():
    names = {v: [s.name for s in structures_for(variant(v))] for v in
             ("single", "default-dr", "memory-d", "scaffolded-r", "preassigned-dr", "dynamic-dr")}
    assert names == {"single": [], "default-dr": [], "memory-d": ["memory"], "scaffolded-r": ["memory", "self-gates"],
                     "preassigned-dr": ["preassigned-gates"], "dynamic-dr": ["memory", "self-gates", "memory-updates"]}


def test_the_checklist_experiment_loads_with_its_options():
    exp = load_experiment(REPO / "experiments" / "checklist.yaml")
    config = exp.variant_config("checklist-dr")
    (made,) = [s for s in structures_for(config) if isinstance(s, EvidenceChecklist)]
    assert made.signatory == "R" and len(made.items) == 3
    assert exp.variant_config("default-dr").identity() == variant("default-dr").identity()
    with pytest.raises(ColabkitError, match="unknown option"):
        structures_for(checklist(colour="red"))


def _run(config: VariantConfig, scenario: Scenario):  # type: ignore[no-untyped-def]
    return play(scenario_spec(build_spec(TASK.id, config, 0), scenario), TASK, scenario)


def test_the_checklist_holds_the_ai_finish_for_its_signatory():
    moves = Policy(("code:0", "edit:0", "finish"))
    approved = _run(checklist(), Scenario(TASK.id, "r", budget=5, gates="none", policies={
        "ai": moves, "R": Policy(("wait",) * 8, "approve-oldest")}))
    held = next(e for e in approved.events if e.action == "finish" and e.status == "pending")
    assert held.signatory == "R" and held.gate_rule is not None and held.gate_rule.note == "evidence checklist"
    assert approved.result.ended_by == "finish"
    rejected = _run(checklist(), Scenario(TASK.id, "r", budget=5, gates="none", policies={
        "ai": moves, "R": Policy(("wait",) * 8, "reject-oldest")}))
    assert rejected.result.ended_by == "budget"  # a rejected finish never takes effect: the AI goes on
    assert any(e.action == "reject" and e.request_id == held.request_id for e in rejected.events)
    prompt = next(str(c["messages"][-1]["content"]) for c in approved.calls if c["role"] == "R")
    assert "# Evidence checklist\n" in prompt and "You check the finish" in prompt


def test_without_a_finish_the_checklist_runs_as_its_default_twin():
    scenario = Scenario(TASK.id, "dr", budget=4, gates="none", policies={
        "ai": Policy(("code:0", "msg:0", "edit:1", "code:3")), "D": Policy(("code:1", "msg:1")),
        "R": Policy(("edit:0", "wait"))})
    twin, plugin = _run(variant("default-dr"), scenario), _run(checklist(("D", "R")), scenario)

    def steps(run):  # type: ignore[no-untyped-def]
        return [(e.round, e.participant, e.action, e.status, e.result) for e in run.events if e.action != "session_start"]
    assert steps(twin) == steps(plugin) and len(steps(twin)) > 8


def test_a_structure_may_show_only_its_own_parts():
    scenario = Scenario(TASK.id, "r", budget=2, gates="none", policies={"ai": Policy(("code:0",))})
    run = _run(VariantConfig(name="u", humans=("R",), structures=(
        StructureRef(name="helpers.structure_plugins:UndeclaredSection"),)), scenario)
    assert run.result.ended_by == "error"
    end = run.events[-1]
    assert "section 'Hint' is not declared" in str(end.args.get("error"))
