"""Outcomes per simulator of a sweep, on a constructed score table with a known simulator effect."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from helpers.score_tables import score_table

from colabkit.analysis.realism import (
    by_simulator,
    contrasts_by_simulator,
    simulator_effect,
    simulator_failures,
    simulators,
    with_simulators,
)


def sweep(shift: float = 0.2) -> pd.DataFrame:
    """Each team session under simulators m1 and m2 (m2's performance `shift` higher); single once."""
    base = score_table(n_tasks=8, seeds=2)
    single, team = base[base["variant"] == "single"], base[base["variant"] != "single"]
    rng = np.random.default_rng(7)
    other = team.assign(session_id=team["session_id"] + "-m2", simulator="m2",
                        performance=(team["performance"] + shift + rng.normal(0, 0.02, len(team))).clip(0, 1))
    return pd.concat([single.assign(simulator=None), team.assign(simulator="m1"), other], ignore_index=True)


def test_the_simulator_effect_finds_the_shift_and_only_there():
    effect = simulator_effect(sweep(), metrics=["performance", "hms"])
    perf, hms = effect[effect["metric"] == "performance"], effect[effect["metric"] == "hms"]
    assert set(effect["variant"]) == set(sweep()["variant"]) - {"single"} and set(effect["simulator"]) == {"m2"}
    assert perf["diff"].between(0.1, 0.25).all() and (perf["p_holm"] < 0.01).all()
    assert effect["adjustment"].str.contains("not a decision of the plan").all()
    assert (hms["diff"].abs() < 1e-9).all()
    assert simulator_effect(sweep()[lambda t: t["simulator"] != "m2"]).empty  # one simulator: nothing to compare


def test_the_study_contrasts_are_computed_under_each_simulator():
    table = contrasts_by_simulator(sweep(), metrics=["performance"], mixed_families=())  # the t test decides
    assert set(table["simulator"]) == {"m1", "m2"}
    assert set(table["composition"]) == {"d", "r", "dr"} and set(table["family"]) == {"structure"}  # H2 per composition
    assert table["plan_status"].str.startswith("no plan").all()  # no experiment plan given: said so
    by_sim = table.set_index(["simulator", "composition"])["n_tasks"]
    assert (by_sim == 8).all()  # each simulator's sessions pair with their own, never across simulators
    one = by_simulator(sweep())
    assert set(one["simulator"].dropna()) == {"m1"} and (one["variant"] == "single").sum() == 16


def test_the_simulator_column_comes_from_the_stored_models():
    scores = pd.DataFrame({"session_id": ["s1", "s2", "s3"]})
    models = {"s1": {"ai": {"model": "x"}, "D": {"model": "local/m"}, "R": {"model": "local/m"}},
              "s2": {"ai": {"model": "x"}, "D": {"model": "local/m", "temperature": 1.2}},
              "s3": {"ai": {"model": "x"}}}
    sessions = pd.DataFrame({"session_id": list(models), "humans": ["D,R", "D", ""],
                             "models_json": [json.dumps(m) for m in models.values()]})
    labelled = with_simulators(scores, sessions)
    assert labelled["simulator"].tolist()[:2] == ["local/m", "local/m [temperature=1.2]"]
    assert pd.isna(labelled["simulator"].iloc[2]) and simulators(labelled) == ["local/m", "local/m [temperature=1.2]"]


def test_the_ablations_notebook_shows_the_simulator_effect_and_each_simulators_contrasts(tmp_path):
    import papermill

    from colabkit.analysis.realism.simulators import COLUMN

    path = tmp_path / "sweep.parquet"
    sweep().to_parquet(path)
    out = tmp_path / "analysis"
    notebooks = Path(__file__).resolve().parents[1] / "notebooks"
    papermill.execute_notebook(str(notebooks / "ablations.ipynb"), str(tmp_path / "run.ipynb"), cwd=str(notebooks),
                               kernel_name="python3", progress_bar=False,
                               parameters={"experiment": "", "results": str(tmp_path), "scores_file": str(path),
                                           "out": str(out)})
    effect = pd.read_csv(out / "simulator_effect.csv")
    perf = effect[effect["metric"] == "performance"]
    assert len(perf) == 12 and (perf["diff"] > 0.1).all() and set(perf[COLUMN]) == {"m2"}
    assert set(pd.read_csv(out / "contrasts_by_simulator.csv")[COLUMN]) == {"m1", "m2"}
    study = pd.read_csv(out / "study_table.csv")  # the study's tables: the first simulator only
    assert (study.loc[study["metric"] == "performance", "n"] == 16).all()


def test_simulator_failures_are_counted_per_variant_and_a_missing_label_is_not_false():
    scores = pd.DataFrame({"session_id": list("abcde"), "variant": ["default-dr"] * 3 + ["scaffolded-dr"] * 2,
                           "sim_failure": pd.array([True, False, None, None, True], dtype="boolean"),
                           "sim_failure_kind": ["wrong_fact", "none", None, None, "ended_or_blocked"]})
    table = simulator_failures(scores).set_index("variant")
    assert table.loc["default-dr", ["sessions", "labelled", "caused"]].tolist() == [3, 2, 1]
    assert table.loc["default-dr", "caused_share"] == 0.5 and table.loc["default-dr", "kinds"] == "wrong_fact 1"
    assert table.loc["scaffolded-dr", "labelled"] == 1 and table.loc["scaffolded-dr", "kinds"] == "ended_or_blocked 1"
    assert simulator_failures(scores.drop(columns=["sim_failure"])).empty
