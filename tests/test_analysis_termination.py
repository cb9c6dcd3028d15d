"""The session-end rules side by side: pairs by (variant, task, seed), by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from helpers.score_tables import score_table

from colabkit.analysis import (
    DECOMPOSITION,
    analysis_plan,
    by_termination,
    termination_contrast,
    termination_interaction,
    termination_rules,
)


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
    assert math.isclose(single["mean_baseline"], mean) and math.isclose(single["mean_rule"], mean - 0.1)
    assert (table["baseline"] == "either_side").all() and (table["rule"] == "all_sides").all()
    assert table["adjustment"].str.contains("not a decision of the plan").all()  # a description, said so
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


def both_rules_shifting(shift: float) -> pd.DataFrame:
    """Both rules; under all_sides every scaffolded session gains `shift` (+ noise), default none."""
    either = score_table(n_tasks=8, seeds=2).assign(termination="either_side")
    noise = np.random.default_rng(3).normal(0, 0.01, len(either))
    gain = np.where(either["structure"] == "scaffolded", shift, 0.0) + noise
    other = either.assign(termination="all_sides", session_id=either["session_id"] + "-all",
                          performance=either["performance"] + gain)
    return pd.concat([either, other], ignore_index=True)


def test_the_interaction_is_the_change_of_the_contrast_between_rules_tested_for_equivalence():
    plan = analysis_plan(metrics=["performance"], equivalence_margin_sd=1.5)  # 8 tasks: a wide margin
    same = termination_interaction(both_rules_shifting(0.0), DECOMPOSITION[:1], plan=plan)
    assert len(same) == 3 and same["equivalent"].all() and (same["verdict"] == "equivalent").all()
    assert (same["margin_sd"] == 1.5).all() and (same["tost_power"] > 0.8).all()
    assert ((same["ci90_low"] > -same["margin"]) & (same["ci90_high"] < same["margin"])).all()
    # the default margin (0.5 SD) cannot be met on 8 tasks: inconclusive, never "no difference"
    small = termination_interaction(both_rules_shifting(0.0), DECOMPOSITION[:1],
                                    plan=analysis_plan(metrics=["performance"]))
    assert not small["equivalent"].any() and small["verdict"].str.startswith("inconclusive").all()
    moved = termination_interaction(both_rules_shifting(0.1), DECOMPOSITION[:1], plan=plan)
    assert not moved["equivalent"].any() and moved["interaction"].between(0.08, 0.12).all()
    assert (moved["verdict"] == "not shown equivalent").all()
    row = moved.iloc[0]  # by hand: the diff of the contrast under each rule
    assert row["interaction"] == pytest.approx(row["diff_rule"] - row["diff_baseline"])
    assert (row["baseline"], row["rule"]) == ("either_side", "all_sides")
    assert set(moved["plan_hash"]) == {plan.plan_hash}
    assert termination_interaction(score_table(n_tasks=2, seeds=1), plan=plan).empty


def test_with_all_three_rules_the_default_ai_budget_is_the_baseline_of_both_contrasts():
    two = both_rules()
    third = two[two["termination"] == "either_side"].assign(
        termination="ai_budget", session_id=lambda t: t["session_id"] + "-ai", hms=lambda t: t["hms"] + 0.2)
    scores = pd.concat([two, third], ignore_index=True)
    assert termination_rules(scores) == ["ai_budget", "either_side", "all_sides"]
    assert set(by_termination(scores)["termination"]) == {"ai_budget"}
    hms = termination_contrast(scores, metrics=["hms"])
    assert len(hms) == 13 * 2 and set(hms["rule"]) == {"either_side", "all_sides"}
    diffs = hms.groupby("rule")["diff"].mean()
    assert math.isclose(diffs["either_side"], -0.2, abs_tol=1e-9)
    assert math.isclose(diffs["all_sides"], -0.3, abs_tol=1e-9)
