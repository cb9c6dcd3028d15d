"""The study-wise error rate of the plan's procedure, held by simulation, and the simulated
power of the whole procedure against the closed form where one exists.

Small grids (10 tasks x 2 seeds) and a few hundred replicates keep this to seconds; the
benchmark (`benchmarks/procedure.py`) runs the study's size and more replicates."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from colabkit.analysis.inference.planning.plan import ALL_VARIANTS, analysis_plan
from colabkit.analysis.inference.power_analysis.simulate import (
    DataShape,
    familywise_error,
    paper_means,
    procedure_power,
    simulated_scores,
    tasks_for_power,
)

PLAN = analysis_plan(ALL_VARIANTS, planned_tasks=10, planned_seeds=2)
REPS = 400
GAUSSIAN = DataShape(kind="gaussian", scale=0.15 / 0.8)
BOUNDED = DataShape()


def null_means() -> dict[str, dict[str, float]]:
    """Every variant as Default-DR: every directional and two-sided null true."""
    base = paper_means(["default-dr"])["default-dr"]
    return {v: dict(base) for v in ALL_VARIANTS}


def structure_true() -> dict[str, dict[str, float]]:
    """Partially null: Scaffolded (and Dynamic, its copy) +0.15 on Performance, all else null."""
    means = null_means()
    for v in means:
        if v.startswith(("scaffolded", "dynamic")):
            means[v]["performance"] += 0.15
    return means


CONFIGURATIONS = {"null": null_means, "partially null": structure_true, "paper's effects": None}


def upper_bound(alpha: float, reps: int) -> float:
    """One-sided 99% Monte Carlo bound above alpha."""
    return alpha + 2.33 * math.sqrt(alpha * (1 - alpha) / reps)


@pytest.mark.parametrize("shape", [GAUSSIAN, BOUNDED], ids=["gaussian", "bounded"])
def test_the_study_wise_error_is_held_at_alpha(shape):
    for name, make in CONFIGURATIONS.items():
        means = make() if make else paper_means(ALL_VARIANTS)
        rate, se = familywise_error(PLAN, means, shape, reps=REPS, seed=11)
        assert rate <= upper_bound(PLAN.alpha, REPS), (name, rate, se)


def test_a_graph_spending_more_than_alpha_shows_the_excess(monkeypatch):
    """The simulation can see an error: every hypothesis tested alone at the full alpha
    (weights summing to 14, not 1, which `check_graph` refuses: what parallel gates amounted to)."""
    from colabkit.analysis.inference.power_analysis import simulate

    monkeypatch.setattr(simulate, "study_graph", lambda hypotheses, _: (np.ones(len(hypotheses)), None))
    monkeypatch.setattr(simulate, "graph_reject", lambda p, w, g, alpha: (p <= w * alpha, w))
    rate, _ = familywise_error(PLAN, null_means(), GAUSSIAN, reps=REPS, seed=3)
    assert rate > upper_bound(PLAN.alpha, REPS)


def test_the_simulated_power_of_one_hypothesis_is_the_noncentral_t():
    plan = analysis_plan(("default-dr", "scaffolded-dr"), planned_tasks=12, planned_seeds=2,
                         hypotheses=[{"name": "H", "a": "scaffolded-dr", "b": "default-dr", "weight": 1.0}])
    means = {"default-dr": {"performance": 0.5}, "scaffolded-dr": {"performance": 0.62}}
    reps = 2000
    power = procedure_power(plan, means, GAUSSIAN, reps=reps, seed=5)
    observed = float(power["p_declared"].iloc[0])
    sds = [s * GAUSSIAN.scale for s in (GAUSSIAN.interaction_sd, GAUSSIAN.noise_sd)]
    sd_task_means = math.sqrt(2 * sds[0] ** 2 + 2 * sds[1] ** 2 / 2)
    ncp = 0.12 / sd_task_means * math.sqrt(12)
    expected = float(scipy_stats.nct.sf(scipy_stats.t.isf(0.025, 11), 11, ncp))  # declared in its direction
    assert 0.3 < expected < 0.9  # a size where the check can fail either way
    assert observed == pytest.approx(expected, abs=3 * math.sqrt(expected * (1 - expected) / reps))


def test_tasks_needed_says_where_the_archaeology_tasks_run_out():
    plan = analysis_plan(("default-dr", "scaffolded-dr"), planned_seeds=3,
                         hypotheses=[{"name": "big", "a": "scaffolded-dr", "b": "default-dr", "weight": 0.5},
                                     {"name": "small", "a": "scaffolded-dr", "b": "default-dr", "metric": "hms",
                                      "weight": 0.5}])
    means = {"default-dr": {"performance": 0.5, "hms": 0.5}, "scaffolded-dr": {"performance": 0.6, "hms": 0.54}}
    table = tasks_for_power(plan, means, GAUSSIAN, reps=150, grid=(10, 38, 76, 528)).set_index("hypothesis")
    assert table.loc["big", "tasks_needed"] <= 38 and not table.loc["big", "beyond_archaeology"]
    assert table.loc["small", "tasks_needed"] > 38 and table.loc["small", "beyond_archaeology"]


def test_the_graph_search_keeps_the_first_graph_unless_beaten_and_its_choice_is_the_default():
    from colabkit.analysis.inference.planning.hypotheses import PAPER_HYPOTHESES
    from colabkit.analysis.inference.power_analysis.graph_search import (
        FIRST_WRITTEN,
        SEARCHED,
        candidate_graphs,
        search_graph,
    )

    graphs = candidate_graphs()
    assert graphs[SEARCHED] == PAPER_HYPOTHESES  # the default plan's graph is the search's choice
    for name, graph in graphs.items():  # every claim reachable: an initial share or an edge into it
        reached = {h.name for h in graph if h.weight > 0} | {k for h in graph for k, v in h.then.items() if v > 0}
        assert reached == {h.name for h in graph}, name
    few = {FIRST_WRITTEN: graphs[FIRST_WRITTEN], "same again": graphs[FIRST_WRITTEN], SEARCHED: graphs[SEARCHED]}
    table = search_graph(ALL_VARIANTS, few, FIRST_WRITTEN, reps=300, seed=2).set_index("graph")
    true_claims = [h.name for h in PAPER_HYPOTHESES if h.name not in ("H3.preassigned", "H5.dynamic")]
    assert np.allclose(table["objective"], table[true_claims].sum(axis=1))  # null claims never count
    assert table.loc["same again", "vs_current"] == 0 and not table.loc["same again", "chosen"]
    assert table.loc[SEARCHED, "chosen"] and table["chosen"].sum() == 1
    assert table.loc[SEARCHED, "vs_current"] > 2 * table.loc[SEARCHED, "vs_current_se"] > 0
    alone = search_graph(ALL_VARIANTS, {FIRST_WRITTEN: graphs[FIRST_WRITTEN], "same again": graphs[FIRST_WRITTEN]},
                         FIRST_WRITTEN, reps=100, seed=2)
    assert alone.set_index("graph").loc[FIRST_WRITTEN, "chosen"]  # no candidate beats it: it stays


def test_the_study_wise_error_is_held_with_sessions_missing_at_random_on_every_shape():
    from colabkit.analysis.inference.power_analysis.simulate import BOUNDED_SHAPES

    for shape in BOUNDED_SHAPES.values():
        rate, se = familywise_error(PLAN, null_means(), shape, reps=REPS, seed=12, missing=0.1)
        assert rate <= upper_bound(PLAN.alpha, REPS), (shape, rate, se)


def test_the_simulation_and_the_decision_test_use_every_available_pair_alike():
    """One grid with sessions missing at random: the p the simulation gives each claim is the
    p the study's decision table computes on the same sessions (no listwise loss of a task-seed
    in either), and a pooled claim keeps the pairs of the compositions that have them."""
    from colabkit.analysis.inference.decisions.decide import study_decisions
    from colabkit.analysis.inference.planning.hypotheses import hypothesis_contrasts
    from colabkit.analysis.inference.power_analysis.simulate import _differences, _test_p, contrast_estimate

    plan = analysis_plan(ALL_VARIANTS, planned_tasks=12, planned_seeds=3, metrics=["performance"])
    scores = simulated_scores(plan, seed=4, missing=0.1)
    decided = study_decisions(scores, plan).set_index("hypothesis")
    grid = {v: scores[scores["variant"] == v].sort_values(["task_id", "seed"])["performance"].to_numpy()
            .reshape(1, 12, 3) for v in plan.variants}
    for h in plan.hypotheses:
        if h.metric != "performance" or h.name == "H5.dynamic":
            continue
        ps = [_test_p(h, *contrast_estimate(_differences(grid, c)))[0] for c in hypothesis_contrasts(h, plan.variants)]
        assert max(ps) == pytest.approx(decided.loc[h.name, "p_test"], rel=1e-9), h.name
    pooled = decided.loc["H2.pooled"]
    complete = scores.pivot_table(index=["task_id", "seed"], columns="variant", values="performance")
    listwise = complete[[f"{s}-{c}" for s in ("scaffolded", "default") for c in ("d", "r", "dr")]].dropna()
    assert pooled["n_pairs"] > 3 * len(listwise)  # every composition's own pairs, not the complete task-seeds


def test_the_pilot_recovers_known_variance_components_from_simulated_sessions():
    from colabkit.analysis.inference.power_analysis.pilot import pilot_shape, variance_components

    plan = analysis_plan(ALL_VARIANTS, planned_tasks=80, planned_seeds=3, metrics=["performance", "w_total"])
    known = DataShape(kind="gaussian", scale=1.0, task_sd=0.3, interaction_sd=0.1, noise_sd=0.2,
                      count_sds=(2.0, 0.5, 2.0))
    scores = simulated_scores(plan, shape=known, seed=3, missing=0.05)
    found = variance_components(scores, "performance")
    assert found["task_sd"] == pytest.approx(0.3, rel=0.2) and found["noise_sd"] == pytest.approx(0.2, rel=0.05)
    assert found["interaction_sd"] == pytest.approx(0.1, rel=0.25)
    shape = pilot_shape(scores)
    assert shape.kind == "gaussian" and shape.scale == 1.0 and shape.count_sds[2] == pytest.approx(2.0, rel=0.1)
    assert shape.count_sds[1] == pytest.approx(0.5, rel=0.3)


def test_plan_analysis_pilot_prints_the_components_and_plans_power_on_them(tmp_path, capsys):
    from colabkit.cli import main

    plan = analysis_plan(ALL_VARIANTS, planned_tasks=20, planned_seeds=2, metrics=["performance", "w_total"])
    pilot = tmp_path / "pilot.csv"
    simulated_scores(plan, seed=5).to_csv(pilot, index=False)
    config = tmp_path / "exp.yaml"
    config.write_text("name: tiny\ntasks: {data_root: null, ids: [demo_archaeology/0/0]}\n"
                      "variants: [default-dr, scaffolded-dr]\nseeds: [0]\nresults: out\n")
    assert main(["plan-analysis", str(config), "--power-reps", "20", "--pilot", str(pilot)]) == 0
    out = capsys.readouterr().out
    assert "pilot performance: task SD" in out and "pilot w_total" in out and "pilot's variance components" in out
    assert main(["plan-analysis", str(config), "--pilot", str(tmp_path / "none")]) == 2
