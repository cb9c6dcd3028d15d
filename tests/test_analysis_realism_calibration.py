"""Calibration and the scale: the classifier finds a difference put there by construction, and
nothing where there is none; cards place themselves by their interval."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from colabkit.analysis.realism.calibration import ScalePoint, calibrate, task_matched
from colabkit.analysis.realism.card import person_cards
from colabkit.analysis.realism.compare import ClassifierTest
from colabkit.analysis.realism.scale import AS_FAR, BETWEEN, NOT_PLACED, WITHIN, load_calibration, place
from colabkit.errors import ColabkitError

FEATS = ("n_steps", "msg_chars_mean", "question_share")
TASKS = ("travel", "gifts", "recipes", "skills")


def corpus(rng: np.random.Generator, *, users: int, per_user: int, kind: str, longer: float = 0.0) -> pd.DataFrame:
    """Conversations of `users` users over the tasks; each user has a habit of their own, and
    `longer` moves `msg_chars_mean` (the difference put there by construction)."""
    rows = []
    for u in range(users):
        habit = rng.normal(0, 3)
        for i in range(per_user):
            rows.append({"user_id": f"{kind}/{u}", "kind": kind, "task_id": TASKS[(u + i) % 4],
                         "n_steps": rng.poisson(4) + 1, "msg_chars_mean": rng.normal(40 + habit, 10) + longer,
                         "question_share": rng.beta(2, 6)})
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("longer", "signal"), [(60.0, "apart"), (0.0, "alike")])
def test_the_classifier_tells_apart_what_differs_by_construction_and_only_that(longer, signal):
    rng = np.random.default_rng(7)
    prints = pd.concat([corpus(rng, users=40, per_user=5, kind="person"),
                        corpus(rng, users=25, per_user=8, kind="simulated", longer=longer)], ignore_index=True)
    table, points = calibrate(prints, FEATS, repeats=3, draws=200)
    table = table.set_index("feature")
    floor = points["floor"]
    assert abs(floor.auc - 0.5) < 0.15 and floor.auc_high < 0.65  # two halves of people: nothing to find
    assert abs(table.loc["question_share", "auc"] - 0.5) < 0.12  # never moved
    if signal == "apart":
        assert points["signal"].auc > 0.95 and points["signal"].auc_low > 0.9
        assert table.loc["msg_chars_mean", "auc_low"] > 0.9
        assert table.loc["msg_chars_mean", "signal_g"] > 5 * table.loc["msg_chars_mean", "floor_g"]
        assert points["signal"].chamfer_ratio > floor.chamfer_ratio
    else:
        assert abs(points["signal"].auc - 0.5) < 0.15 and points["signal"].auc_low < 0.5
        assert table.loc["msg_chars_mean", "signal_g"] < 0.4


def test_simulated_rows_are_drawn_in_the_peoples_task_proportions():
    rng = np.random.default_rng(8)
    people = corpus(rng, users=12, per_user=5, kind="person")
    people = pd.concat([people, people[people["task_id"] == "travel"]])  # travel twice as common
    sims = corpus(rng, users=40, per_user=5, kind="simulated")
    drawn = task_matched(people, sims).value_counts("task_id")
    want = people.value_counts("task_id")
    assert np.allclose(drawn / drawn.sum(), (want / want.sum())[drawn.index], atol=0.02)


def test_the_shipped_points_carry_their_provenance_and_a_bad_file_is_one_line(tmp_path):
    points = load_calibration()
    assert points.corpus.licence == "Apache-2.0" and len(points.commit) == 40
    assert points.floor.auc_high < points.signal.auc_low  # the scale has two distinct ends
    assert set(points.per_feature) == set(points.features) and "msg_chars_mean" in points.features
    assert points.n_people > 2000 and points.n_simulated > 1000 and points.not_covered
    bad = tmp_path / "points.json"
    bad.write_text(json.dumps({"schema_version": 1}))
    with pytest.raises(ColabkitError, match=r"points.json: not a calibration file") as err:
        load_calibration(bad)
    assert "\n" not in str(err.value)
    with pytest.raises(ColabkitError, match=r"nowhere.json: no such calibration file"):
        load_calibration(tmp_path / "nowhere.json")


def _test(low: float, high: float) -> ClassifierTest:
    return ClassifierTest((low + high) / 2, np.nan, 20, 20, 6, features=("msg_chars_mean",), auc_low=low,
                          auc_high=high)


@pytest.mark.parametrize(("low", "high", "label"), [(0.40, 0.55, WITHIN), (0.62, 0.80, BETWEEN),
                                                     (0.93, 1.00, AS_FAR), (0.45, 0.95, NOT_PLACED)])
def test_a_card_is_placed_by_its_interval(low, high, label):
    points = load_calibration().model_copy(update={
        "floor": ScalePoint(auc=0.5, auc_low=0.45, auc_high=0.56, chamfer=1, chamfer_ratio=1),
        "signal": ScalePoint(auc=0.95, auc_low=0.92, auc_high=0.98, chamfer=3, chamfer_ratio=4)})
    placed = place(_test(low, high), points, ("msg_chars_mean", "share_cell"))
    assert placed.label == label and f"[{low:.2f}, {high:.2f}]" in placed.sentence
    assert any("share_cell" in line for line in placed.not_covered)  # the card's uncalibrated feature is named


def test_a_person_card_reads_on_the_shipped_scale():
    rng = np.random.default_rng(9)
    people = corpus(rng, users=12, per_user=2, kind="person").assign(kind="person", simulator="person")
    sims = corpus(rng, users=12, per_user=2, kind="simulated", longer=200.0).assign(simulator="local/x")
    prints = pd.concat([people, sims]).assign(participant="R", variant="default-r")
    (card,) = person_cards(prints, FEATS, permutations=9)
    summary = card.summary()
    assert summary["scale"] == AS_FAR and summary["scale_auc_low"] > 0.9
    row = card.table.set_index("feature").loc["msg_chars_mean"]
    assert row["scale"] == "as far as LLM users" and row["signal_g"] > row["floor_g"]
    assert card.scale_figure().axes and "calibrated features" in card.scale.sentence
    (plain,) = person_cards(prints, FEATS, permutations=9, calibration=None)
    assert plain.scale is None and "scale" not in plain.table.columns


def test_without_permutations_the_p_value_is_missing_not_one():
    from colabkit.analysis.realism import classifier_test

    rng = np.random.default_rng(10)
    a, b = corpus(rng, users=10, per_user=2, kind="person"), corpus(rng, users=10, per_user=2, kind="simulated")
    test = classifier_test(a, b, FEATS, group="user_id", permutations=0, draws=50)
    assert np.isnan(test.p_value) and test.auc_low <= test.auc <= test.auc_high


def test_a_feature_is_placed_by_its_interval_too():
    from colabkit.analysis.realism.scale import feature_scale

    points = load_calibration()
    floor, signal = points.per_feature["msg_chars_mean"].floor_g, points.per_feature["msg_chars_mean"].signal_g
    cis = [(-floor / 2, floor / 2), (2 * floor, signal / 2), (signal * 1.2, signal * 2), (-signal * 2, -signal * 1.1),
           (-floor / 2, signal * 2)]
    table = pd.DataFrame({"feature": ["msg_chars_mean"] * 5 + ["share_cell"],
                          "g": [(lo + hi) / 2 for lo, hi in cis] + [1.0],
                          "ci_low": [lo for lo, _ in cis] + [0.0], "ci_high": [hi for _, hi in cis] + [2.0]})
    assert feature_scale(table, points)["scale"].tolist() == [
        "within floor", "between", "as far as LLM users", "as far as LLM users", "not placed", ""]
