"""Power for the rule actually used: the whole decision procedure, simulated.

A per-test power formula answers "would this one test reject at this level?"; the plan's
decisions come from a graph that passes alpha on only after other claims are declared. So
power here is P(a hypothesis is declared by the procedure), simulated: draw whole grids at
`tasks` x `seeds` for every variant the hypotheses compare, run each hypothesis's test (the
task-level t, as `colabkit.analysis.inference.decisions.decide` does: with equal seeds the CR1 t is the
one-sample t on task means) and the plan's graph (`graph_reject`), and count.

**Data shape** (`DataShape`): per session y = location(variant) + task + task x variant +
noise. "bounded" (the study's: zero/one-inflated scores in [0, 1]) clips that latent at 0 and
1, with the spreads of `benchmarks/inference.py`'s bounded model (task SD 0.8, interaction SD
0.3, noise SD 1, in units of 0.57 of the score: 57% of the sessions at exactly 0 or 1 when
the mean is 0.7, 50% at 0.5, 61% at 0.76); each variant's location is solved so that its
*clipped* mean is the planned mean. `BOUNDED_SHAPES` adds two other zero/one-inflated
shapes with the same means (66% and 36% at 0 or 1 at a mean of 0.7), and
`colabkit.analysis.inference.power_analysis.pilot` a shape whose spreads are estimated from
a pilot's sessions. `missing` (in `simulate_p` and what calls it) drops that share of
sessions at random; every test then uses every pair still available. Work counts (W_total, W_human) are rounded at 0 with task SD 2, interaction SD 0.5,
noise SD 2 actions. "gaussian" uses the same spreads unclipped (a check against the closed
form: `power_of`).

**Effects** (`paper_means`): the seed paper's published means (`colabkit.analysis.reference`),
with the stated gaps filled by stated assumptions: Memory's H_init,norm = Default's + 0.27
(the low end of the reported +0.27 to +0.40), Memory's Performance = Default's except R
(0.64, reported), every unreported Preassigned value = Default's, every unreported value of
the variants = Default's, Dynamic = Scaffolded.

A hypothesis's null is true when its variants' planned means do not differ in its direction
(for equivalence: when they differ by at least its margin); `familywise_error` counts grids
with any true null declared.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd
from scipy import integrate, optimize
from scipy import stats as scipy_stats

from colabkit.analysis.inference.decisions.decide import tost_p
from colabkit.analysis.inference.planning.graph import graph_reject
from colabkit.analysis.inference.planning.hypotheses import (
    Contrast,
    Hypothesis,
    hypothesis_contrasts,
    study_graph,
)
from colabkit.analysis.inference.planning.plan import AnalysisPlan
from colabkit.analysis.reference import seed_paper

COUNT_METRICS = ("w_total", "w_human")
ARCHAEOLOGY_TASKS, DISCOVERYBENCH_REAL_TASKS = 38, 264


@dataclass(frozen=True)
class DataShape:
    """How sessions are drawn (module docstring)."""

    kind: str = "bounded"
    task_sd: float = 0.8
    interaction_sd: float = 0.3
    noise_sd: float = 1.0
    scale: float = 0.566
    """Latent units per unit of score (bounded: `benchmarks/inference.py`'s one-cut)."""
    count_sds: tuple[float, float, float] = (2.0, 0.5, 2.0)


BOUNDED_SHAPES: dict[str, DataShape] = {
    "bounded (57% at 0/1)": DataShape(),
    "bounded, heavier at 0/1 (66%), more task x variant spread": DataShape(task_sd=0.4, interaction_sd=0.45,
                                                                           noise_sd=1.6),
    "bounded, lighter at 0/1 (36%)": DataShape(task_sd=0.5, interaction_sd=0.2, noise_sd=0.6),
}
"""Zero/one-inflated shapes with the same means (share of sessions at exactly 0 or 1 when the
mean is 0.7): the power table is reported over all of them, not one assumed shape."""


def paper_means(variants: Sequence[str]) -> dict[str, dict[str, float]]:
    """The planned mean of every metric for `variants` (module docstring's assumptions)."""
    table = seed_paper()["table"]
    means: dict[str, dict[str, float]] = {}
    for variant in variants:
        structure, _, composition = variant.partition("-")
        default = {k: v for k, v in table.get(f"default-{composition}", table["default-dr"]).items() if v is not None}
        if structure in ("default", "scaffolded", "single"):
            base = default | {k: v for k, v in table.get(variant, {}).items() if v is not None}
        elif structure == "dynamic":
            base = {**default, **{k: v for k, v in table.get(f"scaffolded-{composition}", {}).items() if v is not None}}
        else:
            base = dict(default)
            if structure == "memory":
                base["h_init_norm"] = default["h_init_norm"] + 0.27
                base |= {k: v for k, v in table.get(variant, {}).items() if v is not None}
        base.setdefault("w_total", table["default-dr"]["w_total"])
        base.setdefault("w_human", table["default-dr"]["w_human"] if structure != "single" else 0.0)
        base.setdefault("h_init_norm", 0.5)
        means[variant] = base
    return means


def _clipped_mean(location: float, sd: float) -> float:
    return float(integrate.quad(lambda x: scipy_stats.norm.sf(x, location, sd), 0.0, 1.0)[0])


@cache
def latent_location(mean: float, sd: float) -> float:
    """The latent location whose clip to [0, 1] has `mean` (bounded shape)."""
    mean = min(max(mean, 1e-4), 1 - 1e-4)
    return float(optimize.brentq(lambda loc: _clipped_mean(loc, sd) - mean, -20 * sd - 1, 20 * sd + 2))


def _draw(rng: np.random.Generator, means: dict[str, float], metric: str, shape: DataShape, reps: int,
          tasks: int, seeds: int) -> dict[str, np.ndarray]:
    """Per variant, scores (reps, tasks, seeds) of one metric."""
    count = metric in COUNT_METRICS
    sds = shape.count_sds if count else tuple(s * shape.scale for s in
                                              (shape.task_sd, shape.interaction_sd, shape.noise_sd))
    total = math.sqrt(sum(s * s for s in sds))
    task = rng.normal(0, sds[0], (reps, tasks, 1))
    out = {}
    for variant, mean in means.items():
        bounded = shape.kind == "bounded" and not count
        location = latent_location(mean, total) if bounded else mean
        y = location + task + rng.normal(0, sds[1], (reps, tasks, 1)) + rng.normal(0, sds[2], (reps, tasks, seeds))
        out[variant] = np.clip(y, 0, 1) if bounded else (np.maximum(np.rint(y), 0) if count else y)
    return out


def contrast_estimate(parts: Sequence[tuple[float, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, SE, tasks with a pair) per replicate of a contrast: `parts` are (coefficient,
    paired differences (reps, tasks, seeds), NaN where a pair is missing); each comparison's
    mean over its own available pairs, the SE task-clustered (CR1 over the per-task sums of
    every comparison's influence), as `decide.contrast_test`. Complete data give the
    one-sample t on the task means exactly."""
    estimate = np.zeros(parts[0][1].shape[0])
    influence = np.zeros(parts[0][1].shape[:2])
    seen = np.zeros(parts[0][1].shape[:2], dtype=bool)
    for coef, d in parts:
        present = ~np.isnan(d)
        n = present.sum(axis=(1, 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.nansum(d, axis=(1, 2)) / n
            centred = np.where(present, d - mean[:, None, None], 0.0)
            influence += coef * centred.sum(axis=2) / n[:, None]
        estimate += coef * mean
        seen |= present.any(axis=2)
    g = seen.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(g / (g - 1) * (influence**2).sum(axis=1))
    return estimate, se, g


def _test_p(h: Hypothesis, estimate: np.ndarray, se: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The p each replicate's test of one contrast of `h` contributes (`decide.claim_p`)."""
    df = np.maximum(g - 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, estimate / se, np.sign(estimate) * np.inf)
    p = 2 * scipy_stats.t.sf(np.abs(t), df)
    if h.direction == "greater":
        return np.where(t > 0, p, 1.0)
    if h.direction == "less":
        return np.where(t < 0, p, 1.0)
    if h.direction == "not-greater":
        with np.errstate(divide="ignore", invalid="ignore"):
            shifted = np.where(se > 0, (estimate - h.margin) / se, np.sign(estimate - h.margin) * np.inf)
        return np.where(shifted < 0, 2 * scipy_stats.t.sf(np.abs(shifted), df), 1.0)
    if h.direction == "equivalent":
        return np.array([tost_p(float(x), int(n), h.margin_sd) for x, n in zip(t, g)])
    return p


def _differences(scores: dict[str, np.ndarray], contrast: Contrast) -> list[tuple[float, np.ndarray]]:
    return [(coef, scores[a] - scores[b]) for a, b, coef in contrast]


def difference_sd(metric: str, shape: DataShape, seeds: int) -> float:
    """The SD of a task's mean paired difference under `shape`, unclipped (the equivalence scale)."""
    sds = shape.count_sds if metric in COUNT_METRICS else tuple(
        s * shape.scale for s in (shape.task_sd, shape.interaction_sd, shape.noise_sd))
    return math.sqrt(2 * sds[1] ** 2 + 2 * sds[2] ** 2 / seeds)


def _effect(contrast: Contrast, means: dict[str, dict[str, float]], metric: str) -> float:
    return float(sum(coef * (means[a][metric] - means[b][metric]) for a, b, coef in contrast))


def planned_effect(h: Hypothesis, means: dict[str, dict[str, float]], variants: Sequence[str]) -> float:
    """`h`'s effect under `means`: its contrast's, or an intersection's least favourable one."""
    effects = [_effect(c, means, h.metric) for c in hypothesis_contrasts(h, variants)]
    worst = {"greater": min, "less": max, "not-greater": max}.get(h.direction, lambda e: e[0])
    return float(worst(effects))


def null_true(h: Hypothesis, means: dict[str, dict[str, float]], variants: Sequence[str],
              shape: DataShape = DataShape(), seeds: int = 3) -> bool:
    """Whether `h`'s null holds under the planned `means` (for equivalence: the effect is at
    least `margin_sd` SDs of the task-mean difference, `difference_sd`; an intersection's
    when any of its comparisons' does)."""
    effects = [_effect(c, means, h.metric) for c in hypothesis_contrasts(h, variants)]
    if h.direction == "equivalent":
        return any(abs(e) >= h.margin_sd * difference_sd(h.metric, shape, seeds) for e in effects)
    tests = {"greater": lambda e: e <= 1e-12, "less": lambda e: e >= -1e-12,
             "not-greater": lambda e: e >= h.margin - 1e-12, "two-sided": lambda e: abs(e) <= 1e-12}
    return any(tests[h.direction](e) for e in effects)


def simulate_p(plan: AnalysisPlan, means: dict[str, dict[str, float]], shape: DataShape = DataShape(),
               tasks: int | None = None, seeds: int | None = None, reps: int = 500, seed: int = 0,
               missing: float = 0.0) -> np.ndarray:
    """(reps, hypotheses): the p each hypothesis's test contributes to the procedure, per grid;
    `missing`: the share of sessions missing at random (each test uses every available pair)."""
    tasks, seeds = tasks or plan.planned_tasks, seeds or plan.planned_seeds
    rng = np.random.default_rng(seed)
    hypotheses = plan.hypotheses
    p = np.ones((reps, len(hypotheses)))
    for metric in dict.fromkeys(h.metric for h in hypotheses):
        wanted = {v for h in hypotheses if h.metric == metric for c in hypothesis_contrasts(h, plan.variants)
                  for a, b, _ in c for v in (a, b)}
        scores = _draw(rng, {v: means[v][metric] for v in sorted(wanted)}, metric, shape, reps, tasks, seeds)
        if missing > 0:
            scores = {v: np.where(rng.random(y.shape) < missing, np.nan, y) for v, y in scores.items()}
        for i, h in enumerate(hypotheses):
            if h.metric == metric:
                ps = [_test_p(h, *contrast_estimate(_differences(scores, c)))
                      for c in hypothesis_contrasts(h, plan.variants)]
                p[:, i] = np.nan_to_num(np.max(ps, axis=0), nan=1.0)
    return p


def simulated_scores(plan: AnalysisPlan, means: dict[str, dict[str, float]] | None = None,
                     shape: DataShape = DataShape(), tasks: int | None = None, seeds: int | None = None,
                     seed: int = 0, missing: float = 0.0) -> pd.DataFrame:
    """One simulated grid as a score table (one row per session, the analysis layer's
    columns) for the plan's variants and metrics under `means` (default: the paper's):
    the same draws `simulate_p` tests, for checks that run the real tables on it."""
    tasks, seeds = tasks or plan.planned_tasks, seeds or plan.planned_seeds
    means = means or paper_means(plan.variants)
    rng = np.random.default_rng(seed)
    metrics = [m for m in plan.metrics if all(m in means[v] for v in plan.variants)]
    columns = {m: _draw(rng, {v: means[v][m] for v in plan.variants}, m, shape, 1, tasks, seeds) for m in metrics}
    rows = []
    for variant in plan.variants:
        structure, _, composition = variant.partition("-")
        for t in range(tasks):
            for s in range(seeds):
                values = {m: float(columns[m][variant][0, t, s]) for m in metrics}
                if variant == "single":
                    values |= {m: math.nan for m in ("h_init_norm", "w_human") if m in values}
                if missing and rng.random() < missing:
                    values = dict.fromkeys(values, math.nan)
                rows.append({"session_id": f"{variant}/{t}/{s}", "task_id": f"task-{t:03d}", "variant": variant,
                             "structure": structure, "composition": composition or "none", "seed": s, **values})
    return pd.DataFrame(rows)


def declared_by(p: np.ndarray, hypotheses: Sequence[Hypothesis], alpha: float) -> np.ndarray:
    """(reps, hypotheses) booleans: what the graph of `hypotheses` declares from each row of `p`."""
    weights, g = study_graph(hypotheses, 0)
    return np.array([graph_reject(row, weights, g, alpha)[0] for row in p]).reshape(p.shape)


def simulate_declared(plan: AnalysisPlan, means: dict[str, dict[str, float]], shape: DataShape = DataShape(),
                      tasks: int | None = None, seeds: int | None = None, reps: int = 500,
                      seed: int = 0, missing: float = 0.0) -> np.ndarray:
    """(reps, hypotheses) booleans: which hypotheses the plan's procedure declares in each grid.

    The exploratory tests never pass level back to a hypothesis, so the hypotheses' decisions
    are simulated exactly without them."""
    return declared_by(simulate_p(plan, means, shape, tasks, seeds, reps, seed, missing), plan.hypotheses,
                       plan.alpha)


def procedure_power(plan: AnalysisPlan, means: dict[str, dict[str, float]] | None = None,
                    shape: DataShape = DataShape(), tasks: int | None = None, seeds: int | None = None,
                    reps: int = 500, seed: int = 0, missing: float = 0.0) -> pd.DataFrame:
    """Per hypothesis: P(declared) by the whole procedure, its Monte Carlo SE, the planned
    effect and whether its null is true under `means` (default: the paper's)."""
    means = means or paper_means(plan.variants)
    declared = simulate_declared(plan, means, shape, tasks, seeds, reps, seed, missing)
    rate = declared.mean(axis=0)
    rows = []
    for i, h in enumerate(plan.hypotheses):
        effect = planned_effect(h, means, plan.variants)
        rows.append({"hypothesis": h.name, "metric": h.metric, "direction": h.direction, "planned_effect": effect,
                     "null_true": null_true(h, means, plan.variants, shape, seeds or plan.planned_seeds),
                     "p_declared": float(rate[i]),
                     "mc_se": math.sqrt(rate[i] * (1 - rate[i]) / reps)})
    return pd.DataFrame(rows).assign(tasks=tasks or plan.planned_tasks, seeds=seeds or plan.planned_seeds,
                                     reps=reps, shape=shape.kind, missing=missing)


def familywise_error(plan: AnalysisPlan, means: dict[str, dict[str, float]], shape: DataShape = DataShape(),
                     tasks: int | None = None, seeds: int | None = None, reps: int = 500,
                     seed: int = 0, missing: float = 0.0) -> tuple[float, float]:
    """(P(any true null declared), its Monte Carlo SE) under `means`."""
    nulls = np.array([null_true(h, means, plan.variants, shape, seeds or plan.planned_seeds)
                      for h in plan.hypotheses])
    declared = simulate_declared(plan, means, shape, tasks, seeds, reps, seed, missing)
    rate = float((declared[:, nulls].any(axis=1)).mean()) if nulls.any() else 0.0
    return rate, math.sqrt(rate * (1 - rate) / reps)


def tasks_for_power(plan: AnalysisPlan, means: dict[str, dict[str, float]] | None = None,
                    shape: DataShape = DataShape(), target: float = 0.8, reps: int = 300,
                    grid: Sequence[int] = (38, 76, 114, 152, 264, 528), seed: int = 0) -> pd.DataFrame:
    """Per hypothesis with a true effect: the fewest tasks of `grid` at which the procedure
    declares it with probability >= `target` (NaN beyond the grid), flagged where that is more
    than the 38 archaeology tasks and more than DiscoveryBench's 264 real tasks in all."""
    means = means or paper_means(plan.variants)
    found: dict[str, float] = {h.name: math.nan for h in plan.hypotheses}
    for tasks in sorted(grid):
        declared = simulate_declared(plan, means, shape, tasks, plan.planned_seeds, reps, seed).mean(axis=0)
        for h, rate in zip(plan.hypotheses, declared):
            if math.isnan(found[h.name]) and rate >= target:
                found[h.name] = tasks
    rows = [{"hypothesis": h.name, "null_true": null_true(h, means, plan.variants, shape, plan.planned_seeds),
             "tasks_needed": found[h.name],
             "beyond_archaeology": not found[h.name] <= ARCHAEOLOGY_TASKS,
             "other_domain_tasks_needed": max(0.0, found[h.name] - ARCHAEOLOGY_TASKS)
             if found[h.name] == found[h.name] else math.nan,
             "within_discoverybench_real": found[h.name] <= DISCOVERYBENCH_REAL_TASKS}
            for h in plan.hypotheses]
    return pd.DataFrame(rows).assign(seeds=plan.planned_seeds, target=target, reps=reps, shape=shape.kind,
                                     grid=", ".join(map(str, sorted(grid))))
