"""Variance components from a pilot's sessions, so power is planned on measured spreads.

The power simulation (`simulate`) draws y = location(variant) + task + task x variant + noise;
`variance_components` estimates the three SDs from a score table by moments, cell by cell
(a cell: one variant on one task), using whatever sessions are there (unbalanced or missing):

- noise: the pooled variance between the seeds of a cell;
- task x variant: from each pair of variants, the variance over tasks of the difference of
  their cell means is 2 interaction + noise (1/n + 1/n') per task: averaged over the pairs;
- task: the variance over tasks of one variant's cell means is task + interaction +
  noise / n: averaged over the variants.

Each is floored at 0. `pilot_shape` turns them into the simulation's `DataShape`, on the score
scale and unclipped ("gaussian", scale 1), so the simulated grids reproduce the pilot's
second moments (what the paired tests' power depends on): the rate metrics' spreads from
`rate_metric` (Performance), the counts' from `count_metric` (W_total); a metric the pilot
lacks keeps the default spreads. `colabkit plan-analysis --pilot RESULTS` prints them and
the power of the whole procedure under them.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from colabkit.analysis.inference.power_analysis.simulate import DataShape
from colabkit.analysis.scores import check_scores
from colabkit.errors import ColabkitError


def variance_components(scores: pd.DataFrame, metric: str) -> dict[str, float]:
    """task_sd, interaction_sd, noise_sd of `metric` (module docstring), with the tasks and
    variants they rest on."""
    table = check_scores(scores, [metric]).dropna(subset=[metric])
    cells = table.groupby(["variant", "task_id"])[metric].agg(["mean", "var", "count"]).reset_index()
    repeated = cells[cells["count"] > 1]
    if repeated.empty or cells["task_id"].nunique() < 3:
        raise ColabkitError(f"pilot: {metric} needs at least 3 tasks and 2 seeds of one variant on a task")
    noise = float(((repeated["count"] - 1) * repeated["var"]).sum() / (repeated["count"] - 1).sum())
    means = cells.pivot(index="task_id", columns="variant", values="mean")
    counts = cells.pivot(index="task_id", columns="variant", values="count")
    pair_terms = []
    for a, b in itertools.combinations(means.columns, 2):
        both = means[a].notna() & means[b].notna()
        if both.sum() >= 3:
            d = means.loc[both, a] - means.loc[both, b]
            inverse = float((1 / counts.loc[both, a] + 1 / counts.loc[both, b]).mean())
            pair_terms.append((float(d.var(ddof=1)) - noise * inverse) / 2)
    interaction = max(0.0, float(np.mean(pair_terms))) if pair_terms else 0.0
    task_terms = [float(means[v].dropna().var(ddof=1)) - interaction - noise * float((1 / counts[v].dropna()).mean())
                  for v in means.columns if means[v].notna().sum() >= 3]
    task = max(0.0, float(np.mean(task_terms))) if task_terms else 0.0
    return {"task_sd": math.sqrt(task), "interaction_sd": math.sqrt(interaction), "noise_sd": math.sqrt(noise),
            "tasks": int(cells["task_id"].nunique()), "variants": int(cells["variant"].nunique())}


def pilot_shape(scores: pd.DataFrame, rate_metric: str = "performance", count_metric: str = "w_total") -> DataShape:
    """The simulation's data shape with the pilot's spreads (module docstring)."""
    default = DataShape()
    rate = variance_components(scores, rate_metric) if rate_metric in scores.columns else None
    count = variance_components(scores, count_metric) if count_metric in scores.columns else None
    spreads = (rate["task_sd"], rate["interaction_sd"], rate["noise_sd"]) if rate else \
        tuple(s * default.scale for s in (default.task_sd, default.interaction_sd, default.noise_sd))
    counts = (count["task_sd"], count["interaction_sd"], count["noise_sd"]) if count else default.count_sds
    return DataShape(kind="gaussian", task_sd=spreads[0], interaction_sd=spreads[1], noise_sd=spreads[2], scale=1.0,
                     count_sds=counts)
