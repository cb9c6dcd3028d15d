"""The default graph, searched from power: which initial weights and transitions declare most.

Every graph of `colabkit.analysis.inference.planning.graph` holds the study-wise error at alpha whatever
its weights, so choosing among them is a question of power alone, answered before the data:
under the paper's effects (`simulate.paper_means`) on the study's bounded data at the planned
38 tasks x 3 seeds, each candidate graph is run on the *same* simulated p-values (common
random numbers: the tests do not depend on the graph), so differences between candidates are
measured far more precisely than each candidate's power.

**Objective**: the expected number of the paper's claims declared, over the claims with a
true effect under the planned means (a null claim declared is an error, not a gain). The
graph as first written (`FIRST_WRITTEN`) is kept unless a candidate beats it by more than two
paired Monte Carlo SEs (`MARGIN_SE`): a search on simulated data must not move the plan for noise. The search ran
once, before any data, and its choice is written into the default plan (`SEARCHED`).

**Candidates** (`candidate_graphs`): the paper's graph (`PAPER_HYPOTHESES`) with its three
roots' initial weights (H3.memory, H2.pooled, H1.dr: `ROOTS`) crossed with two ways of
sharing on (`SHARING`): "even" (as first written: a declared claim splits its level evenly
among the claims it opens) and "to power" (most of it to the claims with power under the
paper's effects, a tenth to each of those the paper calls within the margin of error or
gives no effect for). Every claim stays reachable in every candidate.
`benchmarks/graph_search.py` runs the search (`SEARCHED` is its choice, the default graph) and `benchmarks/README.md`
shows its table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from colabkit.analysis.inference.planning.hypotheses import PAPER_HYPOTHESES, Hypothesis
from colabkit.analysis.inference.planning.plan import AnalysisPlan, analysis_plan
from colabkit.analysis.inference.power_analysis.simulate import (
    DataShape,
    declared_by,
    null_true,
    paper_means,
    simulate_p,
)

ROOTS: dict[str, tuple[float, float, float]] = {
    "0.2/0.4/0.4": (0.2, 0.4, 0.4), "0.1/0.5/0.4": (0.1, 0.5, 0.4), "0.1/0.6/0.3": (0.1, 0.6, 0.3),
    "0.05/0.65/0.3": (0.05, 0.65, 0.3), "0.05/0.75/0.2": (0.05, 0.75, 0.2), "0.05/0.85/0.1": (0.05, 0.85, 0.1),
    "0.05/0.95/0": (0.05, 0.95, 0.0), "0.05/0.45/0.5": (0.05, 0.45, 0.5)}
"""Initial weights of H3.memory, H2.pooled and H1.dr (every other claim starts at 0; memory
keeps a little, since no edge leads to it)."""
SHARING: dict[str, dict[str, dict[str, float]]] = {
    "even": {
        "H1.dr": {"H2.pooled": 0.5, "H1.no-gain": 0.5},
        "H2.dr": {"H2.d": 0.25, "H2.r": 0.25, "H3.synergy": 0.25, "H2.largest": 0.25},
        "H3.synergy": {"H2.largest": 1 / 3, "H3.preassigned": 1 / 3, "H4.w_total": 1 / 3}},
    "to power": {
        "H1.dr": {"H2.pooled": 0.8, "H1.no-gain": 0.2},
        "H2.dr": {"H3.synergy": 0.6, "H2.largest": 0.2, "H2.d": 0.1, "H2.r": 0.1},
        "H3.synergy": {"H2.largest": 0.3, "H4.w_total": 0.5, "H3.preassigned": 0.2}},
}
"""The edges the two sharings set (every other edge as in `PAPER_HYPOTHESES`)."""
FIRST_WRITTEN, SEARCHED = "0.2/0.4/0.4 even", "0.05/0.95/0 to power"
"""The graph as first written (the search's reference) and the one the search chose (the default)."""
MARGIN_SE = 2.0


def candidate_graphs(base: Sequence[Hypothesis] = PAPER_HYPOTHESES) -> dict[str, tuple[Hypothesis, ...]]:
    """Every candidate (module docstring), named "<roots> <sharing>"."""
    out = {}
    for roots, weights in ROOTS.items():
        for sharing, edges in SHARING.items():
            root_weight = dict(zip(("H3.memory", "H2.pooled", "H1.dr"), weights))
            out[f"{roots} {sharing}"] = tuple(
                h.model_copy(update={"weight": root_weight.get(h.name, 0.0), "then": edges.get(h.name, h.then)})
                for h in base)
    return out


def search_graph(variants: Sequence[str], candidates: dict[str, tuple[Hypothesis, ...]], current: str,
                 shape: DataShape = DataShape(), reps: int = 1000, seed: int = 0, tasks: int = 38,
                 seeds: int = 3) -> pd.DataFrame:
    """Per candidate: P(each claim declared), the objective with its Monte Carlo SE, its paired
    difference from `current` with that difference's SE, and `chosen` (module docstring)."""
    plans: dict[str, AnalysisPlan] = {
        name: analysis_plan(tuple(variants), hypotheses=list(graph), planned_tasks=tasks, planned_seeds=seeds)
        for name, graph in candidates.items()}
    reference = plans[current]
    means = paper_means(reference.variants)
    p = simulate_p(reference, means, shape, reps=reps, seed=seed)
    names = [h.name for h in reference.hypotheses]
    true = np.array([not null_true(h, means, reference.variants, shape, reference.planned_seeds)
                     for h in reference.hypotheses])
    counts = {}
    rows = []
    for name, plan in plans.items():
        if [h.name for h in plan.hypotheses] != names:
            raise ValueError(f"candidate graph {name!r} does not test the same claims as {current!r}")
        declared = declared_by(p, plan.hypotheses, plan.alpha)
        counts[name] = declared[:, true].sum(axis=1)
        rows.append({"graph": name, **{h: float(rate) for h, rate in zip(names, declared.mean(axis=0))},
                     "objective": float(counts[name].mean()),
                     "objective_se": float(counts[name].std(ddof=1) / math.sqrt(reps))})
    table = pd.DataFrame(rows)
    difference = {name: counts[name] - counts[current] for name in plans}
    table["vs_current"] = [float(difference[n].mean()) for n in table["graph"]]
    table["vs_current_se"] = [float(difference[n].std(ddof=1) / math.sqrt(reps)) for n in table["graph"]]
    better = table[table["vs_current"] > MARGIN_SE * table["vs_current_se"]]
    chosen = str(better.loc[better["objective"].idxmax(), "graph"]) if len(better) else current
    return table.assign(chosen=table["graph"] == chosen, reps=reps, shape=shape.kind)
