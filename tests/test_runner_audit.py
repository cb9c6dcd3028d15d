"""The variant audit: the shipped variants differ only by design, and every kind of injected
difference (a budget, a prompt line, a section, a persona line) is found and fails the command.

The injections go through the audit's real inputs (the specs it is given) or monkeypatch the
engine's real renderers, so the comparison code under test is the shipped one."""

from __future__ import annotations

from pathlib import Path

from helpers.env import shared_data

from colabkit.cli import main
from colabkit.runner import build_spec, load_experiment
from colabkit.runner.audit import audit_experiment, audit_specs
from colabkit.session import SessionSpec, engine
from colabkit.session.prompting.preview import preview
from colabkit.tasks import load_tasks
from colabkit.team import STUDY_VARIANT_NAMES, VARIANT_NAMES, Persona, VariantConfig, persona

REPO = Path(__file__).resolve().parents[1]
TASK = load_tasks().get("demo_archaeology/0/0")


def shipped_specs(names: tuple[str, ...] = STUDY_VARIANT_NAMES) -> list[SessionSpec]:
    return [build_spec(TASK.id, name, 0) for name in names]


def test_the_13_shipped_variants_differ_only_for_allowed_causes():
    report = audit_specs(shipped_specs(), TASK)
    assert report.ok, report.render()
    causes = {c for item in report.allowed.values() for c in item.causes}
    assert causes == {"team", "memory", "gated", "gate_chooser"}  # every design factor shows, nothing else
    assert ("task: Gate rules (set by line)", "text") in report.allowed  # the one Scaffolded/Preassigned difference
    assert "| sections |" in report.table() and "no unexplained difference" in report.render()


def test_every_dynamic_vs_scaffolded_difference_is_the_living_memory():
    for team in ("d", "r", "dr"):
        report = audit_specs(shipped_specs((f"scaffolded-{team}", f"dynamic-{team}")), TASK)
        assert report.ok, report.render()
        assert {c for item in report.allowed.values() for c in item.causes} == {"living"}
        assert {section for section, _ in report.allowed} == {
            "task: Shared Group Memory", "task: Valid actions", "facts: valid actions",
            *(f"{stage}: Memory build" for stage in ("propose", "consolidate", "ratify", "amend"))}
    report = audit_specs(shipped_specs(VARIANT_NAMES), TASK)  # all 16 together
    assert report.ok, report.render()


def test_scaffolded_and_preassigned_show_the_same_gate_section_but_for_who_set_it():
    def gate_section(name: str, pid: str) -> list[str]:
        text = preview(build_spec(TASK.id, name, 0), TASK)[pid].task.user
        return text.split("# Gate rules\n")[1].split("\n\n# ")[0].splitlines()

    for pid in ("ai", "D", "R"):
        scaffolded, preassigned = gate_section("scaffolded-dr", pid), gate_section("preassigned-dr", pid)
        assert scaffolded[0] == "Set by: the team, agreed in the Shared Group Memory before the task."
        assert preassigned[0] == "Set by: assigned to the team before the task."
        assert scaffolded[1:] == preassigned[1:] and len(scaffolded) > 3
    assert "You sign: edit_result, finish" in "\n".join(gate_section("preassigned-dr", "R"))
    assert "# Gate rules" not in preview(build_spec(TASK.id, "memory-dr", 0), TASK)["ai"].task.user


def test_a_budget_changed_in_one_variant_is_found():
    specs = shipped_specs()
    odd = specs[3]
    specs[3] = odd.model_copy(update={"settings": odd.settings.model_copy(update={"human_action_budget": 60})})
    report = audit_specs(specs, TASK)
    assert not report.ok
    found = {(f.section, f.participant) for f in report.findings}
    assert ("facts: budget", "D") in found and ("facts: settings", "ai") in found
    budget = next(f for f in report.findings if f.section == "facts: budget" and f.participant == "D")
    assert [variants for variants, text in budget.texts if "60 steps" in (text or "")] == [(odd.variant.name,)]
    assert "UNEXPLAINED facts: budget [D]" in report.render()


def test_a_line_added_to_one_variants_prompt_is_found(monkeypatch):
    real = engine._Session.messages

    def one_more_line(self, pid, observation):
        messages = real(self, pid, observation)
        if self.variant.name == "memory-dr" and pid == "ai":
            messages[0]["content"] = messages[0]["content"].replace("\n\n", "\nCheck every claim twice.\n\n", 1)
        return messages

    monkeypatch.setattr(engine._Session, "messages", one_more_line)
    report = audit_specs(shipped_specs(), TASK)
    [finding] = report.findings
    assert (finding.section, finding.participant) == ("task: system 1", "ai")
    assert [(v, "Check every claim twice." in (t or "")) for v, t in finding.texts if v == ("memory-dr",)] == [
        (("memory-dr",), True)]
    assert "Check every claim twice." in finding.render()


