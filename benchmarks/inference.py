"""Do the reported tests hold their level? A null simulation over synthetic grids.

Each grid is one contrast of the study's design: 38 tasks x 3 seeds x 2 variants, with no
true effect, a task effect (SD 0.15), a task x variant interaction (SD 0.05 per variant:
the effect of the structure differs between tasks) and session noise (SD 0.08); 5% of the
sessions are missing at random (a failed session or judge), so the pairs are unbalanced as
real grids are. Each grid is analysed by the suite's own functions and every test is asked
at alpha 0.05; a test that holds its level rejects in 5% of the grids (target 0.04-0.06).

Reported tests (`colabkit.analysis.inference.decisions.contrasts`):
- task-clustered: the confirmatory test, CR1 task-clustered SE, t on G - 1 df;
- random slope: the mixed model with a random treatment slope by task, several optimisers,
  t on G - 1 df (each fit costs 2-4 optimiser runs: fewer grids, wider Monte Carlo error).
The tests the suite reported before, for comparison (not reported any more):
- naive paired: the paired t test over all (task, seed) pairs (seeds as replicates);
- random intercept: statsmodels' `metric ~ treated + (1 | task)`, its own p (normal).

Bounded data (issue 30): Performance as the study has it, in [0, 1] with about half exact zeros
and a third exact ones (a latent normal with a task effect, SD 0.8, and a task x variant
effect, SD 0.3, cut at 0 and at the 2/3 quantile, linear between), no true effect. On it:
- the task-clustered t and the studentized sign-flip test (`colabkit.analysis.inference.estimation.signflip`,
  `--flips` random flips: the p resolution is 1 / (flips + 1)), each at alpha 0.05;
- the familywise error of a Holm family of 21 null contrasts (7 metrics x 3 compositions: 21
  bounded contrasts sharing the grid's tasks and their difficulty) at alpha 0.05, for each test.
The family's contrasts are computed by a numpy path (the same CR1 t and sign-flip statistic);
the first grids are checked against the suite's `task_contrast` and the run stops if they differ.

Printed per test: grids, rejection rate, its Monte Carlo SE sqrt(p(1-p)/n) and 95% Monte Carlo
interval of the nominal level (0.05 +/- 1.96 SE), the mean reported SE against the actual SD of
the estimate over the grids.

    PYTHONPATH=. .venv/bin/python benchmarks/inference.py [--grids 2000] [--mixed-grids 300]
        [--bounded-grids 2000] [--family-grids 500] [--flips 999] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from colabkit.analysis.inference.decisions.contrasts import mixed_model_contrast, paired_differences, task_contrast
from colabkit.analysis.inference.estimation.signflip import sign_flip_p
from colabkit.analysis.inference.planning.families import holm

TASKS, SEEDS = 38, 3
TASK_SD, INTERACTION_SD, NOISE_SD, MISSING = 0.15, 0.05, 0.08, 0.05
A, B, METRIC = "scaffolded-dr", "default-dr", "performance"
RESULTS = Path(__file__).resolve().parent / "results"
LATENT_TASK_SD, LATENT_INTERACTION_SD, FAMILY = 0.8, 0.3, 21
_LATENT_SD = math.sqrt(LATENT_TASK_SD**2 + LATENT_INTERACTION_SD**2 + 1)
LABELS = np.array([f"t{i}" for i in range(TASKS)])
ZERO_CUT, ONE_CUT = 0.0, _LATENT_SD * float(stats.norm.ppf(2 / 3))  # about 1/2 zeros, 1/3 ones


def bounded_scores(rng: np.random.Generator, task: np.ndarray) -> np.ndarray:
    """(tasks, 2 variants, seeds) bounded, zero/one-inflated scores with no true effect; NaN missing."""
    latent = task[:, None, None] + rng.normal(0, LATENT_INTERACTION_SD, (TASKS, 2, 1)) + rng.normal(0, 1, (TASKS, 2, SEEDS))
    y = np.clip((latent - ZERO_CUT) / (ONE_CUT - ZERO_CUT), 0.0, 1.0)
    y[rng.random(y.shape) < MISSING] = np.nan
    return y


def as_table(y: np.ndarray) -> pd.DataFrame:
    """A (tasks, 2, seeds) array in the score table's format."""
    t, v, s = (a.ravel() for a in np.meshgrid(np.arange(TASKS), np.arange(2), np.arange(SEEDS), indexing="ij"))
    variant = np.where(v == 0, A, B)
    return pd.DataFrame({"session_id": [f"{x}-t{i}-s{j}" for x, i, j in zip(variant, t, s)],
                         "task_id": [f"t{i}" for i in t], "variant": variant,
                         "structure": [x.split("-")[0] for x in variant], "composition": "dr", "seed": s,
                         METRIC: y.ravel()})


