"""Who plays the humans: an experiment's simulator sweep, planned, audited and run.

The grid runs once per simulator (the models of D and R), the AI's model fixed; a variant with
no simulated human runs once. The embedded-model test runs the smallest sweep for real.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers.env import shared_data

from colabkit.errors import ColabkitError
from colabkit.llm import ModelConfig
from colabkit.runner import load_experiment
from colabkit.runner.pipeline import notebook_jobs, wants_realism

REPO = Path(__file__).resolve().parents[1]
BASE = {"name": "sweep", "tasks": {"ids": ["demo_archaeology/0/0"]}, "variants": ["single", "default-dr"],
        "seeds": [0, 1], "models": {"default": "scripted/ai"},
        "simulators": [{"name": "a", "models": {"D": "scripted/a", "R": "scripted/a"}},
                       {"name": "b", "models": {"D": "scripted/b", "R": {"model": "scripted/a", "temperature": 0.1}}}]}


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_grid_runs_once_per_simulator_and_the_single_agent_once(tmp_path):
    exp = load_experiment(write(tmp_path, BASE))
    items = exp.sessions()
    assert len(items) == 2 + 2 * 2 == len({spec.session_id for spec, _ in items})  # single x 2 seeds once
    team = [spec for spec, _ in items if spec.variant.name == "default-dr"]
    assert {exp.simulator_of(spec) for spec in team} == {"a", "b"}
    assert all(spec.model_for("ai") == ModelConfig(model="scripted/ai") for spec, _ in items)
    b = next(spec for spec in team if exp.simulator_of(spec) == "b")
    assert b.model_for("R") == ModelConfig(model="scripted/a", temperature=0.1)
    assert {exp.simulator_of(spec) for spec, _ in items if spec.variant.name == "single"} == {None}
    plain = load_experiment(write(tmp_path, {k: v for k, v in BASE.items() if k != "simulators"}))
    assert plain.identity() != exp.identity() and not wants_realism(plain) and wants_realism(exp)


@pytest.mark.parametrize(("simulators", "message"), [
    ([{"name": "x", "models": {"ai": "scripted/x"}}], "a simulator plays only D and R, not 'ai'"),
    ([{"name": "x", "models": {"D": "person/p-1"}}], "person seats: a batch never waits for a person"),
    ([{"name": "x", "models": {"D": "scripted/x"}}, {"name": "x", "models": {"R": "scripted/y"}}],
     "repeated simulator(s): x"),
])
def test_a_bad_simulator_is_one_line_naming_it(tmp_path, simulators, message):
    with pytest.raises(ColabkitError) as info:
        load_experiment(write(tmp_path, {**BASE, "simulators": simulators}))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_the_batch_adds_the_realism_notebook_beside_the_ablations(tmp_path):
    exp = load_experiment(write(tmp_path, {**BASE, "results": str(tmp_path / "r")}))
    _, stages = notebook_jobs(exp, tmp_path / "exp.yaml", REPO / "notebooks", exp.variants)
    assert [job.name for job in stages[-1]] == ["ablations", "realism"]


def test_the_shipped_sweep_plans_and_audits_each_simulator(capsys, monkeypatch):
    from helpers.keys import placeholder_keys

    from colabkit.cli import main
    from colabkit.runner.audit import audit_experiment

    path = REPO / "experiments" / "simulators.yaml"
    exp = load_experiment(path, data_root=shared_data())
    assert len({exp.simulator_models()[s.name]["D"].model for s in exp.simulators}) >= 2
    assert {spec.model_for("ai") for spec, _ in exp.sessions()} == {ModelConfig(model="deepseek/deepseek-chat")}
    placeholder_keys(monkeypatch)  # the dry run preflights the models
    assert main(["batch", str(path), "--dry-run", "--data-root", str(shared_data())]) == 0
    out = capsys.readouterr().out
    assert f"{38 + 3 * 12 * 38} sessions" in out and "then ablations + realism" in out
    for sim in exp.simulators:
        assert f"simulator {sim.name}: {12 * 38} sessions with simulated humans" in out
    reports = audit_experiment(exp, variants=["default-dr", "scaffolded-dr"])
    assert set(reports) == {s.name for s in exp.simulators} and all(r.ok for r in reports.values())


@pytest.mark.slow
@pytest.mark.heavy  # make test keeps the sweep on scripted models (above); CI runs this one too
def test_a_small_sweep_on_the_embedded_model_runs_and_gives_a_card_per_simulator(tmp_path):
    from colabkit.analysis.realism import card_summary, persona_cards, stored_fingerprints
    from colabkit.runner import run_experiment

    config = {"name": "sweep-embedded", "tasks": {"ids": ["demo_archaeology/0/0"]}, "variants": ["default-dr"],
              "seeds": [0], "models": {"default": "local/smollm2-135m"},
              "settings": {"action_budget": 2, "max_rounds": 2},
              "simulators": [{"name": "cool", "models": {"D": "local/smollm2-135m", "R": "local/smollm2-135m"}},
                             {"name": "warm", "models": {"D": {"model": "local/smollm2-135m", "temperature": 1.2},
                                                         "R": {"model": "local/smollm2-135m", "temperature": 1.2}}}],
              "results": str(tmp_path / "results")}
    exp = load_experiment(write(tmp_path, config))
    summary = run_experiment(exp, progress=False)
    assert summary.count("failed") == 0
    prints = stored_fingerprints(exp.folder())
    assert sorted(set(prints["simulator"])) == ["local/smollm2-135m", "local/smollm2-135m [temperature=1.2]"]
    assert len(prints) == 4 and set(prints["kind"]) == {"simulated"}
    cards = card_summary(persona_cards(prints, permutations=9))
    assert len(cards) == 2 and set(cards["verdict"]) == {"intervals only"}
