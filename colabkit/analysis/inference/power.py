"""Power for the design the grid has: paired contrasts over tasks x seeds.

A paired difference of task t, seed s is d = delta + u_t + e_ts: u_t the task's own deviation
of the effect (between-task variance sb^2) and e_ts the noise between seeds of one task
(within-task variance sw^2). The confirmatory test (`colabkit.analysis.inference.contrasts`) is a t
test on the task means of d, whose variance is sb^2 + sw^2 / S with S seeds per task, on
T - 1 df with T tasks. So power depends on the two components separately:

- more tasks always help; more seeds shrink only sw^2 / S;
- with T tasks, no number of seeds helps beyond the power that sb^2 alone allows: when
  that is below the target, the answer says that no number of seeds reaches it.

The components are estimated apart from the observed differences by one-way random-effects
ANOVA (method of moments, truncated at 0): sw^2 = mean square within tasks, sb^2 = (mean
square between - sw^2) / n0 with n0 the ANOVA's mean group size. One seed per task gives no
within-task estimate (NaN, and the row says so).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
from statsmodels.stats.power import TTestPower

from colabkit.analysis.inference.contrasts import paired_differences
from colabkit.analysis.judging import with_judge_columns
from colabkit.analysis.scores import COMPOSITIONS, RATE_METRICS, check_scores

POWER_COLUMNS = ("composition", "metric", "a", "b", "delta", "sd_between_tasks", "sd_within_task", "tasks_now",
                 "seeds_now", "power_now", "tasks_needed", "seeds_needed", "answer")


def variance_components(d: pd.Series, tasks: pd.Series) -> tuple[float, float]:
    """(sb^2, sw^2) of paired differences `d` grouped by `tasks` (module docstring)."""
    frame = pd.DataFrame({"d": np.asarray(d, dtype=float), "g": np.asarray(tasks)}).dropna()
    n, groups = len(frame), frame["g"].nunique()
    if groups < 2 or n <= groups:
        return math.nan, math.nan
    sizes = frame.groupby("g").size()
    means = frame.groupby("g")["d"].transform("mean")
    ms_within = float(((frame["d"] - means) ** 2).sum()) / (n - groups)
    ms_between = float((sizes * (frame.groupby("g")["d"].mean() - frame["d"].mean()) ** 2).sum()) / (groups - 1)
    n0 = (n - float((sizes**2).sum()) / n) / (groups - 1)
    return max(0.0, (ms_between - ms_within) / n0), ms_within


def power_of(tasks: int, seeds: float, var_between: float, var_within: float, delta: float,
             alpha: float = 0.05) -> float:
    """Power of the task-level t test with `tasks` tasks x `seeds` seeds to detect `delta`."""
    sd = math.sqrt(var_between + var_within / seeds)
    if tasks < 2 or not sd > 0:
        return math.nan
    return float(TTestPower().power(effect_size=delta / sd, nobs=tasks, alpha=alpha, alternative="two-sided"))


def tasks_needed(seeds: float, var_between: float, var_within: float, delta: float, alpha: float = 0.05,
                 power: float = 0.8) -> float:
    """Fewest tasks that reach `power` with `seeds` seeds each (NaN when the SDs are unknown)."""
    sd = math.sqrt(var_between + var_within / seeds) if np.isfinite([var_between, var_within]).all() else math.nan
    if not sd > 0:
        return math.nan
    n = TTestPower().solve_power(effect_size=delta / sd, alpha=alpha, power=power, alternative="two-sided")
    return float(max(2, math.ceil(float(n))))


def seeds_needed(tasks: int, var_between: float, var_within: float, delta: float, alpha: float = 0.05,
                 power: float = 0.8) -> float:
    """Fewest seeds per task that reach `power` with `tasks` tasks; inf when none can."""
    if tasks < 2 or not np.isfinite([var_between, var_within]).all():
        return math.nan
    effect = TTestPower().solve_power(nobs=tasks, alpha=alpha, power=power, alternative="two-sided")
    allowed = (delta / float(effect)) ** 2 - var_between  # what sw^2 / S may still take
    if allowed <= 0:
        return math.inf
    return float(max(1, math.ceil(var_within / allowed - 1e-9)))


def _answer(tasks: int, seeds: int, need_tasks: float, need_seeds: float, power: float) -> str:
    if not np.isfinite(need_tasks):
        return "no estimate: needs two tasks with two seeds each"
    if need_tasks <= tasks:
        return f"{tasks} tasks x {seeds} seeds reach {power:.0%} power"
    if need_seeds == math.inf:
        return (f"no number of seeds reaches {power:.0%} power with {tasks} tasks; "
                f"{need_tasks:.0f} tasks x {seeds} seeds would")
    if not np.isfinite(need_seeds):
        return f"needs {need_tasks:.0f} tasks x {seeds} seeds"
    return f"needs {need_tasks:.0f} tasks x {seeds} seeds, or {tasks} tasks x {need_seeds:.0f} seeds"


def power_table(scores: pd.DataFrame, metrics: Iterable[str] = RATE_METRICS, delta: float = 0.05,
                alpha: float = 0.05, power: float = 0.8, pair: tuple[str, str] = ("scaffolded", "default")) -> pd.DataFrame:
    """Per composition and metric: how many tasks x seeds detect `delta` in the paired contrast
    `pair` (Scaffolded - Default by default) at `power`, from the observed components."""
    metrics = list(metrics)
    table = check_scores(scores, metrics)
    present = set(table["variant"])
    rows = []
    for composition in COMPOSITIONS[1:]:
        a, b = f"{pair[0]}-{composition}", f"{pair[1]}-{composition}"
        if a not in present or b not in present:
            continue
        for metric in metrics:
            d = paired_differences(table, a, b, metric)
            tasks = int(d["task_id"].nunique())
            seeds = int(d.groupby("task_id").size().median()) if len(d) else 0
            vb, vw = variance_components(d["d"], d["task_id"])
            need_t = tasks_needed(max(seeds, 1), vb, vw, delta, alpha, power)
            need_s = seeds_needed(tasks, vb, vw, delta, alpha, power)
            rows.append({"composition": composition, "metric": metric, "a": a, "b": b, "delta": delta,
                         "sd_between_tasks": math.sqrt(vb) if np.isfinite(vb) else math.nan,
                         "sd_within_task": math.sqrt(vw) if np.isfinite(vw) else math.nan,
                         "tasks_now": tasks, "seeds_now": seeds,
                         "power_now": power_of(tasks, max(seeds, 1), vb, vw, delta, alpha),
                         "tasks_needed": need_t, "seeds_needed": need_s,
                         "answer": _answer(tasks, seeds, need_t, need_s, power)})
    return with_judge_columns(pd.DataFrame(rows, columns=list(POWER_COLUMNS)), table)
