"""The role-level skill model on simulated grids whose skills are known by construction."""

import json

import numpy as np
import pandas as pd
import pytest

from colabkit.analysis.skill import fit_skills, graph_components, skill_frame
from colabkit.errors import ColabkitError

AI_SKILL = {"model-a": 0.30, "model-b": 0.0, "model-c": -0.30}
HUMAN_SKILL = {"D:m1": 0.40, "D:m2": 0.10, "R:m1": -0.10, "R:m2": -0.40}
STRUCTURE = {"default": 0.0, "memory": 0.1}


def simulate(pairs, *, tasks=8, seeds=3, noise=0.05, seed=0):
    """Sessions of every (AI, humans) pair in `pairs` on every task, structure and seed."""
    rng = np.random.default_rng(seed)
    task_effect = {f"t{k}": rng.normal(0, 0.2) for k in range(tasks)}
    rows = []
    for (ai, humans), task, structure, _ in ((p, t, s, k) for p in pairs for t in task_effect for s in STRUCTURE
                                             for k in range(seeds)):
        y = task_effect[task] + AI_SKILL[ai] + sum(HUMAN_SKILL[h] for h in humans) + STRUCTURE[structure]
        rows.append({"outcome": y + rng.normal(0, noise), "task_id": task, "structure": structure, "ai": ai,
                     "humans": tuple(humans)})
    return pd.DataFrame(rows)


def connected_pairs():
    """Every AI model plays with several seats, so the graph of who played with whom is connected."""
    return [("model-a", ("D:m1",)), ("model-a", ("R:m2",)), ("model-b", ("D:m2", "R:m1")),
            ("model-b", ("D:m1",)), ("model-c", ("R:m2", "D:m2")), ("model-c", ("R:m1",)),
            ("model-a", ("D:m2",)), ("model-b", ("R:m2",)), ("model-c", ("D:m1", "R:m1"))]


def test_the_ordering_of_known_skills_is_recovered_on_a_connected_grid():
    fit = fit_skills(simulate(connected_pairs()))
    table = fit.table
    assert fit.separable and table["identifiable"].all()
    assert set(table["component"]) == {0}
    for kind, truth in (("ai", AI_SKILL), ("human", HUMAN_SKILL)):
        rows = table[table["kind"] == kind].sort_values("rank")
        assert list(rows["entity"]) == sorted(truth, key=truth.get, reverse=True)
        centred = {e: s - np.mean(list(truth.values())) for e, s in truth.items()}
        assert rows.set_index("entity")["skill"].to_dict() == pytest.approx(centred, abs=0.08)
        assert (rows["conservative"] == rows["skill"] - 3 * rows["sd"]).all()
    assert fit.noise_sd <= 0.1  # the grid's evidence picks a small noise for small noise


def test_a_disconnected_design_is_reported_as_not_separable_not_as_numbers():
    pairs = [("model-a", ("D:m1",)), ("model-a", ("R:m1",)), ("model-b", ("D:m2",)), ("model-b", ("R:m2",))]
    fit = fit_skills(simulate(pairs))
    table = fit.table.set_index("entity")
    assert not fit.separable
    assert table.loc["model-a", "component"] != table.loc["model-b", "component"]
    ais = table[table["kind"] == "ai"]
    assert not ais["identifiable"].any() and ais["skill"].isna().all() and ais["rank"].isna().all()
    assert ais["note"].str.startswith("not separable").all()
    humans = table[table["kind"] == "human"]
    assert humans["comparable_class"].nunique() == 2  # within each component the two seats still compare
    assert humans["identifiable"].all()
    assert table.loc["D:m1", "comparable_class"] == table.loc["R:m1", "comparable_class"]


def test_single_agent_sessions_on_shared_tasks_compare_ai_models_the_graph_alone_would_not():
    pairs = [("model-a", ()), ("model-b", ()), ("model-c", ())]
    fit = fit_skills(simulate(pairs))
    assert fit.table["component"].nunique() == 3 and fit.separable
    assert list(fit.table.sort_values("rank")["entity"]) == ["model-a", "model-b", "model-c"]


def test_one_model_alone_has_no_identifiable_skill_and_too_few_sessions_fail():
    fit = fit_skills(simulate([("model-a", ("D:m1",)), ("model-a", ("R:m2",))]))
    row = fit.table.set_index("entity").loc["model-a"]
    assert not row["identifiable"] and row["note"] == "the only one of its kind"
    with pytest.raises(ColabkitError, match="at least 2 sessions"):
        fit_skills(simulate(connected_pairs()).iloc[:1])


def test_graph_components_of_who_played_with_whom():
    found = graph_components([("a", ["h1"]), ("b", ["h1", "h2"]), ("c", ["h3"]), ("d", [])])
    assert found["ai:a"] == found["ai:b"] == found["human:h2"] != found["ai:c"]
    assert len(set(found.values())) == 3


def test_skill_frame_names_a_seat_by_persona_and_model_or_by_the_person_in_it():
    scores = pd.DataFrame({"session_id": ["s1", "s2"], "task_id": ["t1", "t1"], "structure": ["default"] * 2,
                           "performance": [0.5, 0.7]})
    models = {"ai": {"model": "gpt"}, "D": {"model": "claude"}, "R": {"model": "person/R"}}
    sessions = pd.DataFrame({"session_id": ["s1", "s2"], "model": ["gpt", "gpt"], "humans": ["D,R", ""],
                             "models_json": [json.dumps(models)] * 2})
    frame = skill_frame(scores, sessions, "performance", people={"s1": {"R": "alice"}})
    assert frame["humans"].tolist() == [("D:claude", "alice"), ()]
    assert frame["ai"].tolist() == ["gpt", "gpt"]


def test_a_connected_graph_can_still_leave_a_seat_inseparable_and_the_rank_test_says_so():
    # D:m2 only ever sits beside a second human, in two cells too few to tell it from the others
    pairs = [("model-a", ("D:m1",)), ("model-a", ("R:m2",)), ("model-b", ("D:m2", "R:m1")),
             ("model-b", ("D:m1",)), ("model-c", ("R:m2", "D:m2")), ("model-c", ("R:m1",))]
    fit = fit_skills(simulate(pairs))
    table = fit.table.set_index("entity")
    assert set(table["component"]) == {0} and not fit.separable
    assert not table.loc["D:m2", "identifiable"] and pd.isna(table.loc["D:m2", "skill"])


def test_the_evidence_in_parameter_space_equals_the_direct_gaussian_density():
    from scipy.stats import multivariate_normal

    from colabkit.analysis.skill import _log_evidence

    rng = np.random.default_rng(1)
    x = rng.integers(0, 2, size=(12, 5)).astype(float)
    y = rng.normal(size=12)
    prior = np.array([100.0, 1.0, 1.0, 0.04, 0.04])
    direct = multivariate_normal(np.zeros(12), (x * prior) @ x.T + 0.3**2 * np.eye(12)).logpdf(y)
    assert _log_evidence(x, y, prior, 0.3) == pytest.approx(direct, rel=1e-9)
