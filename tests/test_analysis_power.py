"""Power in tasks x seeds: the noncentral t's two tails, tasks and seeds needed by integer
search, over a grid of tasks, seeds, effects and alphas (no NaN, no crash, monotone, and the
returned n reaches the target while n - 1 does not)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from helpers.score_tables import score_table
from scipy import stats

from colabkit.analysis import power_table, seeds_needed, tasks_needed
from colabkit.analysis.inference.power_analysis.power import between_task_upper, power_of, variance_components

ALPHAS = (0.05, 0.05 / 21, 1e-4)
TASKS = (2, 3, 5, 10, 38, 73, 120, 400)
SEEDS = (1, 2, 3, 10)
EFFECTS = (0.0, 0.1, 0.5, 1.0, 1.5, 3.0, 5.6, 6.0)  # standardised: delta / SD of a task mean


def test_power_is_the_noncentral_t_by_simulation_and_alpha_without_effect():
    # 10 tasks, task means with SD 1, effect 0.8: the t test on 10 task means, simulated
    rng = np.random.default_rng(0)
    means = rng.normal(0.8, 1.0, (40_000, 10))
    p = stats.ttest_1samp(means, 0.0, axis=1).pvalue
    simulated = float((p < 0.05).mean())  # Monte Carlo SE about 0.0025
    assert power_of(10, 1, 1.0, 0.0, 0.8) == pytest.approx(simulated, abs=0.01)
    for alpha in ALPHAS:
        assert power_of(10, 1, 1.0, 0.0, 0.0, alpha) == pytest.approx(alpha, rel=1e-9)


def test_the_issues_numbers_holm_level_power_is_lower_and_needs_more_tasks():
    # between-task variance 0.004, within 0.03, 3 seeds: 0.72 at 0.05, 0.28 at 0.05/21
    assert power_of(38, 3, 0.004, 0.03, 0.05, 0.05) == pytest.approx(0.718, abs=0.002)
    assert power_of(38, 3, 0.004, 0.03, 0.05, 0.05 / 21) == pytest.approx(0.276, abs=0.002)
    assert (tasks_needed(3, 0.004, 0.03, 0.05), tasks_needed(3, 0.004, 0.03, 0.05, 0.05 / 21)) == (46, 89)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_power_over_a_grid_is_finite_and_monotone(alpha):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from a NaN either
        grid = np.array([[[power_of(t, s, 0.5, 1.5, e, alpha) for e in EFFECTS] for s in SEEDS] for t in TASKS])
    # standardised by the SD of a task mean with one seed: sqrt(.5 + 1.5) = sqrt 2
    assert np.isfinite(grid).all() and (grid >= alpha - 1e-12).all() and (grid <= 1).all()
    assert (np.diff(grid, axis=0) >= -1e-12).all()  # more tasks
    assert (np.diff(grid, axis=1) >= -1e-12).all()  # more seeds
    assert (np.diff(grid, axis=2) >= -1e-12).all()  # larger effects
    assert grid[TASKS.index(38), 0, EFFECTS.index(6.0)] == pytest.approx(1.0)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_tasks_and_seeds_needed_are_the_smallest_that_reach_the_target(alpha):
    vb, vw = 0.4, 0.6  # SD of a one-seed task mean: 1
    for effect in EFFECTS:
        for seeds in SEEDS:
            need = tasks_needed(seeds, vb, vw, effect, alpha)
            if effect == 0.0:
                assert need == math.inf  # no effect: power stays at alpha
                continue
            assert math.isfinite(need) and need >= 2 and need == int(need)
            assert power_of(int(need), seeds, vb, vw, effect, alpha) >= 0.8
            assert need == 2 or power_of(int(need) - 1, seeds, vb, vw, effect, alpha) < 0.8
        for tasks in TASKS:
            need = seeds_needed(tasks, vb, vw, effect, alpha)
            assert need == math.inf or (need >= 1 and need == int(need))
            ceiling = power_of(tasks, math.inf, vb, 0.0, effect, alpha)  # infinitely many seeds
            if need == math.inf:
                assert ceiling < 0.8
                continue
            assert power_of(tasks, need, vb, vw, effect, alpha) >= 0.8
            assert need == 1 or power_of(tasks, need - 1, vb, vw, effect, alpha) < 0.8


def test_two_tasks_are_not_enough_when_they_give_less_than_the_target():
    # at 2 tasks (1 df) power is far below its normal approximation: the answer is not 2
    need = tasks_needed(1, 1.0, 0.0, 2.5)
    assert power_of(2, 1, 1.0, 0.0, 2.5) < 0.8 and need > 2
    assert power_of(int(need), 1, 1.0, 0.0, 2.5) >= 0.8 > power_of(int(need) - 1, 1, 1.0, 0.0, 2.5)


def test_the_between_task_variance_has_an_upper_bound():
    rng = np.random.default_rng(1)
    task = np.repeat(np.arange(20), 3)
    d = rng.normal(0, 0.05, 20)[task] + rng.normal(0, 0.1, 60)
    vb, vw = variance_components(d, task)
    upper = between_task_upper(d, task)
    assert upper > vb >= 0
    # balanced: the chi-square bound of the variance of task means, less sw^2 / 3
    means = np.bincount(task, d) / 3
    chi = stats.chi2.ppf(0.025, 19)
    assert upper == pytest.approx(19 * np.var(means, ddof=1) / chi - vw / 3)


def test_the_power_table_plans_at_its_alpha_and_flags_more_tasks_than_exist():
    scores = score_table()
    loose = power_table(scores, metrics=["performance"], delta=0.05)
    strict = power_table(scores, metrics=["performance"], delta=0.05, alpha=0.05 / 21, tasks_available=38)
    assert (strict["alpha"] == 0.05 / 21).all() and (strict["power_now"] <= loose["power_now"]).all()
    assert (strict["tasks_needed"] >= loose["tasks_needed"]).all()
    assert (strict["tasks_needed_upper"] >= strict["tasks_needed"]).all()
    assert (strict["sd_between_upper"] >= strict["sd_between_tasks"]).all()
    over = strict["tasks_needed_upper"] > 38
    assert (strict["more_tasks_than_exist"] == (over | (strict["tasks_needed"] > 38))).all()
    assert strict.loc[strict["tasks_needed"] > 38, "answer"].str.contains("more than the 38 tasks").all()
    for alpha in ALPHAS:
        for delta in (0.0, 0.05, 0.3, 3.0):
            table = power_table(scores, metrics=["performance", "delivered"], delta=delta, alpha=alpha)
            assert table["power_now"].notna().all() and len(table) == 6
