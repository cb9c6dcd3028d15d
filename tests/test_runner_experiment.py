"""Experiment configs: validated with errors that name the field, hashed into the experiment's
name by what determines its sessions, and the two shipped configs have the promised shape."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers.env import shared_data

from colabkit.errors import ColabkitError
from colabkit.llm import ModelConfig
from colabkit.runner import load_experiment
from colabkit.team import STUDY_VARIANT_NAMES

REPO = Path(__file__).resolve().parents[1]
BASE = {"name": "t", "tasks": {"ids": ["demo_archaeology/0/0"]}, "variants": ["single", "default-dr"],
        "seeds": [0, 1], "models": {"default": "scripted/x"}, "settings": {"action_budget": 3}}


def write(tmp_path: Path, data: dict, name: str = "exp.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_grid_is_variants_by_tasks_by_seeds_with_the_shared_settings(tmp_path):
    exp = load_experiment(write(tmp_path, {**BASE, "tasks": {"ids": ["demo_archaeology/0", "demo_archaeology/1"]}}))
    items = exp.sessions()
    assert len(items) == 2 * 2 * 2
    assert [(s.variant.name, s.task_id, s.seed) for s, _ in items][:3] == [
        ("single", "demo_archaeology/0/0", 0), ("single", "demo_archaeology/0/0", 1),
        ("single", "demo_archaeology/1/0", 0)]
    assert {s.settings.action_budget for s, _ in items} == {3}
    assert all(s.model_for(p) == ModelConfig(model="scripted/x") for s, _ in items for p in s.participants)
    assert len({s.session_id for s, _ in items}) == 8
    assert [s.variant.name for s, _ in exp.sessions(["default-dr"])] == ["default-dr"] * 4


def test_models_per_role_reach_only_the_roles_a_variant_has(tmp_path):
    exp = load_experiment(write(tmp_path, {**BASE, "models": {"default": "scripted/x", "R": {"model": "scripted/r",
                                                                                           "temperature": 0.1}}}))
    single, team = exp.sessions()[0][0], exp.sessions(["default-dr"])[0][0]
    assert set(single.models) == {"default"}
    assert team.model_for("R") == ModelConfig(model="scripted/r", temperature=0.1)
    assert team.model_for("D") == ModelConfig(model="scripted/x")


def test_relative_paths_resolve_against_the_config_folder(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    path = write(tmp_path / "sub", {**BASE, "results": "../out"})
    monkeypatch.chdir(REPO)
    exp = load_experiment(path)
    assert exp.results == (tmp_path / "out").resolve()
    assert exp.folder() == exp.results / exp.experiment_id
    assert exp.experiment_id.startswith("t-") and len(exp.experiment_id) == len("t-") + 8
    override = load_experiment(path, results=tmp_path / "elsewhere")
    assert override.results == tmp_path / "elsewhere"


def test_the_scoring_job_follows_the_experiments_judge_repeats_and_metrics(tmp_path):
    exp = load_experiment(write(tmp_path, {**BASE, "judge": "scripted/judge", "judge_repeats": 3,
                                           "metrics": ["work", "performance"]}))
    scoring = exp.scoring(exclude=["gates"])
    assert (scoring.judge.model, scoring.repeats, scoring.metrics) == ("scripted/judge", 3, ("work", "performance"))
    assert exp.scoring(only=["gates"]).metrics == ()  # gates left out of the config: never judged
    assert load_experiment(write(tmp_path, BASE)).scoring().repeats == 1
    with pytest.raises(ColabkitError, match="judge_repeats"):
        load_experiment(write(tmp_path, {**BASE, "judge_repeats": 0}))


def test_the_identity_covers_what_makes_the_sessions_and_nothing_else(tmp_path):
    base = load_experiment(write(tmp_path, BASE))
    same = [{"judge": "scripted/judge"}, {"metrics": ["performance"]}, {"judge_repeats": 2}, {"concurrency": {"sessions": 9}},
            {"executor": {"kind": "dask", "scheduler": "tcp://x:1"}}, {"results": "elsewhere"},
            {"llm_budget": {"max_cost_per_session": 1.0}}, {"description": "words"}]
    for change in same:
        assert load_experiment(write(tmp_path, {**BASE, **change})).identity() == base.identity(), change
    different = [{"seeds": [0, 2]}, {"variants": ["single"]}, {"models": {"default": "scripted/y"}},
                 {"settings": {"action_budget": 4}}, {"tasks": {"ids": ["demo_archaeology/1/0"]}}, {"name": "u"}]
    for change in different:
        assert load_experiment(write(tmp_path, {**BASE, **change})).identity() != base.identity(), change
    # the tasks count by the ids selected, not by how they were selected
    same_tasks = {"tasks": {"ids": ["demo_archaeology/0"]}}
    assert load_experiment(write(tmp_path, {**BASE, **same_tasks})).identity() == base.identity()
    fixture_root = Path(__file__).resolve().parent / "fixtures" / "synth"
    other_data = {"tasks": {"data_root": str(fixture_root)}}
    assert load_experiment(write(tmp_path, {**BASE, **other_data})).identity() != \
        load_experiment(write(tmp_path, {**BASE, "tasks": {}})).identity()


def test_the_config_copy_reloads_as_the_same_experiment(tmp_path):
    exp = load_experiment(write(tmp_path, {**BASE, "results": "r"}))
    copy = tmp_path / "elsewhere" / "copy.yaml"
    copy.parent.mkdir()
    copy.write_text(exp.dump_yaml())
    again = load_experiment(copy)
    assert again.identity() == exp.identity() and again.folder() == exp.folder()
    assert again.model_dump(exclude={"source"}) == exp.model_dump(exclude={"source"})


@pytest.mark.parametrize(("change", "message"), [
    ({"seeds": [0, "one"]}, "seeds.1: Input should be a valid integer"),
    ({"seeds": [0, 0]}, "seeds: repeated seed(s): 0"),
    ({"seeds": [-1]}, "seeds: seeds must be non-negative"),
    ({"variants": ["single", "solo"]}, "variants: unknown variant(s) 'solo'; valid: single,"),
    ({"variants": []}, "variants: Tuple should have at least 1 item"),
    ({"settings": {"action_budget": 0}}, "settings.action_budget: Input should be greater than or equal to 1"),
    ({"settings": {"no_such_knob": 1}}, "unknown key settings.no_such_knob"),
    ({"models": {"judge": "x/y"}}, "models: unknown role(s) 'judge'"),
    ({"concurrency": {"sessions": 0}}, "concurrency.sessions: Input should be greater than or equal to 1"),
    ({"executor": {"kind": "dask"}}, "executor: executor 'dask' needs a scheduler address"),
    ({"executor": {"kind": "slurm"}}, "executor.kind: Input should be 'local' or 'dask'"),
    ({"metrics": ["accuracy"]}, "metrics: unknown metric(s) 'accuracy'"),
    ({"name": "a/b"}, "name: 'a/b' must be letters"),
    ({"varients": ["single"]}, "unknown key varients (did you mean variants?)"),
    ({"contrasts": [["default-dr", "nope"]]}, "contrasts: [default-dr, nope]: 'nope' not a variant of this experiment"),
    ({"contrasts": [["single", "single"]]}, "contrasts: [single, single]: a variant compared with itself"),
    ({"contrasts": [["single"]]}, "contrasts: [['single']]: a list of pairs [A, B] of variant names (A - B)"),
    ({"contrasts": [["single", "default-dr"]] * 2}, "contrasts: repeated contrast(s): [single, default-dr]"),
])
def test_a_bad_field_is_one_line_naming_the_file_and_the_field(tmp_path, change, message):
    path = write(tmp_path, {**BASE, **change})
    with pytest.raises(ColabkitError) as info:
        load_experiment(path)
    text = str(info.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text


def test_unreadable_files_are_one_line_errors(tmp_path):
    with pytest.raises(ColabkitError, match="experiment config not found"):
        load_experiment(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("name: [unclosed")
    with pytest.raises(ColabkitError, match="bad.yaml: not valid YAML"):
        load_experiment(tmp_path / "bad.yaml")
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(ColabkitError, match="a mapping of fields, got list"):
        load_experiment(tmp_path / "list.yaml")


def test_an_unset_variable_in_a_path_names_the_field(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_ROOT_VAR", raising=False)
    path = write(tmp_path, {**BASE, "tasks": {"data_root": "${NO_SUCH_ROOT_VAR}/db"}})
    with pytest.raises(ColabkitError, match=r"tasks.data_root: environment variable not set"):
        load_experiment(path)
    monkeypatch.setenv("NO_SUCH_ROOT_VAR", str(tmp_path))
    assert load_experiment(path).tasks.data_root == tmp_path / "db"


def test_the_demo_config_is_the_demo_grid_on_the_embedded_model():
    exp = load_experiment(REPO / "experiments" / "demo.yaml")
    assert exp.variants == ("single", "default-dr", "scaffolded-dr", "preassigned-dr") and exp.seeds == (0,)
    assert exp.tasks.data_root is None and exp.uses_embedded_model()
    assert exp.settings.action_budget <= 6
    assert exp.results == REPO / "results"
    items = exp.sessions()
    assert len(items) == 4 and all(task.id.startswith("demo_archaeology/") for _, task in items)


def test_the_paper_config_is_13_variants_by_38_archaeology_tasks_by_3_seeds():
    exp = load_experiment(REPO / "experiments" / "paper.yaml", data_root=shared_data())
    assert set(exp.variants) == set(STUDY_VARIANT_NAMES) and len(exp.variants) == 13
    assert exp.seeds == (0, 1, 2)
    assert exp.model_configs() == {"default": ModelConfig(model="deepseek/deepseek-chat")}
    assert exp.judge_config().model == "deepseek/deepseek-chat"
    suite = exp.load_suite()
    assert len(suite.tasks) == 38 and all(t.id.startswith("archaeology/") for t in suite.tasks)
    items = exp.sessions(suite=suite)
    assert len(items) == 13 * 38 * 3 == len({spec.session_id for spec, _ in items})


ARMS = [{"name": "ai_budget", "settings": {"termination": "ai_budget"}},
        {"name": "all_sides", "settings": {"termination": "all_sides"}}]


def test_settings_arms_run_the_grid_once_per_arm_and_enter_each_sessions_identity(tmp_path):
    plain = load_experiment(write(tmp_path, BASE, "plain.yaml"))
    exp = load_experiment(write(tmp_path, {**BASE, "arms": ARMS}))
    items = exp.sessions()
    assert len(items) == 2 * len(plain.sessions())
    rules = [(s.variant.name, s.settings.termination, s.seed) for s, _ in items]
    assert rules[:3] == [("single", "ai_budget", 0), ("single", "ai_budget", 1), ("single", "all_sides", 0)]
    assert {s.settings.action_budget for s, _ in items} == {3}  # the common settings stay
    assert len({s.session_id for s, _ in items}) == len(items)
    # the ai_budget arm is the default settings: its sessions are the plain grid's
    either = {s.session_id for s, _ in items if s.settings.termination == "ai_budget"}
    assert either == {s.session_id for s, _ in plain.sessions()}
    assert exp.identity() != plain.identity()


@pytest.mark.parametrize(("arms", "message"), [
    (ARMS + [ARMS[0]], "repeated arm(s): ai_budget"),
    ([{"name": "x", "settings": {"termination": "sometimes"}}], "arm 'x': termination: Input should be"),
    ([{"name": "x", "settings": {}}], "arms.0.settings: Dictionary should have at least 1 item"),
])
def test_a_bad_arm_is_one_line_naming_it(tmp_path, arms, message):
    path = write(tmp_path, {**BASE, "arms": arms})
    with pytest.raises(ColabkitError) as info:
        load_experiment(path)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_the_sensitivity_config_is_the_paper_grid_under_all_three_rules():
    paper = load_experiment(REPO / "experiments" / "paper.yaml", data_root=shared_data())
    exp = load_experiment(REPO / "experiments" / "sensitivity.yaml", data_root=shared_data())
    assert (exp.variants, exp.seeds, exp.models) == (paper.variants, paper.seeds, paper.models)
    assert exp.load_suite().ids == paper.load_suite().ids
    assert {name: s.termination for name, s in exp.arm_settings().items()} == {
        "ai_budget": "ai_budget", "either_side": "either_side", "all_sides": "all_sides"}
    items = exp.sessions()
    assert len(items) == 3 * 13 * 38 * 3 == len({spec.session_id for spec, _ in items})
    # the default arm's sessions are the paper's own: stored sessions are shared, never rerun
    assert {s.session_id for s, _ in items if s.settings.termination == "ai_budget"} == {
        s.session_id for s, _ in paper.sessions()}


def test_the_sensitivity_dry_run_plans_all_three_rules(capsys, monkeypatch):
    from helpers.keys import placeholder_keys

    from colabkit.cli import main

    placeholder_keys(monkeypatch)  # the dry run preflights the models

    path = REPO / "experiments" / "sensitivity.yaml"
    assert main(["batch", str(path), "--dry-run", "--data-root", str(shared_data())]) == 0
    out = capsys.readouterr().out
    assert f"{3 * 13 * 38 * 3} sessions" in out
    assert "arm ai_budget: 1482 sessions (termination=ai_budget)" in out
    assert "arm either_side: 1482 sessions (termination=either_side)" in out
    assert "arm all_sides: 1482 sessions (termination=all_sides)" in out