def fast_contrast(y: np.ndarray, flips: int, seed: int) -> tuple[float, float, float, float]:
    """(diff, se_task, p of the clustered t, sign-flip p) of A - B on a (tasks, 2, seeds) array."""
    d = y[:, 0, :] - y[:, 1, :]
    keep = ~np.isnan(d)
    task = np.broadcast_to(np.arange(TASKS)[:, None], d.shape)[keep]
    values = d[keep]
    counts = np.bincount(task, minlength=TASKS).astype(float)
    sums = np.bincount(task, values, minlength=TASKS)
    present = counts > 0
    sums, counts = sums[present], counts[present]
    g, n = len(sums), counts.sum()
    mean = sums.sum() / n
    se = math.sqrt(g / (g - 1) * float(((sums - counts * mean) ** 2).sum())) / n
    p_t = float(2 * stats.t.sf(abs(mean / se), g - 1)) if se > 0 else math.nan
    p_flip, _ = sign_flip_p(pd.Series(values), pd.Series(LABELS[task]), flips=flips, seed=seed)  # the suite's task order
    return float(mean), se, p_t, p_flip


def interval(rate: float, n: int, nominal: float = 0.05) -> dict[str, float]:
    """The rate's Monte Carlo SE and the 95% Monte Carlo interval of the nominal level."""
    half = 1.96 * math.sqrt(nominal * (1 - nominal) / n)
    return {"mc_se": math.sqrt(rate * (1 - rate) / n), "nominal_low": nominal - half, "nominal_high": nominal + half,
            "within": nominal - half <= rate <= nominal + half}


def bounded_runs(rng: np.random.Generator, grids: int, family_grids: int, flips: int) -> list[dict[str, object]]:
    """Level of the t and sign-flip tests on bounded data, and the familywise error under Holm."""
    single: dict[str, list[tuple[float, float, float]]] = {"t": [], "flip": []}
    zeros = ones = cells = 0
    for i in range(grids):
        y = bounded_scores(rng, rng.normal(0, LATENT_TASK_SD, TASKS))
        diff, se, p_t, p_flip = fast_contrast(y, flips, i)
        if i < 20:  # the numpy path is the suite's test (the plan's flip seed, 0)
            suite = task_contrast(as_table(y), A, B, METRIC, flips=flips)
            mine = fast_contrast(y, flips, 0)
            theirs = [float(suite[k]) for k in ("se_task", "p_unadjusted", "p_signflip")]  # type: ignore[arg-type]
            if not np.allclose(theirs, mine[1:], rtol=1e-9):
                raise SystemExit(f"numpy path differs from task_contrast on grid {i}")
        single["t"].append((diff, se, p_t))
        single["flip"].append((diff, se, p_flip))
        finite = y[~np.isnan(y)]
        zeros, ones, cells = zeros + int((finite == 0).sum()), ones + int((finite == 1).sum()), cells + finite.size
    familywise: dict[str, int] = {"t": 0, "flip": 0}
    for i in range(family_grids):
        task = rng.normal(0, LATENT_TASK_SD, TASKS)  # the family's contrasts share the grid's tasks
        results = [fast_contrast(bounded_scores(rng, task), flips, 10**6 + i * FAMILY + k) for k in range(FAMILY)]
        for name, column in (("t", 2), ("flip", 3)):
            familywise[name] += bool(holm(np.array([r[column] for r in results]))[1].any())
    rows = [summarise("bounded: task-clustered t", single["t"], True),
            summarise(f"bounded: sign-flip ({flips} flips)", single["flip"], True)]
    for row in rows:
        row |= interval(float(row["rejection_rate"]), len(single["t"]))  # type: ignore[arg-type]
    for name, label in (("t", "task-clustered t"), ("flip", "sign-flip")):
        rate = familywise[name] / family_grids
        rows.append({"test": f"bounded: familywise error, Holm over {FAMILY}, {label}", "reported": True,
                     "grids": family_grids, "failed": 0, "rejection_rate": rate, **interval(rate, family_grids)})
    rows[0]["share_zero"], rows[0]["share_one"] = zeros / cells, ones / cells
    return rows


def null_grid(rng: np.random.Generator) -> pd.DataFrame:
    """One synthetic grid of two variants, in the score table's format, with no true effect."""
    task = rng.normal(0, TASK_SD, TASKS)[:, None, None]
    interaction = rng.normal(0, INTERACTION_SD, (TASKS, 2))[:, :, None]
    y = 0.5 + task + interaction + rng.normal(0, NOISE_SD, (TASKS, 2, SEEDS))
    y[rng.random(y.shape) < MISSING] = np.nan
    return as_table(y)


def naive_paired(table: pd.DataFrame) -> tuple[float, float, float]:
    d = paired_differences(table, A, B, METRIC)["d"]
    se = float(d.std(ddof=1) / math.sqrt(len(d)))
    return float(d.mean()), se, float(2 * stats.t.sf(abs(d.mean() / se), len(d) - 1))


def random_intercept(table: pd.DataFrame) -> tuple[float, float, float]:
    import statsmodels.formula.api as smf

    data = table.dropna(subset=[METRIC]).assign(treated=lambda t: (t["variant"] == A).astype(float))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.mixedlm(f"{METRIC} ~ treated", data, groups=data["task_id"]).fit(reml=True)
    return float(fit.params["treated"]), float(fit.bse["treated"]), float(fit.pvalues["treated"])


