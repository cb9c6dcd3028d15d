"""Inference at the task level: the confirmatory test, the random-slope mixed model fitted with
several optimisers, Holm families defined once, power in tasks x seeds, and the judge's
standing carried into every table. Arithmetic is written out where it can be."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from helpers.score_tables import score_table
from scipy import stats

from colabkit.analysis import (
    DECOMPOSITION,
    analysis_plan,
    contrasts,
    format_study_table,
    holm,
    judge_status,
    judge_warning,
    mixed_model_contrast,
    power_table,
    seeds_needed,
    study_table,
    task_contrast,
    tasks_needed,
    variance_components,
)

NAN = math.nan
# default-d and scaffolded-d on three tasks x two seeds; default-d has one missing score.
PERFORMANCE = {
    "default-d": {("t1", 0): 0.5, ("t1", 1): 0.7, ("t2", 0): 0.2, ("t2", 1): 0.4, ("t3", 0): 0.9, ("t3", 1): NAN},
    "scaffolded-d": {("t1", 0): 0.6, ("t1", 1): 0.9, ("t2", 0): 0.3, ("t2", 1): 0.3, ("t3", 0): 1.0, ("t3", 1): 0.8},
}


def small_table() -> pd.DataFrame:
    return pd.DataFrame([{"session_id": f"{variant}-{task}-{seed}", "task_id": task, "variant": variant,
                          "structure": variant.split("-")[0], "composition": "d", "seed": seed, "performance": value}
                         for variant, cells in PERFORMANCE.items() for (task, seed), value in cells.items()])


def balanced_table(shift: float = 0.1) -> pd.DataFrame:
    """Six tasks with a strong task effect, two seeds, scaffolded = default + shift + noise."""
    rows = []
    noise = [0.02, -0.01, 0.0, 0.03, -0.02, 0.01, -0.03, 0.02, 0.01, -0.01, 0.0, 0.02]
    for t in range(6):
        for seed in range(2):
            base = 0.2 + 0.1 * t + (0.01 if seed else -0.01)
            for variant, delta in (("default-dr", 0.0), ("scaffolded-dr", shift + noise[2 * t + seed])):
                rows.append({"session_id": f"{variant}-{t}-{seed}", "task_id": f"t{t}", "variant": variant,
                             "structure": variant.split("-")[0], "composition": "dr", "seed": seed,
                             "performance": base + delta})
    return pd.DataFrame(rows)


# --- the confirmatory test ---------------------------------------------------------------------

def test_the_task_level_contrast_by_hand_and_as_statsmodels_has_it():
    # pairs (t3, 1 drops out): t1 .1 .2, t2 .1 -.1, t3 .1; mean .4 / 5 = .08
    # residuals summed per task: t1 .02 + .12 = .14, t2 .02 - .18 = -.16, t3 .02
    # CR1: sqrt(3/2 * (.0196 + .0256 + .0004)) / 5 = .052307; t on G - 1 = 2 df
    result = task_contrast(small_table(), "scaffolded-d", "default-d", "performance")
    se = math.sqrt(1.5 * 0.0456) / 5
    assert (result["n_pairs"], result["n_tasks"], result["df"]) == (5, 3, 2)
    assert result["diff"] == pytest.approx(0.08) and result["se_task"] == pytest.approx(se)
    t_crit = 4.302652729911275  # t(0.975, df = 2)
    assert (result["ci_low"], result["ci_high"]) == pytest.approx((0.08 - t_crit * se, 0.08 + t_crit * se))
    ols = sm.OLS(np.array([.1, .2, .1, -.1, .1]), np.ones(5)).fit(
        cov_type="cluster", cov_kwds={"groups": np.array([0, 0, 1, 1, 2])}, use_t=True)
    assert result["p_unadjusted"] == pytest.approx(float(ols.pvalues[0]), rel=1e-9)


def test_with_equal_seeds_the_test_is_the_t_test_on_task_means():
    table = balanced_table()
    result = task_contrast(table, "scaffolded-dr", "default-dr", "performance")
    wide = table.pivot_table(index=["task_id", "seed"], columns="variant", values="performance")
    task_means = (wide["scaffolded-dr"] - wide["default-dr"]).groupby("task_id").mean()
    assert result["p_unadjusted"] == pytest.approx(stats.ttest_1samp(task_means, 0).pvalue, rel=1e-9)


def test_fewer_than_two_tasks_give_a_point_without_interval():
    one = task_contrast(small_table().query("task_id == 't1'"), "scaffolded-d", "default-d", "performance")
    assert one["diff"] == pytest.approx(0.15) and one["n_tasks"] == 1
    assert math.isnan(one["ci_low"]) and math.isnan(one["p_unadjusted"]) and one["note"].startswith("no interval")


# --- the mixed model ---------------------------------------------------------------------------

def test_the_random_slope_model_estimates_the_difference_in_a_balanced_design():
    # balanced: the GLS estimate of the fixed effect is the plain difference of means,
    # 0.1 + mean(noise) = 0.1 + 0.04 / 12
    result = mixed_model_contrast(balanced_table(), "scaffolded-dr", "default-dr", "performance")
    assert result["mixed_coef"] == pytest.approx(0.1 + 0.04 / 12, abs=1e-6)
    assert 0 < result["mixed_se"] < 0.02 and result["mixed_p_unadjusted"] < 1e-4
    assert result["mixed_optimiser"].split("+")[0] in ("bfgs", "lbfgs", "powell", "nm")


def test_the_mixed_p_uses_t_on_tasks_minus_one_df():
    result = mixed_model_contrast(balanced_table(shift=0.0), "scaffolded-dr", "default-dr", "performance")
    t = result["mixed_coef"] / result["mixed_se"]
    assert result["mixed_p_unadjusted"] == pytest.approx(2 * stats.t.sf(abs(t), 5))
    assert result["mixed_p_unadjusted"] > 2 * stats.norm.sf(abs(t))  # not the normal reference


def test_the_mixed_model_fails_closed_on_too_little_data():
    one_task = balanced_table().query("task_id == 't0'")
    result = mixed_model_contrast(one_task, "scaffolded-dr", "default-dr", "performance")
    assert math.isnan(result["mixed_coef"]) and result["mixed_flags"] == "mixedlm_too_little_data"


# --- Holm families -----------------------------------------------------------------------------

def test_holm_by_hand_with_a_failed_test_counted_as_p_one():
    # m = 4 (the failed test counts as p = 1): .01*4 = .04, .03*3 = .09, .04*2 = .08 -> .09, 1*1 = 1
    adjusted, reject = holm([0.01, 0.04, NAN, 0.03])
    assert adjusted[[0, 1, 3]] == pytest.approx([0.04, 0.09, 0.09]) and math.isnan(adjusted[2])
    assert list(reject) == [True, False, False, False]
    # left out, the failure would have made the family smaller and the others easier
    assert holm([0.01, 0.04, 0.03])[0][2] == pytest.approx(0.06)


def test_the_same_contrast_has_the_same_adjusted_p_in_every_table():
    scores = score_table()
    metrics = ["performance", "hms"]
    plan = analysis_plan(metrics=metrics)
    main = contrasts(scores, metrics=metrics, plan=plan, mixed_families=())
    everything = contrasts(scores, DECOMPOSITION, metrics=metrics, plan=plan, mixed_families=())
    only_memory = contrasts(scores, DECOMPOSITION[1:2], metrics=metrics, plan=plan, mixed_families=())
    key = ["a", "b", "metric"]
    assert set(main["family"]) == {"structure", "exploratory: scaffolded-default"} and len(main) == 3 * 2
    assert set(main.loc[main["metric"] == "performance", "hypothesis"]) == {"H2.d", "H2.r", "H2.dr"}
    joined = main.merge(everything, on=key, suffixes=("", "_all"))
    assert len(joined) == len(main)
    assert np.allclose(joined["p_adjusted"], joined["p_adjusted_all"], equal_nan=True)
    assert (joined["declared"] == joined["declared_all"]).all()
    memory = everything[everything["component"] == "memory alone"].merge(only_memory, on=key, suffixes=("", "_one"))
    assert len(memory) == 3 * 2 and np.allclose(memory["p_adjusted"], memory["p_adjusted_one"], equal_nan=True)
    # the exploratory tests come after the hypotheses: adjusted, never below their own p
    exploratory = everything[everything["hypothesis"] == ""]
    assert len(exploratory) > 0 and (exploratory["p_adjusted"] >= exploratory["p_unadjusted"] - 1e-12).all()


def test_a_failed_test_counts_as_p_one_and_is_never_declared():
    scores = score_table(n_tasks=4)
    scores.loc[scores["variant"] == "scaffolded-d", "hms"] = np.nan  # no pairs: the test cannot run
    plan = analysis_plan(metrics=["performance", "hms"])
    table = contrasts(scores, metrics=["performance", "hms"], plan=plan, mixed_families=())
    failed = table[(table["a"] == "scaffolded-d") & (table["metric"] == "hms")].iloc[0]
    assert math.isnan(failed["p_unadjusted"]) and failed["p_adjusted"] == 1.0 and not failed["declared"]
    assert failed["note"]
    assert set(table["mixed_flags"]) == {"mixedlm_not_requested"}
    whole = contrasts(score_table(n_tasks=4), metrics=["performance", "hms"], plan=plan, mixed_families=())
    joined = table.merge(whole, on=["a", "b", "metric"], suffixes=("", "_whole"))
    assert (joined["p_adjusted"] >= joined["p_adjusted_whole"] - 1e-12).all()  # a failure makes nothing easier


# --- power -------------------------------------------------------------------------------------

def test_variance_components_by_hand():
    # two tasks x two seeds: t1 (.1, .3), t2 (.5, .7); task means .2, .6, grand mean .4
    # MS within = (.01 + .01 + .01 + .01) / (4 - 2) = .02; MS between = 2 * (.04 + .04) / 1 = .16
    # n0 = 2: sb^2 = (.16 - .02) / 2 = .07
    vb, vw = variance_components(pd.Series([.1, .3, .5, .7]), pd.Series(["t1", "t1", "t2", "t2"]))
    assert (vb, vw) == pytest.approx((0.07, 0.02))
    assert all(math.isnan(v) for v in variance_components(pd.Series([.1, .5]), pd.Series(["t1", "t2"])))


def test_power_answers_in_tasks_x_seeds_and_says_when_seeds_cannot_help():
    # sb^2 = .0004, sw^2 = .0036: with 3 seeds the task mean's SD is sqrt(.0004 + .0012) = .04
    needed = tasks_needed(3, 0.0004, 0.0036, delta=0.05)
    n_normal = (1.959964 + 0.841621) ** 2 / (0.05 / 0.04) ** 2  # one-sample normal approximation, 5.02
    assert n_normal < needed <= n_normal + 4
    assert tasks_needed(30, 0.0004, 0.0036, 0.05) < needed  # more seeds: fewer tasks
    assert seeds_needed(int(needed), 0.0004, 0.0036, 0.05) <= 3
    # the between-task variance alone needs more than the tasks available: no seeds suffice
    # (10 tasks need a task-level effect size of about 0.99: SD <= .0505, variance <= .00255)
    assert seeds_needed(10, 0.003, 0.0036, delta=0.05) == math.inf
    assert math.isfinite(seeds_needed(40, 0.003, 0.0036, delta=0.05))


def test_the_power_table_of_a_grid():
    table = power_table(score_table(), metrics=["performance"], delta=0.05)
    assert list(table["composition"]) == ["d", "r", "dr"] and (table["tasks_now"] == 6).all()
    assert (table["seeds_now"] == 3).all() and (table["sd_within_task"] > 0).all()
    for row in table.itertuples():
        assert row.tasks_needed == tasks_needed(3, row.sd_between_tasks ** 2, row.sd_within_task ** 2, 0.05, row.alpha)
        assert "tasks x" in row.answer
    unreachable = table[table["seeds_needed"] == math.inf]
    assert unreachable["answer"].str.startswith("no number of seeds reaches").all()
    assert {"judge_grade", "judge_reliable"} <= set(table.columns)


# --- the judge's standing in every table -------------------------------------------------------

def test_judge_columns_reach_the_study_table_and_the_contrasts():
    scores = score_table(n_tasks=3, seeds=2)  # a plumbing-grade judge that failed its check
    study = study_table(scores, ["performance"])
    assert set(study["judge_grade"]) == {"plumbing"} and set(study["judge_reliable"]) == {False}
    wide = format_study_table(study)
    assert list(wide.columns[-3:]) == ["judge_grade", "judge_reliable", "plan_hash"]
    table = contrasts(scores, metrics=["performance"])
    assert set(table["judge_grade"]) == {"plumbing"} and set(table["judge_reliable"]) == {False}
    capable = scores.assign(judge_grade="capable", judge_reliable=True)
    assert judge_status(capable) == ("capable", True) and judge_warning("capable", True) is None
    assert "plumbing-grade" in judge_warning(*judge_status(scores))
    assert "failed its sanity check" in judge_warning("capable", False)
    rules_only = scores.assign(judge_grade=None, judge_reliable=None)
    assert judge_status(rules_only) == (None, None) and judge_warning(None, None) is None


def test_each_cell_of_the_formatted_table_shows_its_own_n():
    scores = score_table(n_tasks=2, seeds=1)
    scores.loc[scores["variant"] == "default-d", "hms"] = [0.13, np.nan]  # one session has a value
    wide = format_study_table(study_table(scores, ["performance", "hms"]))
    assert wide.loc["default-d", "sessions"] == 2
    assert wide.loc["default-d", "HMS"] == "0.13 (n=1, 1 task)"
    assert wide.loc["default-d", "Performance"].endswith("(n=2, 2 tasks)")


def test_an_equivalence_reached_but_not_declared_is_inconclusive_at_the_power_of_the_level_it_got():
    from colabkit.analysis.inference.decisions.decide import study_decisions, tost_power

    scores = score_table(n_tasks=38, seeds=3)
    scores.loc[scores["variant"] == "scaffolded-dr", "w_total"] += 1.5  # not equivalent enough to declare
    own = [{"name": "W", "a": "scaffolded-dr", "b": "default-dr", "metric": "w_total", "direction": "equivalent",
            "weight": 0.1}]
    plan = analysis_plan(metrics=["w_total"], hypotheses=own)
    row = study_decisions(scores, plan).set_index("hypothesis").loc["W"]
    assert row["local_alpha"] == pytest.approx(0.005) and not row["declared"]
    assert tost_power(38, 0.5, 0.05) >= 0.8 > row["tost_power"] == pytest.approx(tost_power(38, 0.5, 0.005))
    assert row["decision"].startswith("inconclusive") and "at the level it got, 0.005" in row["decision"]
