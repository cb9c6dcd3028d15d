"""Do the reported tests hold their level? A null simulation over synthetic grids.

Each grid is one contrast of the study's design: 38 tasks x 3 seeds x 2 variants, with no
true effect, a task effect (SD 0.15), a task x variant interaction (SD 0.05 per variant:
the effect of the structure differs between tasks) and session noise (SD 0.08); 5% of the
sessions are missing at random (a failed session or judge), so the pairs are unbalanced as
real grids are. Each grid is analysed by the suite's own functions and every test is asked
at alpha 0.05; a test that holds its level rejects in 5% of the grids (target 0.04-0.06).

Reported tests (`colabkit.analysis.inference.contrasts`):
- task-clustered: the confirmatory test, CR1 task-clustered SE, t on G - 1 df;
- random slope: the mixed model with a random treatment slope by task, several optimisers,
  t on G - 1 df (each fit costs 2-4 optimiser runs: fewer grids, wider Monte Carlo error).
The tests the suite reported before, for comparison (not reported any more):
- naive paired: the paired t test over all (task, seed) pairs (seeds as replicates);
- random intercept: statsmodels' `metric ~ treated + (1 | task)`, its own p (normal).

Printed per test: grids, rejection rate, its Monte Carlo SE sqrt(p(1-p)/n), the mean
reported SE against the actual SD of the estimate over the grids.

    PYTHONPATH=. .venv/bin/python benchmarks/inference.py [--grids 2000] [--mixed-grids 300] [--seed 0]
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

from colabkit.analysis.inference.contrasts import mixed_model_contrast, paired_differences, task_contrast

TASKS, SEEDS = 38, 3
TASK_SD, INTERACTION_SD, NOISE_SD, MISSING = 0.15, 0.05, 0.08, 0.05
A, B, METRIC = "scaffolded-dr", "default-dr", "performance"
RESULTS = Path(__file__).resolve().parent / "results"


def null_grid(rng: np.random.Generator) -> pd.DataFrame:
    """One synthetic grid of two variants, in the score table's format, with no true effect."""
    task = rng.normal(0, TASK_SD, TASKS)[:, None, None]
    interaction = rng.normal(0, INTERACTION_SD, (TASKS, 2))[:, :, None]
    y = 0.5 + task + interaction + rng.normal(0, NOISE_SD, (TASKS, 2, SEEDS))
    y[rng.random(y.shape) < MISSING] = np.nan
    t, v, s = (a.ravel() for a in np.meshgrid(np.arange(TASKS), np.arange(2), np.arange(SEEDS), indexing="ij"))
    variant = np.where(v == 0, A, B)
    return pd.DataFrame({"session_id": [f"{x}-t{i}-s{j}" for x, i, j in zip(variant, t, s)],
                         "task_id": [f"t{i}" for i in t], "variant": variant,
                         "structure": [x.split("-")[0] for x in variant], "composition": "dr", "seed": s,
                         METRIC: y.ravel()})


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grids", type=int, default=2000, help="grids for the closed-form tests")
    parser.add_argument("--mixed-grids", type=int, default=300, help="of those, grids the mixed models fit")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    found: dict[str, list[tuple[float, float, float]]] = {k: [] for k in
                                                           ("clustered", "slope", "naive", "intercept")}
    flags: dict[str, int] = {}
    started, mixed_time = time.perf_counter(), 0.0
    for i in range(args.grids):
        table = null_grid(rng)
        c = task_contrast(table, A, B, METRIC)
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
    wall = time.perf_counter() - started
    print(f"wall {wall:.0f} s (mixed models {mixed_time:.0f} s)")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"inference-seed{args.seed}.json").write_text(json.dumps({"grids": args.grids, "mixed_grids": args.mixed_grids, "seed": args.seed,
                                   "tests": rows, "mixed_flags": flags, "wall_s": wall}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
