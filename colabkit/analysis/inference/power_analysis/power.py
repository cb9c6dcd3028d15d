"""Power for the design the grid has: paired contrasts over tasks x seeds.

A paired difference of task t, seed s is d = delta + u_t + e_ts: u_t the task's own deviation
of the effect (between-task variance sb^2) and e_ts the noise between seeds of one task
(within-task variance sw^2). The confirmatory test (`colabkit.analysis.inference.decisions.contrasts`) is a t
test on the task means of d, whose variance is sb^2 + sw^2 / S with S seeds per task, on
T - 1 df with T tasks. So power depends on the two components separately:

- more tasks always help; more seeds shrink only sw^2 / S;
- with T tasks, no number of seeds helps beyond the power that sb^2 alone allows: when
  that is below the target, the answer says that no number of seeds reaches it.

Power is the noncentral t's two tails, each taken as an upper tail (`power_of`): scipy's lower
tail comes back NaN at large noncentrality (statsmodels' `TTestPower` returned NaN for 38 tasks
at effects of 1.5 SD and more), its upper tail does not; tasks and seeds needed are the smallest integers whose power reaches the
target (`tasks_needed`, `seeds_needed`: doubling, then bisection on that same function; power
rises with tasks and with seeds), never a solver's rounded float.

The components are estimated apart from the observed differences by one-way random-effects
ANOVA (method of moments, truncated at 0): sw^2 = mean square within tasks, sb^2 = (mean
square between - sw^2) / n0 with n0 the ANOVA's mean group size. One seed per task gives no
within-task estimate (NaN, and the row says so). sb^2 is a point estimate on a few dozen
tasks, and 0 would say "seeds always suffice", so `power_table` also plans at the upper end of
a 95% interval for it: the chi-square interval of the variance of task means (exact for a
balanced grid, Searle's approximation otherwise) less sw^2 / n0.

Power is planned at the level the decision is made at: `power_table`'s `alpha` is the
per-test level of the procedure's first step (the analysis plan passes the primary family's
alpha / its size, `colabkit.analysis.inference.planning.plan`), and a design needing more tasks than
exist (`tasks_available`) is flagged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from colabkit.analysis.inference.decisions.contrasts import DEFAULT_PLAN, paired_differences
from colabkit.analysis.inference.planning.plan import AnalysisPlan, with_plan
from colabkit.analysis.judging import with_judge_columns
from colabkit.analysis.scores import COMPOSITIONS, RATE_METRICS, check_scores

POWER_COLUMNS = ("composition", "metric", "a", "b", "delta", "alpha", "sd_between_tasks", "sd_between_upper",
                 "sd_within_task", "tasks_now", "seeds_now", "power_now", "power_now_upper", "tasks_needed",
                 "tasks_needed_upper", "seeds_needed", "more_tasks_than_exist", "answer")
LIMIT = 1_000_000
"""The largest number of tasks or seeds searched; beyond it the answer is inf (never reached)."""


def variance_components(d: pd.Series, tasks: pd.Series, level: float = 0.95) -> tuple[float, float]:
    """(sb^2, sw^2) of paired differences `d` grouped by `tasks` (module docstring)."""
    return _components(d, tasks, level)[:2]


def between_task_upper(d: pd.Series, tasks: pd.Series, level: float = 0.95) -> float:
    """The upper end of a `level` interval for sb^2 (module docstring); NaN when no estimate."""
    return _components(d, tasks, level)[2]


def _components(d: pd.Series, tasks: pd.Series, level: float) -> tuple[float, float, float]:
    frame = pd.DataFrame({"d": np.asarray(d, dtype=float), "g": np.asarray(tasks)}).dropna()
    n, groups = len(frame), frame["g"].nunique()
    if groups < 2 or n <= groups:
        return math.nan, math.nan, math.nan
    sizes = frame.groupby("g").size()
    means = frame.groupby("g")["d"].transform("mean")
    ms_within = float(((frame["d"] - means) ** 2).sum()) / (n - groups)
    ms_between = float((sizes * (frame.groupby("g")["d"].mean() - frame["d"].mean()) ** 2).sum()) / (groups - 1)
    n0 = (n - float((sizes**2).sum()) / n) / (groups - 1)
    # ms_between / n0 estimates sb^2 + sw^2 / n0 with (groups - 1) df: its chi-square upper bound
    upper_means = (groups - 1) * ms_between / n0 / float(scipy_stats.chi2.ppf((1 - level) / 2, groups - 1))
    return max(0.0, (ms_between - ms_within) / n0), ms_within, max(0.0, upper_means - ms_within / n0)


def _tail_beyond(critical: float, df: int, noncentrality: float) -> float:
    """P(|T| > critical) for T ~ noncentral t(df, noncentrality >= 0), both tails as upper
    tails: P(T < -c | ncp) = P(T > c | -ncp). scipy's lower tail (`nct.cdf(-c)`) comes back NaN
    for large noncentrality or critical values; its upper tail at -ncp does not (checked over
    df 1-999, alpha 1e-8-0.5, ncp 0-1e4). Should a tail still not be finite, it counts as 0:
    power is never overstated."""
    tails = [float(scipy_stats.nct.sf(critical, df, ncp)) for ncp in (noncentrality, -noncentrality)]
    return min(1.0, sum(t if math.isfinite(t) else 0.0 for t in tails))


def power_of(tasks: int, seeds: float, var_between: float, var_within: float, delta: float,
             alpha: float = 0.05) -> float:
    """Power of the task-level t test with `tasks` tasks x `seeds` seeds to detect `delta`
    (two-sided at `alpha`); NaN below two tasks or without a positive SD."""
    if tasks < 2 or not np.isfinite([var_between, var_within, delta, alpha]).all():
        return math.nan
    sd = math.sqrt(max(var_between, 0.0) + max(var_within, 0.0) / seeds)
    if not sd > 0:
        return math.nan
    df = int(tasks) - 1
    critical = float(scipy_stats.t.isf(alpha / 2, df))
    return _tail_beyond(critical, df, abs(delta) / sd * math.sqrt(tasks))


def _smallest(reaches: Callable[[int], bool], first: int) -> float:
    """The smallest integer n >= first with reaches(n), for a monotone `reaches`; inf past LIMIT."""
    if reaches(first):
        return float(first)
    low, high = first, first
    while not reaches(high):
        if high >= LIMIT:
            return math.inf
        low, high = high, min(LIMIT, high * 2)
    while high - low > 1:  # reaches(high), not reaches(low)
        middle = (low + high) // 2
        low, high = (low, middle) if reaches(middle) else (middle, high)
    return float(high)


def tasks_needed(seeds: float, var_between: float, var_within: float, delta: float, alpha: float = 0.05,
                 power: float = 0.8) -> float:
    """Fewest tasks (at least 2) that reach `power` with `seeds` seeds each; inf when no number
    does (no effect), NaN when the SDs are unknown."""
    if not np.isfinite([var_between, var_within]).all() or not var_between + var_within / seeds > 0:
        return math.nan
    return _smallest(lambda t: power_of(t, seeds, var_between, var_within, delta, alpha) >= power, 2)


def seeds_needed(tasks: int, var_between: float, var_within: float, delta: float, alpha: float = 0.05,
                 power: float = 0.8) -> float:
    """Fewest seeds per task that reach `power` with `tasks` tasks; inf when none can (the
    between-task variance alone, or no effect, keeps power below it), NaN when unknown."""
    if tasks < 2 or not np.isfinite([var_between, var_within]).all() or not var_between + var_within > 0:
        return math.nan
    if var_between > 0 and power_of(tasks, math.inf, var_between, 0.0, delta, alpha) < power:
        return math.inf  # even infinitely many seeds leave sb^2: no number reaches it
    return _smallest(lambda s: power_of(tasks, s, var_between, var_within, delta, alpha) >= power, 1)


def _answer(tasks: int, seeds: int, need_tasks: float, need_seeds: float, power: float,
            tasks_available: int | None) -> str:
    if not np.isfinite(need_tasks) and need_tasks != math.inf:
        return "no estimate: needs two tasks with two seeds each"
    if need_tasks <= tasks:
        return f"{tasks} tasks x {seeds} seeds reach {power:.0%} power"
    more = f" (more than the {tasks_available} tasks that exist)" if (
        tasks_available is not None and need_tasks > tasks_available) else ""
    if need_tasks == math.inf:
        return f"no number of tasks x {seeds} seeds reaches {power:.0%} power"
    if need_seeds == math.inf:
        return (f"no number of seeds reaches {power:.0%} power with {tasks} tasks; "
                f"{need_tasks:.0f} tasks x {seeds} seeds would{more}")
    if not np.isfinite(need_seeds):
        return f"needs {need_tasks:.0f} tasks x {seeds} seeds{more}"
    return f"needs {need_tasks:.0f} tasks x {seeds} seeds{more}, or {tasks} tasks x {need_seeds:.0f} seeds"


def power_table(scores: pd.DataFrame, metrics: Iterable[str] = RATE_METRICS, delta: float | None = None,
                alpha: float | None = None, power: float | None = None,
                pair: tuple[str, str] = ("scaffolded", "default"), tasks_available: int | None = None,
                plan: AnalysisPlan | None = None) -> pd.DataFrame:
    """Per composition and metric: how many tasks x seeds detect `delta` in the paired contrast
    `pair` (Scaffolded - Default by default) at `power` and per-test level `alpha`, from the
    observed components and at the upper end of sb^2's interval (`*_upper`); a design needing
    more than `tasks_available` tasks is flagged (`more_tasks_than_exist`). What is not given
    comes from `plan` (default: the default plan): alpha is its primary family's first Holm
    step, not the nominal 0.05."""
    plan = plan or DEFAULT_PLAN
    delta = plan.power_delta if delta is None else delta
    alpha = plan.first_step_alpha if alpha is None else alpha
    power = plan.power_target if power is None else power
    tasks_available = plan.tasks_available if tasks_available is None else tasks_available
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
            seeds = max(int(d.groupby("task_id").size().median()) if len(d) else 0, 1)
            vb, vw, vb_upper = _components(d["d"], d["task_id"], 0.95)
            need_t = tasks_needed(seeds, vb, vw, delta, alpha, power)
            need_upper = tasks_needed(seeds, vb_upper, vw, delta, alpha, power)
            need_s = seeds_needed(tasks, vb, vw, delta, alpha, power)
            worst = max((n for n in (need_t, need_upper) if not math.isnan(n)), default=math.nan)
            rows.append({"composition": composition, "metric": metric, "a": a, "b": b, "delta": delta,
                         "alpha": alpha, "sd_between_tasks": math.sqrt(vb) if np.isfinite(vb) else math.nan,
                         "sd_between_upper": math.sqrt(vb_upper) if np.isfinite(vb_upper) else math.nan,
                         "sd_within_task": math.sqrt(vw) if np.isfinite(vw) else math.nan,
                         "tasks_now": tasks, "seeds_now": seeds,
                         "power_now": power_of(tasks, seeds, vb, vw, delta, alpha),
                         "power_now_upper": power_of(tasks, seeds, vb_upper, vw, delta, alpha),
                         "tasks_needed": need_t, "tasks_needed_upper": need_upper, "seeds_needed": need_s,
                         "more_tasks_than_exist": bool(tasks_available is not None and worst > tasks_available),
                         "answer": _answer(tasks, seeds, need_t, need_s, power, tasks_available)})
    return with_plan(with_judge_columns(pd.DataFrame(rows, columns=list(POWER_COLUMNS)), table), plan)
