"""The default graph searched from power (`colabkit.analysis.inference.power_analysis.graph_search`).

Every candidate graph (initial weights of H3.memory, H2.pooled and H1.dr, crossed with an even
or a to-power sharing of the level passed on) is run on the same simulated p-values under the
paper's effects on bounded data at 38 tasks x 3 seeds, every variant planned; the objective is
the expected number of the paper's true claims declared. Prints the table and writes
`benchmarks/results/graph_search.json`.

    PYTHONPATH=. .venv/bin/python benchmarks/graph_search.py [--reps 2000] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from colabkit.analysis.inference.planning.plan import ALL_VARIANTS, analysis_plan
from colabkit.analysis.inference.power_analysis.graph_search import (
    FIRST_WRITTEN,
    SEARCHED,
    candidate_graphs,
    search_graph,
)

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.time()
    table = search_graph(ALL_VARIANTS, candidate_graphs(), FIRST_WRITTEN, reps=args.reps, seed=args.seed)
    chosen = str(table.loc[table["chosen"], "graph"].iloc[0])
    print(table.drop(columns=["reps", "shape"]).round(3).to_string(index=False))
    print(f"chosen: {chosen}; the default graph (hypotheses.PAPER_HYPOTHESES) is {SEARCHED}"
          f" -> {'agrees' if chosen == SEARCHED else 'DIFFERS: update the default'}")
    out = {"reps": args.reps, "seed": args.seed, "first_written": FIRST_WRITTEN, "chosen": chosen,
           "default": SEARCHED, "default_plan_hash": analysis_plan(ALL_VARIANTS).plan_hash,
           "table": table.to_dict("records"), "seconds": round(time.time() - started, 1)}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "graph_search.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"{out['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
