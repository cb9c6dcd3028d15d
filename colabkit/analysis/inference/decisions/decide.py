"""The study's decisions: every planned test, one graph, one study-wise error rate.

`study_decisions` runs every test the plan fixes, always all of them (so no decision depends
on which pairs or metrics a table asks for): the hypotheses first, then every other planned
test of the families (`exploratory`). Their p-values go through the plan's graph
(`colabkit.analysis.inference.planning.graph`, `hypotheses.study_graph`), which gives each its
procedure-adjusted p (`p_adjusted`) and decision (`declared`: adjusted p <= alpha).

The p a hypothesis contributes (`p_test`) is its claim's: for "greater" / "less" the
two-sided t p when the estimate lies in the claimed direction, else 1 (a one-sided test at
alpha / 2, so a declared claim is one in its direction); for "two-sided" the two-sided p; for
"equivalent" the standardised TOST's p (`tost_p`). Exploratory tests are two-sided, but for the
synergy tests a plan with solo variants fixes (`planning.synergy`: one-sided as stated there,
strong synergy an intersection), which join them last.

**The interval at the level this test got** (`sim_ci_low`, `sim_ci_high`, `interval` says so):
each test's two-sided t interval at the local level the procedure gave it, 1 - w alpha, with w
its weight when it was declared, or when the procedure stopped. It agrees with the decision
(excludes 0 exactly when a two-sided test is declared), but the intervals are **not
simultaneous**: their joint coverage is not 1 - alpha (issue 43 measured joint misses of 6.9%
under the paper's effects and 12% under a strong configuration, against 5%), and no table
calls them simultaneous. The compatible simultaneous intervals of
Strassburger and Bretz (2008) and Guilbaud (2008) would be: for a declared one-sided claim
they are truncated at 0 (they say only "the effect is positive"), which is not informative
for the claims this study declares; `docs/statistics.md` says why. A hypothesis the procedure
never gave a level has no interval ("not reached: undecided"). The unadjusted 95% interval
stays in `ci_low` / `ci_high`, labelled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from colabkit.analysis.inference.estimation.signflip import sign_flip_p
from colabkit.analysis.inference.planning.graph import graph_adjusted, graph_reject
from colabkit.analysis.inference.planning.hypotheses import (
    Contrast,
    Hypothesis,
    hypothesis_contrasts,
    study_graph,
)
from colabkit.analysis.inference.planning.plan import AnalysisPlan, planned_tests
from colabkit.analysis.inference.planning.synergy import SYNERGY_FAMILY, SynergyTest, synergy_tests
from colabkit.analysis.scores import check_scores

DECISION_COLUMNS = ("hypothesis", "family", "composition", "metric", "a", "b", "component", "direction", "claim",
                    "n_pairs", "n_tasks", "diff", "se_task", "df", "ci_low", "ci_high", "p_unadjusted", "p_test",
                    "tost_margin", "tost_power", "p_adjusted", "declared", "decision", "local_alpha", "sim_ci_low",
                    "sim_ci_high", "interval", "comparisons", "note")
ABSENT = "not in the data: counts as p = 1 in the procedure"


def score_grid(scores: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """The scores as one row per (task, seed), a column per (metric, variant): every paired
    difference is then a subtraction of two columns."""
    present = [m for m in metrics if m in scores.columns]
    return scores.pivot(index=["task_id", "seed"], columns="variant", values=present).astype("float64")


def pair_differences(grid: pd.DataFrame, pairs: list[tuple[str, str]], metric: str) -> pd.DataFrame:
    """task_id, seed, d: the paired difference A - B, averaged over `pairs` (a pooled claim)
    for each (task, seed) that every pair scored; one pair gives its own differences."""
    values, column = grid.to_numpy(dtype="float64"), grid.columns.get_loc
    d = sum((values[:, column((metric, a))] - values[:, column((metric, b))] for a, b in pairs),
            start=np.zeros(len(grid))) / len(pairs)
    keep = ~np.isnan(d)
    return pd.DataFrame({"task_id": grid.index.get_level_values("task_id")[keep],
                         "seed": grid.index.get_level_values("seed")[keep], "d": d[keep]})


def difference_test(d: pd.DataFrame, plan: AnalysisPlan) -> dict[str, object]:
    """The task-clustered t of mean(d) = 0 (t, two-sided p, 95% interval); a contrast with no
    spread between tasks is decided by its exact sign-flip p (`note` says so)."""
    n, tasks = len(d), int(d["task_id"].nunique())
    mean = float(d["d"].mean()) if n else math.nan
    out: dict[str, object] = {"n_pairs": n, "n_tasks": tasks, "diff": mean, "se_task": math.nan,
                              "df": tasks - 1 if tasks >= 2 else math.nan, "ci_low": math.nan, "ci_high": math.nan,
                              "p_unadjusted": math.nan, "t": math.nan, "note": ""}
    if tasks < 2:
        return out | {"note": f"no test: {tasks} task(s) with pairs"}
    codes = pd.factorize(d["task_id"])[0]
    residual_sums = np.bincount(codes, weights=d["d"].to_numpy(float) - mean)
    se = math.sqrt(tasks / (tasks - 1) * float((residual_sums**2).sum())) / n  # CR1, as clustered_standard_error
    if not se > plan.zero_tolerance * max(1.0, abs(mean)):
        p, _ = sign_flip_p(d["d"], d["task_id"], 1000, plan.sign_flip_seed, plan.exact_flips, plan.zero_tolerance)
        return out | {"se_task": 0.0, "p_unadjusted": p, "t": math.copysign(math.inf, mean) if mean else 0.0,
                      "note": "zero spread between tasks: no t; p is the exact sign-flip p"}
    t_crit = float(scipy_stats.t.ppf(0.975, tasks - 1))
    return out | {"se_task": se, "ci_low": mean - t_crit * se, "ci_high": mean + t_crit * se, "t": mean / se,
                  "p_unadjusted": float(2 * scipy_stats.t.sf(abs(mean / se), tasks - 1))}


def tost_p(t: float, tasks: int, margin_sd: float) -> float:
    """The standardised equivalence test: H0 |mean / SD of task means| >= margin_sd, rejected
    when both one-sided noncentral-t tests reject (exact for normal task means)."""
    if tasks < 2 or not np.isfinite(t):
        return 1.0
    ncp, df = margin_sd * math.sqrt(tasks), tasks - 1
    return max(float(scipy_stats.nct.cdf(t, df, ncp)), float(scipy_stats.nct.sf(t, df, -ncp)))


def tost_power(tasks: int, margin_sd: float, alpha: float) -> float:
    """P(the standardised TOST declares equivalence at `alpha`) when the true difference is 0."""
    if tasks < 2:
        return math.nan
    df = tasks - 1
    upper = float(scipy_stats.nct.ppf(alpha, df, margin_sd * math.sqrt(tasks)))
    return max(0.0, float(scipy_stats.t.cdf(upper, df) - scipy_stats.t.cdf(-upper, df)))


def contrast_test(grid: pd.DataFrame, contrast: Contrast, metric: str, plan: AnalysisPlan) -> dict[str, object]:
    """The test of one contrast (coefficient-weighted paired differences), from every pair
    available to each of its comparisons: no (task, seed) is dropped because another
    comparison lacks it. One comparison is `difference_test` exactly. Several: the estimate
    is the weighted sum of each comparison's mean over its own pairs, its SE task-clustered
    (CR1 over the per-task sums of every comparison's influence), t on tasks - 1 df."""
    if len(contrast) == 1 and contrast[0][2] == 1.0:
        return difference_test(pair_differences(grid, [contrast[0][:2]], metric), plan)
    parts = [(coef, pair_differences(grid, [(a, b)], metric)) for a, b, coef in contrast]
    tasks = sorted(set().union(*(set(d["task_id"]) for _, d in parts)))
    out: dict[str, object] = {"n_pairs": sum(len(d) for _, d in parts), "n_tasks": len(tasks), "diff": math.nan, "se_task": math.nan,
           "df": len(tasks) - 1 if len(tasks) >= 2 else math.nan, "ci_low": math.nan, "ci_high": math.nan,
           "p_unadjusted": math.nan, "t": math.nan, "note": ""}
    if any(d.empty for _, d in parts) or len(tasks) < 2:
        return out | {"note": f"no test: a comparison has no pairs, or {len(tasks)} task(s) with pairs"}
    mean = sum(coef * float(d["d"].mean()) for coef, d in parts)
    influence = pd.Series(0.0, index=tasks)
    per_task = pd.Series(0.0, index=tasks)
    for coef, d in parts:
        centred = coef * (d["d"] - d["d"].mean()) / len(d)
        influence = influence.add(centred.groupby(d["task_id"].to_numpy()).sum(), fill_value=0.0)
        per_task = per_task.add(coef * d.groupby("task_id")["d"].mean(), fill_value=0.0)
    g = len(tasks)
    se = math.sqrt(g / (g - 1) * float((influence**2).sum()))
    if not se > plan.zero_tolerance * max(1.0, abs(mean)):
        p, _ = sign_flip_p(per_task, pd.Series(per_task.index), 1000, plan.sign_flip_seed, plan.exact_flips,
                           plan.zero_tolerance)
        return out | {"diff": mean, "se_task": 0.0, "p_unadjusted": p, "t": math.copysign(math.inf, mean) if mean else 0.0,
                      "note": "zero spread between tasks: no t; p is the exact sign-flip p"}
    t_crit = float(scipy_stats.t.ppf(0.975, g - 1))
    return out | {"diff": mean, "se_task": se, "ci_low": mean - t_crit * se, "ci_high": mean + t_crit * se,
                  "t": mean / se, "p_unadjusted": float(2 * scipy_stats.t.sf(abs(mean / se), g - 1))}


def claim_p(result: dict[str, object], direction: str, margin_sd: float, margin: float = 0.0) -> float:
    """The p a test contributes to the procedure in its `direction` (module docstring)."""
    p, t = float(result["p_unadjusted"]), float(result["t"])  # type: ignore[arg-type]
    if math.isnan(p):
        return math.nan
    if direction == "equivalent":
        return tost_p(t, int(result["n_tasks"]), margin_sd)  # type: ignore[call-overload]
    if direction == "not-greater":
        diff, se, df = (float(result[k]) for k in ("diff", "se_task", "df"))  # type: ignore[arg-type]
        if not se > 0:
            return p if diff < margin else 1.0
        shifted = (diff - margin) / se
        return float(2 * scipy_stats.t.sf(abs(shifted), df)) if shifted < 0 else 1.0
    if direction == "greater":
        return p if t > 0 else 1.0
    if direction == "less":
        return p if t < 0 else 1.0
    return p


def _label(contrast: Contrast) -> str:
    terms = [("- " if coef < 0 else "+ ") + ("" if abs(coef) == 1 else f"{abs(coef):.3g} x ") + f"({a} - {b})"
             for a, b, coef in contrast]
    return " ".join(terms).removeprefix("+ ")


def _hypothesis_row(grid: pd.DataFrame, h: Hypothesis, plan: AnalysisPlan) -> dict[str, object]:
    """A hypothesis's test; an intersection's p is the largest of its comparisons' (an
    intersection-union test, declared only when every comparison is), its estimate and
    interval the binding comparison's, every comparison listed in `comparisons`."""
    found = hypothesis_contrasts(h, plan.variants)
    present = set(grid.columns.get_level_values("variant"))
    pooled = len(found) == 1 and len(found[0]) > 1 and not h.relative_to
    row: dict[str, object] = {"hypothesis": h.name, "family": h.family, "metric": h.metric, "a": h.a, "b": h.b,
                              "composition": "intersection" if h.intersection else "pooled" if pooled
                              else h.a.split("-")[-1],
                              "component": h.claim, "direction": h.direction, "claim": h.claim}
    if h.direction == "equivalent":
        row |= {"tost_margin": h.margin_sd, "tost_power": tost_power(plan.planned_tasks, h.margin_sd, plan.alpha)}
    if (not all(a in present and b in present for c in found for a, b, _ in c)
            or h.metric not in grid.columns.levels[0]):
        return row | {"note": ABSENT}
    results = [contrast_test(grid, c, h.metric, plan) for c in found]
    ps = [claim_p(r, h.direction, h.margin_sd, h.margin) for r in results]
    binding = int(np.argmax([1.0 if math.isnan(p) else p for p in ps]))
    listed = "; ".join(f"{_label(c)}: {float(r['diff']):+.3g} (p {p:.3g})"  # type: ignore[arg-type]
                       for c, r, p in zip(found, results, ps))
    p_test = math.nan if any(math.isnan(p) for p in ps) else max(ps)
    parts = tuple((c, float(r["diff"]), float(r["se_task"]), float(r["df"])) for c, r in zip(found, results))  # type: ignore[arg-type]
    return row | results[binding] | {"p_test": p_test, "comparisons": listed, "parts": parts}


def _exploratory_rows(grid: pd.DataFrame, plan: AnalysisPlan, claimed: set[tuple[str, str, str]]) -> list[dict]:
    present, rows = set(grid.columns.get_level_values("variant")), []
    for test in planned_tests(plan).to_dict("records"):
        if (test["a"], test["b"], test["metric"]) in claimed:
            continue
        row = test | {"hypothesis": "", "direction": "two-sided", "claim": ""}
        if test["a"] in present and test["b"] in present and test["metric"] in grid.columns.levels[0]:
            result = difference_test(pair_differences(grid, [(test["a"], test["b"])], test["metric"]), plan)
            rows.append(row | result | {"p_test": result["p_unadjusted"]})
        else:
            rows.append(row | {"note": ABSENT})
    return rows


def synergy_rows(grid: pd.DataFrame, plan: AnalysisPlan, tests: Sequence[SynergyTest] | None = None) -> list[dict]:
    """The synergy tests (`planning.synergy`; default: the plan's), each as a row: an
    intersection's p is the largest of its comparisons' and its row the binding comparison's,
    as for a hypothesis. In `study_decisions` they are exploratory tests of the plan."""
    present, rows = set(grid.columns.get_level_values("variant")), list[dict]()
    for test in synergy_tests(plan.variants) if tests is None else tests:
        row: dict[str, object] = {"hypothesis": "", "family": SYNERGY_FAMILY, "composition": test.team.split("-")[-1],
               "metric": test.metric, "a": test.team, "b": "single", "component": test.claim,
               "direction": test.direction, "claim": ""}
        if not {v for c in test.contrasts for a, b, _ in c for v in (a, b)} <= present \
                or test.metric not in grid.columns.levels[0]:
            rows.append(row | {"note": ABSENT})
            continue
        results = [contrast_test(grid, c, test.metric, plan) for c in test.contrasts]
        ps = [claim_p(r, test.direction, plan.equivalence_margin_sd) for r in results]
        binding = int(np.argmax([1.0 if math.isnan(p) else p for p in ps]))
        b = test.contrasts[binding][0][1] if test.kind != "weak" else f"mean of {', '.join(test.alone)}"
        listed = "; ".join(f"{_label(c)}: {float(r['diff']):+.3g} (p {p:.3g})"  # type: ignore[arg-type]
                           for c, r, p in zip(test.contrasts, results, ps))
        rows.append(row | results[binding] | {"b": b, "comparisons": listed,
                                              "p_test": math.nan if any(math.isnan(p) for p in ps) else max(ps)})
    return rows


def _decision(declared: bool, direction: str, power: float, reached: bool, level: float, target: float) -> str:
    if declared:
        return "declared" if direction != "equivalent" else "declared equivalent"
    if not reached:
        return "not reached (no level passed to it)"
    if direction == "equivalent":
        if power >= target:
            return "not shown equivalent"
        return f"inconclusive (TOST power {power:.0%} at the level it got, {level:.3g}, < {target:.0%})"
    return "not declared"


def study_decisions(table: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Every planned test with its procedure-adjusted p and decision (module docstring)."""
    claimed = {(c[0][0], c[0][1], h.metric) for h in plan.hypotheses
               for c in hypothesis_contrasts(h, plan.variants) if len(c) == 1 and not h.intersection}
    table = check_scores(table, [m for m in plan.metrics if m in table.columns])  # floats (a bool with NA too)
    grid = score_grid(table, list(plan.metrics))
    rows = [_hypothesis_row(grid, h, plan) for h in plan.hypotheses] + _exploratory_rows(grid, plan, claimed) \
        + synergy_rows(grid, plan)
    out = pd.DataFrame(rows).reindex(columns=[*DECISION_COLUMNS, "t", "parts"])
    for column in ("a", "b", "metric", "family", "component", "hypothesis", "direction", "claim"):
        if column in out.columns and out.empty:  # no planned test in this grid: text columns stay text
            out[column] = out[column].astype(object)
    labels = {(t["a"], t["b"], t["metric"]): t["component"] for t in planned_tests(plan).to_dict("records")}
    out["component"] = [labels.get((a, b, m), c) for a, b, m, c in zip(out["a"], out["b"], out["metric"],
                                                                       out["component"])]
    weights, g = study_graph(plan.hypotheses, len(out) - len(plan.hypotheses))
    p = out["p_test"].astype("float64").to_numpy()
    out["p_adjusted"] = graph_adjusted(p, weights, g)
    declared, local = graph_reject(p, weights, g, plan.alpha)
    out["declared"] = declared & (out["p_adjusted"].to_numpy() <= plan.alpha)
    out["local_alpha"] = local * plan.alpha
    exploratory = out["hypothesis"] == ""
    out.loc[exploratory, "family"] = [f"exploratory: {family}" for family in out.loc[exploratory, "family"]]
    equivalence = out["direction"] == "equivalent"
    out.loc[equivalence, "tost_power"] = [  # power at the level the procedure gave it, at the tasks it had
        tost_power(int(n) if n == n else plan.planned_tasks, float(m), lv) if lv > 0 else math.nan
        for n, m, lv in zip(out.loc[equivalence, "n_tasks"], out.loc[equivalence, "tost_margin"],
                            out.loc[equivalence, "local_alpha"])]
    out["decision"] = [_decision(bool(d), str(k), float(pw) if pw == pw else math.nan, lv > 0 or bool(d), lv,
                                 plan.power_target)
                       for d, k, pw, lv in zip(out["declared"], out["direction"], out["tost_power"],
                                               out["local_alpha"])]
    level = out["local_alpha"].to_numpy(float)
    df, se, diff = (out[c].astype("float64").to_numpy() for c in ("df", "se_task", "diff"))
    with np.errstate(invalid="ignore", divide="ignore"):
        half = np.where(level > 0, scipy_stats.t.ppf(1 - np.maximum(level, 1e-300) / 2, df) * se, np.nan)
    out["sim_ci_low"], out["sim_ci_high"] = diff - half, diff + half
    out["interval"] = np.where(level > 0, [f"the interval at the level this test got ({lv:.3g}): no joint coverage"
                                           for lv in level], "not reached: undecided, no interval")
    return out.drop(columns="t")


def equivalence_verdict(d: pd.DataFrame, margin_sd: float, alpha: float) -> dict[str, object]:
    """The standardised TOST of differences `d` (task_id, d): equivalent within `margin_sd`
    between-task SDs of the task means? With its power at this many tasks (true difference 0):
    not shown equivalent at low power is "inconclusive", never "no difference"."""
    tasks = int(d["task_id"].nunique())
    means = d.groupby("task_id")["d"].mean()
    sd = float(means.std(ddof=1)) if tasks >= 2 else math.nan
    t = float(means.mean() / (sd / math.sqrt(tasks))) if sd > 0 else math.nan
    p, power = tost_p(t, tasks, margin_sd), tost_power(tasks, margin_sd, alpha)
    if p <= alpha:
        verdict = "equivalent"
    elif power >= 0.8:
        verdict = "not shown equivalent"
    else:
        verdict = f"inconclusive (TOST power {power:.0%} < 80%)" if power == power else "inconclusive"
    return {"margin": margin_sd * sd if sd == sd else math.nan, "margin_sd": margin_sd, "p_tost": p,
            "tost_power": power, "verdict": verdict}