def summarise(name: str, rows: list[tuple[float, float, float]], reported: bool) -> dict[str, object]:
    est, se, p = (np.array(x, dtype=float) for x in zip(*rows))
    ok = np.isfinite(p)
    rate = float((p[ok] < 0.05).mean())
    n = int(ok.sum())
    return {"test": name, "reported": reported, "grids": n, "failed": len(rows) - n, "rejection_rate": rate,
            "mc_se": math.sqrt(rate * (1 - rate) / n), "mean_reported_se": float(np.nanmean(se[ok])),
            "sd_of_estimate": float(np.std(est[ok], ddof=1))}


def report_bounded(rng: np.random.Generator, grids: int, family_grids: int, flips: int) -> list[dict[str, object]]:
    """Run and print the bounded part (`bounded_runs`)."""
    t0 = time.perf_counter()
    bounded = bounded_runs(rng, grids, family_grids, flips)
    print(f"bounded, zero/one-inflated grids ({bounded[0]['share_zero']:.2f} zeros, {bounded[0]['share_one']:.2f} ones); "
          f"alpha 0.05 ({time.perf_counter() - t0:.0f} s)")
    print(f"{'test':58} {'grids':>6} {'reject':>7} {'MC SE':>6}  95% MC interval of 0.05")
    for r in bounded:
        print(f"{r['test']:58} {r['grids']:>6} {r['rejection_rate']:>7.4f} {r['mc_se']:>6.4f}  "
              f"[{r['nominal_low']:.4f}, {r['nominal_high']:.4f}] {'within' if r['within'] else 'OUTSIDE'}")
    return bounded


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grids", type=int, default=2000, help="grids for the closed-form tests")
    parser.add_argument("--mixed-grids", type=int, default=300, help="of those, grids the mixed models fit")
    parser.add_argument("--bounded-grids", type=int, default=2000, help="bounded grids for the t and sign-flip level")
    parser.add_argument("--family-grids", type=int, default=500, help="grids of 21 bounded contrasts (familywise)")
    parser.add_argument("--flips", type=int, default=999, help="random sign flips per test")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    found: dict[str, list[tuple[float, float, float]]] = {k: [] for k in
                                                           ("clustered", "slope", "naive", "intercept")}
    flags: dict[str, int] = {}
    started, mixed_time = time.perf_counter(), 0.0
    for i in range(args.grids):
        table = null_grid(rng)
        c = task_contrast(table, A, B, METRIC, flips=1000)
        found["clustered"].append((float(c["diff"]), float(c["se_task"]), float(c["p_unadjusted"])))  # type: ignore[arg-type]
        found["naive"].append(naive_paired(table))
        if i < args.mixed_grids:
            t0 = time.perf_counter()
            m = mixed_model_contrast(table, A, B, METRIC)
            found["slope"].append((float(m["mixed_coef"]), float(m["mixed_se"]), float(m["mixed_p_unadjusted"])))  # type: ignore[arg-type]
            for flag in filter(None, str(m["mixed_flags"]).split(";")):
                flags[flag] = flags.get(flag, 0) + 1
            flags[f"optimiser={m['mixed_optimiser']}"] = flags.get(f"optimiser={m['mixed_optimiser']}", 0) + 1
            found["intercept"].append(random_intercept(table))
            mixed_time += time.perf_counter() - t0
    rows = [summarise("task-clustered (confirmatory)", found["clustered"], True),
            summarise("random slope (model-based)", found["slope"], True),
            summarise("naive paired (before)", found["naive"], False),
            summarise("random intercept (before)", found["intercept"], False)]
    print(f"null grids: {TASKS} tasks x {SEEDS} seeds x 2 variants, task SD {TASK_SD}, task x variant SD "
          f"{INTERACTION_SD}, noise SD {NOISE_SD}, {MISSING:.0%} missing; alpha 0.05")
    print(f"{'test':32} {'grids':>6} {'reject':>7} {'MC SE':>6} {'mean SE':>8} {'SD est':>7}")
    for r in rows:
        print(f"{r['test']:32} {r['grids']:>6} {r['rejection_rate']:>7.4f} {r['mc_se']:>6.4f} "
              f"{r['mean_reported_se']:>8.4f} {r['sd_of_estimate']:>7.4f}")
    print("mixed-model fits:", ", ".join(f"{k} {v}" for k, v in sorted(flags.items())))
    if args.bounded_grids and args.family_grids:
        rows += report_bounded(rng, args.bounded_grids, args.family_grids, args.flips)
    wall = time.perf_counter() - started
    print(f"wall {wall:.0f} s (mixed models {mixed_time:.0f} s)")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"inference-seed{args.seed}.json").write_text(json.dumps({"grids": args.grids, "mixed_grids": args.mixed_grids, "seed": args.seed,
                                   "bounded_grids": args.bounded_grids, "family_grids": args.family_grids,
                                   "flips": args.flips,
                                   "tests": rows, "mixed_flags": flags, "wall_s": wall}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
