"""Sim-vs-person comparison on constructed fingerprints: the tests find what was put there."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from colabkit.analysis.realism import (
    FEATURES,
    card_summary,
    chamfer_coverage,
    classifier_test,
    person_cards,
    standardised_differences,
)

FEATS = ("share_message", "msg_words_mean", "question_share")


def sample(n_tasks: int, per_task: int, rng: np.random.Generator, *, shift: float = 0.0) -> pd.DataFrame:
    """Rows over `n_tasks` tasks, each task its own offset; `shift` moves msg_words_mean."""
    rows = []
    for t in range(n_tasks):
        offset = rng.normal(0, 0.5)
        for _ in range(per_task):
            rows.append({"task_id": f"t{t}", "share_message": rng.normal(0.4 + offset / 10, 0.1),
                         "msg_words_mean": rng.normal(20 + offset, 3) + shift,
                         "question_share": rng.normal(0.2, 0.05)})
    return pd.DataFrame(rows)


def test_same_distribution_gives_auc_near_half_and_a_large_p():
    rng = np.random.default_rng(1)
    a, b = sample(12, 4, rng), sample(12, 4, rng)
    test = classifier_test(a, b, FEATS, permutations=99)
    assert abs(test.auc - 0.5) < 0.15 and test.p_value > 0.1 and test.conclusive


def test_a_known_difference_gives_auc_near_one_and_a_small_p():
    rng = np.random.default_rng(2)
    a, b = sample(12, 4, rng), sample(12, 4, rng, shift=15.0)
    test = classifier_test(a, b, FEATS, permutations=99)
    assert test.auc > 0.95 and test.p_value <= 0.02
    table = standardised_differences(a, b, FEATS).set_index("feature")
    assert table.loc["msg_words_mean", "ci_low"] > 2  # the shifted feature, far from zero
    assert table.loc["question_share", "ci_low"] < 0 < table.loc["question_share", "ci_high"]


def test_grouped_folds_never_split_a_task():
    rng = np.random.default_rng(3)
    a, b = sample(7, 3, rng), sample(7, 3, rng, shift=1.0)
    test = classifier_test(a, b, FEATS, permutations=5)
    assert len(test.folds) == 5
    for train, held_out in test.folds:
        assert not train & held_out
    assert set().union(*(held for _, held in test.folds)) == {f"t{i}" for i in range(7)}


def test_few_rows_give_intervals_not_verdicts():
    rng = np.random.default_rng(4)
    a, b = sample(1, 1, rng), sample(3, 3, rng)
    test = classifier_test(a, b, FEATS, permutations=5)
    assert not test.conclusive and "too few" in test.note
    table = standardised_differences(a, b, FEATS)  # one person: Glass's delta, a wide interval
    assert (table["ci_high"] - table["ci_low"] > 3).all()
    prints = pd.concat([a.assign(kind="person", simulator="person"), b.assign(kind="simulated", simulator="m")])
    prints = prints.assign(participant="D", variant="default-d", task_id="t0")
    cards = person_cards(prints, FEATS, permutations=5)
    assert card_summary(cards)["verdict"].tolist() == ["intervals only"]


def test_chamfer_is_small_for_one_distribution_and_grows_with_a_gap():
    rng = np.random.default_rng(5)
    a, same, far = sample(6, 4, rng), sample(6, 4, rng), sample(6, 4, rng, shift=30.0)
    near, away = chamfer_coverage(a, same, FEATS), chamfer_coverage(a, far, FEATS)
    assert near["a_to_b_ratio"] < 2 and away["a_to_b_ratio"] > 3 * near["a_to_b_ratio"]
    assert away["chamfer"] > near["chamfer"]


def test_every_feature_is_documented():
    from colabkit.analysis.realism import FEATURE_DOCS

    assert tuple(FEATURE_DOCS) == FEATURES and all(len(doc) > 20 for doc in FEATURE_DOCS.values())


@pytest.mark.parametrize(("shift", "verdict"), [(0.0, "not distinguished"), (15.0, "distinguishable")])
def test_a_card_renders_a_figure_and_a_verdict(shift, verdict):
    rng = np.random.default_rng(6)
    people = sample(6, 2, rng).assign(kind="person", simulator="person")
    sims = sample(6, 2, rng, shift=shift).assign(kind="simulated", simulator="local/x")
    prints = pd.concat([people, sims]).assign(participant="R", variant="default-r")
    (card,) = person_cards(prints, FEATS, permutations=39)
    assert card.figure().axes and card.summary()["n_a"] == 12 and card.verdict == verdict


def event_table(rows: list[tuple]) -> pd.DataFrame:
    """Task-phase events from (round, participant, action, status, args, extra fields)."""
    import json

    out = []
    for seq, (rnd, who, action, status, args, extra) in enumerate(rows):
        out.append({"seq": seq, "phase": "task", "round": rnd, "participant": who, "action": action,
                    "status": status, "args_json": json.dumps(args), "signatory": None, "decision": None,
                    "decision_reason": None, **extra})
    return pd.DataFrame(out)


def test_seat_features_count_replies_disclosure_failures_and_decisions():
    from colabkit.analysis.realism.fingerprints import seat_features

    briefings = {"D": "Query: axes\nColumn hoard_century gives the century of deposition", "R": "Query: axes",
                 "ai": "Query: axes"}
    events = event_table([
        (1, "ai", "execute_code", "error", {"code": "1/0"}, {}),
        (1, "D", "wait", "ok", {}, {}),  # a wait after the failed cell: not engaging
        (2, "ai", "send_message", "ok", {"text": "D, which column?", "to": ["D"]}, {}),
        (2, "D", "send_message", "ok", {"text": "hoard_century has the century of deposition", "to": None}, {}),
        (3, "ai", "edit_result", "pending", {"text": "H"}, {"signatory": "D"}),
        (3, "R", "send_message", "ok", {"text": "Is it?", "to": ["ai"]}, {}),
        (4, "D", "send_message", "ok", {"text": "Yes?", "to": None}, {}),  # R's message was not to D
        (4, "D", "approve", "approved", {}, {"decision": "approved", "decision_reason": "counts match"}),
    ])
    row = seat_features(events, "D", briefings)
    assert row["n_steps"] == 4 and row["share_message"] == 0.5 and row["share_wait"] == 0.25
    assert row["reply_share"] == 0.5 and row["question_share"] == 0.5
    assert row["disclosure_share"] == 1.0 and row["disclosure_when"] == 0.5  # round 2 of 4
    assert row["failure_reaction"] == 0.0
    assert row["decision_rate"] == 1.0 and row["approval_share"] == 1.0 and row["reason_words"] == 2
    assert row["steps_to_first_act"] == 1
    assert np.isnan(seat_features(events, "R", briefings)["decision_rate"])  # never asked: missing, not 0


def test_fingerprints_name_who_played_each_seat_and_join_the_judged_process_metrics():
    import json

    from colabkit.analysis.realism import fingerprints

    events = event_table([(1, "D", "send_message", "ok", {"text": "hi", "to": None}, {}),
                          (1, "R", "wait", "ok", {}, {})]).assign(session_id="s1", actor_kind="model")
    events.loc[0, "actor_kind"] = "person"
    models = {"ai": {"model": "x"}, "D": {"model": "person/p-1"}, "R": {"model": "local/m", "temperature": 1.0}}
    sessions = pd.DataFrame({"session_id": ["s1"], "task_id": ["t"], "variant": ["default-dr"], "seed": [0],
                             "briefings_json": ["{}"], "models_json": [json.dumps(models)]})
    scores = pd.DataFrame({"session_id": ["s1"], "h_init_norm": [0.4], "a_profile": [0.5]})
    prints = fingerprints(events, sessions, scores).set_index("participant")
    assert prints.loc["D", "kind"] == "person" and prints.loc["R", "simulator"] == "local/m [temperature=1.0]"
    assert (prints["h_init_norm"] == 0.4).all() and prints.loc["D", "structure"] == "default"
