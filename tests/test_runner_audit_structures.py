"""The audit covers every structure (issue 36 item 3): a plugin structure's declared sections and
actions are the only differences allowed from its Default twin; the shipped example passes; a
plugin that changes anything else (clips the notebook, gives the AI an extra step, shows an
undeclared section) fails with the invariant named."""

from __future__ import annotations

from pathlib import Path

import pytest

from colabkit.cli import main
from colabkit.errors import ColabkitError
from colabkit.runner import build_spec
from colabkit.runner.audit import Policy, Scenario, audit_specs, hunt
from colabkit.tasks import load_tasks
from colabkit.team import StructureRef, VariantConfig

REPO = Path(__file__).resolve().parents[1]
TASK = load_tasks().get("demo_archaeology/0/0")
BUSY = Scenario(TASK.id, "d", budget=3, gates="none", policies={
    "ai": Policy(("code:0", "msg:1", "edit:1")), "D": Policy(("code:3", "msg:1", "code:0"))})


def plugin_variant(path: str, humans: tuple[str, ...] = ("D",)) -> VariantConfig:
    return VariantConfig(name=f"plugin-{'' .join(humans).lower()}", humans=humans,
                         structures=(StructureRef(name=f"helpers.structure_plugins:{path}"),))


def test_the_shipped_example_passes_the_whole_audit(capsys):
    assert main(["audit", str(REPO / "experiments" / "checklist.yaml"), "--quick"]) == 0
    out = capsys.readouterr().out
    assert "(d) the structure 'evidence-checklist': its declared sections and actions" in out
    assert "every invariant held" in out and "0 unexplained" in out


def test_a_fair_plugin_differs_from_default_only_in_its_declared_section():
    specs = [build_spec(TASK.id, "default-d", 0), build_spec(TASK.id, plugin_variant("Reminder"), 0)]
    report = audit_specs(specs, TASK)
    assert report.ok, report.render()
    assert {section for section, _ in report.allowed} == {"task: Reminder"}
    assert hunt(specs, {TASK.id: TASK}, examples=0, known=[BUSY]).ok


def test_a_plugin_cannot_take_a_section_of_the_engine(monkeypatch):
    """A plugin's section under a study section's title (the briefing) would stand in for it:
    refused when the plugin is found, in one line."""
    from helpers import structure_plugins

    monkeypatch.setattr(structure_plugins.Reminder, "sections", ("Your private briefing",))
    with pytest.raises(ColabkitError, match="sections 'Your private briefing' are the engine's or the study's"):
        build_spec(TASK.id, plugin_variant("Reminder"), 0)


@pytest.mark.parametrize(("plugin", "invariant"), [
    ("ClipNotebook", "same-rendering"),  # clips the notebook's outputs: not a structure's part
    ("ExtraStep", "ai-opportunity"),  # the AI takes a step beyond its budget
    ("UndeclaredSection", "ai-opportunity"),  # refused by the engine: the session ends in an error
])
def test_an_unfair_plugin_fails_the_hunt_with_the_invariant_named(plugin, invariant):
    specs = [build_spec(TASK.id, "default-d", 0), build_spec(TASK.id, plugin_variant(plugin), 0)]
    report = hunt(specs, {TASK.id: TASK}, examples=0, known=[BUSY])
    assert not report.ok
    assert invariant in {v.invariant for v in report.violations}, report.render()
    assert any("plugin-d" in v.variants for v in report.violations)


def test_the_command_fails_an_experiment_with_an_unfair_plugin(tmp_path, capsys):
    exp = tmp_path / "unfair.yaml"
    exp.write_text("name: unfair\ntasks: {data_root: null, ids: [demo_archaeology/0/0]}\n"
                   "variants:\n  - default-d\n  - {name: clip-d, humans: [D], structure: "
                   "helpers.structure_plugins:ClipNotebook}\nseeds: [0]\nsettings: {action_budget: 4}\n"
                   f"results: {tmp_path / 'results'}\n")
    assert main(["audit", str(exp), "--quick"]) == 1
    assert "VIOLATION same-rendering [default-d vs clip-d]" in capsys.readouterr().out
