"""`colabkit prompts lint` (issue 44): every kind of prompt of every shipped experiment states the
rules the engine enforces, and each check fails on a prompt seeded with its defect."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.env import shared_data

from colabkit.cli import main
from colabkit.runner import load_experiment
from colabkit.runner.build import build_spec
from colabkit.runner.prompt_lint import CHECKS, KINDS, Rendered, lint, lint_experiment, render_all
from colabkit.session.settings import SessionSettings
from colabkit.tasks import load_tasks

REPO = Path(__file__).resolve().parents[1]
DEMO_ONLY = ("demo.yaml", "checklist.yaml")  # their tasks are the bundled demo tasks


@pytest.fixture(scope="module")
def gated() -> list[Rendered]:
    """Every prompt of the preassigned DR team (requests, decisions, the closing pass) and of the
    scaffolded one (the build with gates), on the demo task."""
    task = load_tasks().tasks[0]
    return [p for name in ("preassigned-dr", "scaffolded-dr")
            for p in render_all(build_spec(task.id, name, 0), task)]


def _one(prompts: list[Rendered], where: str) -> Rendered:
    return next(p for p in prompts if p.where == where)


def _with_user(prompt: Rendered, old: str, new: str) -> Rendered:
    assert old in prompt.user, old
    messages = (*prompt.messages[:-1], {**prompt.messages[-1], "content": prompt.user.replace(old, new, 1)})
    return replace(prompt, messages=messages)


def _found(prompt: Rendered, check: str) -> list[str]:
    return [f.detail for f in lint([prompt]) if f.check == check]


def test_every_kind_of_prompt_is_rendered_for_every_seat(gated):
    kinds = {(p.seat, p.kind) for p in gated}
    assert {k for _, k in kinds} == set(KINDS)
    for seat in ("ai", "D", "R"):  # every seat signs something in the preassigned DR team or Scaffolded
        assert {(seat, "step"), (seat, "propose")} <= kinds
    assert ("R", "decision") in kinds and ("D", "closing") in kinds
    assert lint(gated) == []


def test_a_schema_action_missing_from_the_list_is_found(gated):
    prompt = _one(gated, "preassigned-dr/R/decision")
    assert "approve" in prompt.enum("action") and _found(prompt, "actions") == []
    line = next(line for line in prompt.user.splitlines() if line.startswith("- approve:"))
    seeded = _with_user(prompt, f"\n{line}", "")
    assert _found(seeded, "actions") == ["approve is in the answer schema but not in the Valid actions list"]
    listed_only = _with_user(prompt, "\n- reject:", "\n- finish: done\n- reject:")
    assert _found(listed_only, "actions") == ["finish is in the Valid actions list but not in the answer schema"]


def test_a_wrong_budget_is_found(gated):
    step = _one(gated, "preassigned-dr/D/step")
    assert _found(step, "budgets") == []
    assert _found(_with_user(step, "Your steps: 30 for the task", "Your steps: 25 for the task"), "budgets") == [
        "states 25 for budget:D; the engine's is 30"]
    assert _found(_with_user(step, "actions left for you; 30 for the AI", "actions left for you; 29 for the AI"),
                  "budgets") == ["states 29 for ai_left; the engine's is 30"]
    build = _one(gated, "scaffolded-dr/D/propose")
    assert _found(build, "budgets") == []
    assert _found(_with_user(build, "ai 30 steps", "ai 12 steps"), "budgets") == [
        "states 12 task steps for ai; the engine's is 30"]


def test_an_internal_name_is_found_in_a_description_or_the_text(gated):
    build = _one(gated, "scaffolded-dr/ai/consolidate")
    assert _found(build, "internal-names") == []
    schema = copy.deepcopy(build.schema)
    schema["properties"]["plan"]["description"] = "mapped by `memory_from_consolidation`"
    assert _found(replace(build, schema=schema), "internal-names") == [
        "schema description names the internal 'memory_from_consolidation'"]
    step = _one(gated, "preassigned-dr/ai/step")
    assert _found(_with_user(step, "# Valid actions", "# Valid actions (see valid_actions)"), "internal-names") == [
        "prompt names the internal 'valid_actions'"]


def test_an_unresolvable_id_is_found(gated):
    prompt = _one(gated, "preassigned-dr/R/step")
    assert _found(prompt, "ids") == []
    assert _found(_with_user(prompt, "# Result editor", "See req-99 and cell 40.\n\n# Result editor"), "ids") == [
        "req-99 is named but no such request exists", "cell 40 is named but the notebook has 2 cells"]
    schema = copy.deepcopy(prompt.schema)
    schema["properties"]["to"].setdefault("enum", []).append("req-1")  # req-1 is D's to sign, not R's
    assert _found(replace(prompt, schema=schema), "ids") == ["req-1 is on offer in `to` but not open for R"]


def test_a_section_over_its_budget_is_found(gated):
    prompt = _one(gated, "preassigned-dr/ai/step")
    assert _found(prompt, "sections") == []
    editor = prompt.sections()["Result editor"]
    assert _found(_with_user(prompt, editor, editor + "x" * 100), "sections") == [
        f"section 'Result editor' is {len(editor) + 100} characters; its budget is 400"]


def test_the_checks_are_the_issues_five():
    assert set(CHECKS) == {"actions", "ids", "budgets", "internal-names", "sections"}


def test_every_shipped_experiment_lints_clean(capsys):
    """`colabkit prompts lint` exits 0 on every experiment the suite ships."""
    names = sorted(p.name for p in (REPO / "experiments").glob("*.yaml"))
    assert set(DEMO_ONLY) < set(names)
    for name in names:
        root = [] if name in DEMO_ONLY else ["--data-root", str(shared_data())]
        assert main(["prompts", "lint", str(REPO / "experiments" / name), *root]) == 0, capsys.readouterr().out
        assert "every check passed" in capsys.readouterr().out


def test_the_co_gym_rules_are_stated_as_the_scheduler_counts_them():
    """Under either_side the humans share one budget and every wait is free: the prompts say so."""
    exp = load_experiment(REPO / "experiments" / "demo.yaml")
    report = lint_experiment(exp)
    assert report.ok
    task = load_tasks().tasks[0]
    spec = build_spec(task.id, "default-dr", 0, settings=SessionSettings(termination="either_side",
                                                                          human_action_budget=12))
    prompts = {p.where: p for p in render_all(spec, task)}
    assert "Steps shared by D and R: 12 for the task (every step but a wait is one; waits are free)." in \
        prompts["default-dr/D/step"].user
    assert "Your steps: 30 for the task (every step but a wait is one; waits are free)." in \
        prompts["default-dr/ai/step"].user
    assert lint(list(prompts.values())) == []


def test_the_rules_page_is_what_the_engine_renders(capsys):
    """docs/rules.md is `colabkit prompts rules`: cut from prompts the engine renders, so it cannot drift."""
    assert main(["prompts", "rules"]) == 0
    page = capsys.readouterr().out
    assert (REPO / "docs" / "rules.md").read_text() == page
    assert "Your steps: 30 for the task (every step is one, a wait included)." in page
    assert "- approve: to = one of the requests open for you" in page  # the list the schema offers
