"""The plan's decision procedure at the study's size: error rate, power, tasks needed, TOST power.

All by `colabkit.analysis.inference.power_analysis.simulate` (the whole graphical procedure over the default
plan's hypotheses, every variant planned), at 38 tasks x 3 seeds:

1. study-wise FWER (P(any true null declared)) under three configurations (null: every
   variant as Default-DR; partially null: Scaffolded +0.15 on Performance, all else null; the
   paper's effects, whose true nulls are H3.preassigned and H5.dynamic) on Gaussian data and on
   each of the three bounded zero/one-inflated shapes (`simulate.BOUNDED_SHAPES`), with 0, 5
   and 10% of sessions missing at random, with the Monte Carlo SE and 95% interval;
2. P(each hypothesis declared) under the paper's effects over the same range: each bounded
   shape x 0, 5, 10% missing at random (every test uses every available pair);
3. tasks needed for 80% (grid 38, 76, 114, 152, 264, 528 tasks x 3 seeds);
4. the standardised TOST's power at a true difference of 0, per margin and number of tasks.

    PYTHONPATH=. .venv/bin/python benchmarks/procedure.py [--reps 1000] [--power-reps 1000]
        [--tasks-reps 300] [--seed 0]

Affordable on a shared 2-core machine: 36 FWER runs x `--reps` grids and 9 power runs x
`--power-reps` grids, each grid the whole procedure on every claim (about 2 minutes at the
defaults).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd

from colabkit.analysis.inference.decisions.decide import tost_power
from colabkit.analysis.inference.planning.plan import ALL_VARIANTS, analysis_plan
from colabkit.analysis.inference.power_analysis.simulate import (
    BOUNDED_SHAPES,
    DataShape,
    familywise_error,
    paper_means,
    procedure_power,
    tasks_for_power,
)

RESULTS = Path(__file__).resolve().parent / "results"
SHAPES = {"gaussian": DataShape(kind="gaussian", scale=0.15 / 0.8), **BOUNDED_SHAPES}
MISSING = (0.0, 0.05, 0.10)


def configurations() -> dict[str, dict[str, dict[str, float]]]:
    base = paper_means(["default-dr"])["default-dr"]
    null = {v: dict(base) for v in ALL_VARIANTS}
    partial = {v: dict(base) | ({"performance": base["performance"] + 0.15}
                                if v.startswith(("scaffolded", "dynamic")) else {}) for v in ALL_VARIANTS}
    return {"null": null, "partially null": partial, "paper's effects": paper_means(ALL_VARIANTS)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--power-reps", type=int, default=1000)
    parser.add_argument("--tasks-reps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.time()
    plan = analysis_plan(ALL_VARIANTS)
    out: dict[str, object] = {"plan_hash": plan.plan_hash, "alpha": plan.alpha, "tasks": 38, "seeds": 3,
                              "reps": args.reps, "power_reps": args.power_reps, "tasks_reps": args.tasks_reps}
    fwer = []
    print(f"study-wise FWER at alpha {plan.alpha}, 38 x 3, {args.reps} grids each")
    for shape_name, shape in SHAPES.items():
        for missing in MISSING:
            for name, means in configurations().items():
                rate, se = familywise_error(plan, means, shape, reps=args.reps, seed=args.seed, missing=missing)
                fwer.append({"shape": shape_name, "missing": missing, "configuration": name, "fwer": rate,
                             "mc_se": se, "ci95": [max(0.0, rate - 1.96 * se), rate + 1.96 * se]})
                print(f"  {shape_name[:40]:<40} missing {missing:.0%} {name:<16} {rate:.4f} (MC SE {se:.4f})")
    out["fwer"] = fwer
    power_rows = []
    for shape_name, shape in BOUNDED_SHAPES.items():
        for missing in MISSING:
            power = procedure_power(plan, shape=shape, reps=args.power_reps, seed=args.seed, missing=missing)
            power_rows += power[["hypothesis", "planned_effect", "null_true", "p_declared", "mc_se"]].assign(
                shape=shape_name, missing=missing).to_dict("records")
    out["power"] = power_rows
    table = pd.DataFrame(power_rows).pivot_table(index="hypothesis", columns=["shape", "missing"],
                                                 values="p_declared", sort=False)
    print(f"P(declared), paper's effects, {args.power_reps} grids per cell")
    print(table.round(3).to_string())
    needed = tasks_for_power(plan, reps=args.tasks_reps, seed=args.seed)
    out["tasks_needed"] = needed[["hypothesis", "null_true", "tasks_needed", "beyond_archaeology"]].to_dict("records")
    print(f"tasks needed for 80% (x 3 seeds), bounded, {args.tasks_reps} grids per size")
    print(needed[["hypothesis", "null_true", "tasks_needed", "beyond_archaeology"]].to_string(index=False))
    tost = {f"{margin:g} SD": {str(t): round(tost_power(t, margin, plan.alpha), 3) for t in (10, 20, 38, 76, 114)}
            for margin in (0.25, 0.5, 0.75, 1.0)}
    out["tost_power"] = tost
    print("TOST power at a true difference of 0 (alpha 0.05), by margin and tasks:", json.dumps(tost))
    out["seconds"] = round(time.time() - started, 1)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "procedure.json").write_text(json.dumps(out, indent=1) + "\n")  # NaN: tasks needed beyond the grid
    print(f"{out['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
