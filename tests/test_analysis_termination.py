"""The two session-end rules side by side: pairs by (variant, task, seed), by hand."""

from __future__ import annotations

import math

import pandas as pd
from helpers.score_tables import score_table

from colabkit.analysis import by_termination, termination_contrast, termination_rules


def both_rules(shift: float = 0.1) -> pd.DataFrame:
    either = score_table(n_tasks=4, seeds=2).assign(termination="either_side")
    other = either.assign(termination="all_sides", session_id=either["session_id"] + "-all",
                          hms=either["hms"] - shift)
    return pd.concat([either, other], ignore_index=True)


def test_the_contrast_is_all_sides_minus_either_side_on_the_same_task_and_seed():
    scores = both_rules()
    assert termination_rules(scores) == ["either_side", "all_sides"]
    table = termination_contrast(scores, metrics=["hms", "performance"])
    assert len(table) == 13 * 2 and (table["n_pairs"] == 8).all()
    hms = table[table["metric"] == "hms"]
    assert all(math.isclose(d, -0.1, abs_tol=1e-9) for d in hms["diff"])
    single = hms[hms["variant"] == "single"].iloc[0]
    mean = scores.loc[(scores["variant"] == "single") & (scores["termination"] == "either_side"), "hms"].mean()
    assert math.isclose(single["mean_either_side"], mean) and math.isclose(single["mean_all_sides"], mean - 0.1)
    perf = table[table["metric"] == "performance"]
    assert (perf["diff"] == 0).all() and (perf["p_unadjusted"] == 1).all()  # no spread, no shift: p = 1
    assert (table["n_tasks"] == 4).all()  # tested at the task level: 4 tasks, 8 pairs


def test_the_studys_tables_take_one_rule_and_a_one_rule_table_is_left_alone():
    scores = both_rules()
    assert set(by_termination(scores)["termination"]) == {"either_side"}
    assert set(by_termination(scores, "all_sides")["termination"]) == {"all_sides"}
    one = score_table(n_tasks=2, seeds=1)
    assert termination_rules(one) == [] and by_termination(one) is one
    assert termination_contrast(one).empty