def test_a_section_shown_to_one_variant_only_is_found(monkeypatch):
    real = engine._Session.observe

    def with_a_hint(self, pid):
        observation = real(self, pid)
        if self.variant.name == "default-r":
            return observation.model_copy(update={"gate_rules": "Hints\nThe answer is about pottery."})
        return observation

    monkeypatch.setattr(engine._Session, "observe", with_a_hint)
    report = audit_specs(shipped_specs(), TASK)
    assert {(f.section, f.participant) for f in report.findings} == {("task: Hints", "ai"), ("task: Hints", "R")}
    finding = report.findings[0]
    assert dict(finding.texts)[("default-r",)].endswith("The answer is about pottery.")
    assert None in dict(finding.texts).values()  # absent from the others


def test_an_extra_line_in_one_persona_is_found():
    base = persona("R")
    louder = Persona(**{**base.model_dump(), "version": "R-x",
                        "prompt": base.prompt + "\n- You care that the hypothesis rests on evidence."})
    specs = shipped_specs()
    specs[2] = build_spec(TASK.id, "default-r", 0).model_copy(update={"variant": VariantConfig(
        name="default-r", humans=("R",), personas=(louder,))})
    report = audit_specs(specs, TASK)
    frames = [f for f in report.findings if f.section.startswith("persona frame")]
    assert len(frames) == 2  # R-x against D-3 and against R-4
    assert all("rests on evidence" in f.render() for f in frames)


def test_a_normative_cue_in_a_knowledge_line_is_found():
    base = persona("R")
    old = base.prompt.replace("conventions of the field", "conventions a sound answer must respect")  # R-3's line
    specs = shipped_specs()
    specs[2] = build_spec(TASK.id, "default-r", 0).model_copy(update={"variant": VariantConfig(
        name="default-r", humans=("R",), personas=(Persona(**{**base.model_dump(), "version": "R-3", "prompt": old}),))})
    [finding] = [f for f in audit_specs(specs, TASK).findings if f.section.startswith("persona knowledge line")]
    assert "must, respect, sound" in finding.section and finding.participant == "R"


def test_the_shipped_experiments_render_alike_but_for_allowed_causes():
    for name in ("demo.yaml", "paper.yaml", "sensitivity.yaml"):
        root = None if name == "demo.yaml" else shared_data()
        exp = load_experiment(REPO / "experiments" / name, data_root=root)
        reports = audit_experiment(exp, hunting=False)  # the hunt: tests/test_runner_audit_hunt.py
        assert all(r.ok for r in reports.values()), name
        assert len(next(iter(reports.values())).variants) == len(exp.variants)
    assert set(reports) == {"ai_budget", "either_side", "all_sides"}  # sensitivity: each arm audited on its own


def test_the_command_exits_1_on_an_injected_difference(monkeypatch, capsys):

    real = engine._Session.observe
    monkeypatch.setattr(engine._Session, "observe", lambda self, pid: real(self, pid).model_copy(
        update={"actions_left": 7}) if self.variant.name == "memory-d" else real(self, pid))
    assert main(["audit", "--variants", "default-d,memory-d", "--quick"]) == 1
    assert "UNEXPLAINED task: Now [ai]" in capsys.readouterr().out


def test_the_command_names_a_bad_variant_in_one_line(capsys):
    assert main(["audit", str(REPO / "experiments" / "demo.yaml"), "--variants", "memory-r"]) == 2
    assert "not in experiment 'demo'" in capsys.readouterr().err


def test_a_line_added_to_one_variants_build_phase_is_found(monkeypatch):
    from colabkit.session.structure import build_phase

    real = build_phase.build_rules

    def louder(team, with_gates, slot_chars, **kw):  # scaffolded-dr only: three members writing gates
        text = real(team, with_gates, slot_chars, **kw)
        return text + "\nThe Researcher has the last word." if with_gates and len(team) == 3 else text

    monkeypatch.setattr(build_phase, "build_rules", louder)
    report = audit_specs(shipped_specs(), TASK)
    sections = {f.section for f in report.findings}
    assert sections == {f"{stage}: Memory build" for stage in ("propose", "consolidate", "ratify", "amend")}
    assert all(("scaffolded-dr",) in dict(f.texts) for f in report.findings)
