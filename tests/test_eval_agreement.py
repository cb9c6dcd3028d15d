"""The judge's agreement with itself, pooled per question over sessions with a task (cluster) bootstrap."""

from __future__ import annotations

import numpy as np
import pandas as pd

from colabkit.evaluation import pooled_agreement


def judgements(labels_by_session: dict[str, list[list[str]]], metric: str = "s_hyp") -> pd.DataFrame:
    """A judgements table: per session, items each answered once per repeat."""
    rows = [{"session_id": sid, "scorer": "s_hyp@1", "metric": metric, "item": f"claim:{i}", "repeat": r,
             "label": label, "score": np.nan}
            for sid, items in labels_by_session.items() for i, answers in enumerate(items)
            for r, label in enumerate(answers)]
    return pd.DataFrame(rows)


def test_sessions_with_one_label_each_still_give_a_pooled_kappa_with_an_interval():
    # Every session's items share one label (a per-session kappa is undefined), but the pooled
    # table has both labels, and the repeats always agree: kappa 1, raw agreement 1.
    table = judgements({f"s{k}": [["supported"] * 3] * 4 if k % 2 else [["unsupported"] * 3] * 4 for k in range(8)})
    row = pooled_agreement(table, n_boot=200).set_index("question").loc["s_hyp/claim"]
    assert row["sessions"] == 8 and row["items"] == 32
    assert row["kappa"] == 1.0 and row["raw_agreement"] == 1.0
    assert row["kappa_ci_low"] is not None and row["kappa_ci_low"] <= 1.0 <= row["kappa_ci_high"]
    assert row["category_shares"] == "supported: 0.50; unsupported: 0.50"


def test_random_labels_give_a_kappa_near_zero_whose_interval_covers_it():
    rng = np.random.default_rng(3)
    table = judgements({f"s{k}": [list(rng.choice(["yes", "no"], size=3)) for _ in range(10)] for k in range(30)})
    row = pooled_agreement(table, n_boot=300).iloc[0]
    assert abs(row["kappa"]) < 0.15
    assert row["kappa_ci_low"] < 0 < row["kappa_ci_high"] and row["kappa_ci_high"] - row["kappa_ci_low"] < 0.4
    assert 0.1 < row["raw_agreement"] < 0.4  # all three repeats agree by chance a quarter of the time


def test_the_interval_resamples_sessions_not_items():
    # Two sessions: one always agrees, one never does. Resampling sessions moves kappa a lot;
    # resampling the 40 items would not (a narrow interval would be a sign of item resampling).
    table = judgements({"a": [["x", "x"], ["y", "y"]] * 10, "b": [["x", "y"], ["y", "x"]] * 10})
    row = pooled_agreement(table, n_boot=400).iloc[0]
    assert row["kappa_ci_high"] - row["kappa_ci_low"] > 1.0


def test_one_repeat_or_no_labels_give_no_rows():
    assert pooled_agreement(judgements({"a": [["x"], ["y"]]})).empty
    assert list(pooled_agreement(pd.DataFrame()).columns)[:3] == ["question", "sessions", "items"]


def test_the_interval_resamples_tasks_when_sessions_share_one():
    # Twenty sessions on two tasks: task t1's sessions always agree, t2's never do. Resampling
    # the two tasks moves kappa a lot; resampling the twenty sessions, as if independent, would
    # not (a narrow interval: the session bootstrap's understatement).
    agree, disagree = [["x", "x"], ["y", "y"]], [["x", "y"], ["y", "x"]]
    table = judgements({f"s{k}": agree if k < 10 else disagree for k in range(20)})
    table["task_id"] = np.where(table["session_id"].str[1:].astype(int) < 10, "t1", "t2")
    by_task = pooled_agreement(table, n_boot=400).iloc[0]
    by_session = pooled_agreement(table.drop(columns="task_id"), n_boot=400).iloc[0]
    assert by_task["tasks"] == 2 and by_task["sessions"] == 20 and by_session["tasks"] == 20
    assert (by_task["kappa_ci_high"] - by_task["kappa_ci_low"]) > 2 * (by_session["kappa_ci_high"]
                                                                       - by_session["kappa_ci_low"])
