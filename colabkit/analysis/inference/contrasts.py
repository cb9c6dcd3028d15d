"""Contrasts between variants, with inference at the unit the study samples: the task.

Two variants of one composition ran the same tasks with the same seeds, so a contrast is
paired: d = y(A, task, seed) - y(B, task, seed) over the (task, seed) pairs both scored. The
study samples tasks, and the effect of a structure varies between tasks (a task x variant
interaction), so the seeds of one task are not independent replicates of the effect. Every
p-value and interval reported here accounts for that:

- **Confirmatory test** (`p_unadjusted`, `ci_low`/`ci_high`, Holm-adjusted `p_holm`): the mean
  paired difference with its task-clustered (CR1) SE and a t reference on G - 1 df (G tasks).
  With the same seeds on every task this is exactly the one-sample t test on the G task means
  of d, the textbook test when tasks are the sampled unit; with unequal seeds it weights
  tasks by their pairs. A naive SE over all pairs (seeds as replicates) is not reported: in a
  null simulation it rejected at 10% at alpha 0.05 (`benchmarks/inference.py`).
- **Model-based estimate** (`mixed_coef`, `mixed_se`, `mixed_p_unadjusted`): a mixed model
  with a random intercept and a random treatment slope by task (`colabkit.analysis.inference.mixed`),
  which also uses sessions without a partner, fitted with several optimisers. Not adjusted;
  it corroborates, the clustered test decides. It is fitted for the study's contrast (the
  `scaffolded-default` family) by default; `mixed_families` names others (each fit runs two
  to four optimisers, so the 84 diagnostic tests are left to the clustered test unless
  asked; their `mixed_flags` say `mixedlm_not_requested`).

Fewer than two tasks (or no spread) give no interval and no p-value: the row is kept, its
`note` says why, and it counts as p = 1 in its Holm family (`colabkit.analysis.inference.families`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from colabkit.analysis.inference.families import DECOMPOSITION, FAMILIES, adjust_by_family, family_of
from colabkit.analysis.inference.mixed import slope_model_contrast
from colabkit.analysis.inference.stats import clustered_standard_error
from colabkit.analysis.judging import with_judge_columns
from colabkit.analysis.scores import COMPOSITIONS, STUDY_METRICS, check_scores

__all__ = ["CONTRAST_COLUMNS", "DECOMPOSITION", "contrasts", "mixed_model_contrast", "paired_differences",
           "task_contrast"]

CONTRAST_COLUMNS = ("family", "composition", "metric", "a", "b", "component", "n_pairs", "n_tasks", "diff",
                    "se_task", "df", "ci_low", "ci_high", "p_unadjusted", "p_holm", "significant_holm",
                    "mixed_coef", "mixed_se", "mixed_p_unadjusted", "mixed_optimiser", "mixed_flags", "note")


def paired_differences(scores: pd.DataFrame, a: str, b: str, metric: str) -> pd.DataFrame:
    """task_id, seed and d = A - B for every (task, seed) both variants scored."""
    keep = ["task_id", "seed", metric]
    left = scores.loc[scores["variant"] == a, keep].dropna(subset=[metric])
    right = scores.loc[scores["variant"] == b, keep].dropna(subset=[metric])
    pairs = left.merge(right, on=["task_id", "seed"], suffixes=("_a", "_b"), validate="one_to_one")
    return pairs.assign(d=pairs[f"{metric}_a"] - pairs[f"{metric}_b"])[["task_id", "seed", "d"]]


def task_contrast(scores: pd.DataFrame, a: str, b: str, metric: str) -> dict[str, object]:
    """The confirmatory test of A - B: mean paired difference, task-clustered SE, t on G - 1 df."""
    d = paired_differences(scores, a, b, metric)
    n, tasks = len(d), d["task_id"].nunique()
    mean = float(d["d"].mean()) if n else math.nan
    se = clustered_standard_error(d["d"], d["task_id"])
    out: dict[str, object] = {"n_pairs": n, "n_tasks": tasks, "diff": mean, "se_task": se,
                              "df": tasks - 1 if tasks >= 2 else math.nan,
                              "ci_low": math.nan, "ci_high": math.nan, "p_unadjusted": math.nan, "note": ""}
    if tasks < 2:
        return out | {"note": f"no interval: {tasks} task(s) with pairs"}
    if not se > 0:
        return out | {"note": "no interval: no spread between tasks"}
    t_crit = float(scipy_stats.t.ppf(0.975, tasks - 1))
    return out | {"ci_low": mean - t_crit * se, "ci_high": mean + t_crit * se,
                  "p_unadjusted": float(2 * scipy_stats.t.sf(abs(mean / se), tasks - 1))}


def mixed_model_contrast(scores: pd.DataFrame, a: str, b: str, metric: str) -> dict[str, object]:
    """The model-based estimate of A - B on both variants' sessions (`colabkit.analysis.inference.mixed`)."""
    data = scores.loc[scores["variant"].isin([a, b]), ["task_id", "variant", metric]].dropna(subset=[metric])
    data = data.assign(treated=(data["variant"] == a).astype(float), y=data[metric].astype(float))
    return slope_model_contrast(data)


NOT_REQUESTED: dict[str, object] = {"mixed_coef": math.nan, "mixed_se": math.nan, "mixed_p_unadjusted": math.nan,
                                    "mixed_optimiser": "", "mixed_flags": "mixedlm_not_requested"}


def contrasts(scores: pd.DataFrame, pairs: Iterable[tuple[str, str, str]] = DECOMPOSITION[:1],
              metrics: Iterable[str] = STUDY_METRICS, alpha: float = 0.05,
              mixed_families: Iterable[str] = ("scaffolded-default",)) -> pd.DataFrame:
    """Per composition, metric and (A, B, label) structure pair: the contrast A - B.

    The default is the study's contrast, Scaffolded - Default; `DECOMPOSITION` gives the
    diagnostic decomposition too. Each row's family (`colabkit.analysis.inference.families`) is tested
    whole, whatever subset of its pairs was asked, so a test's Holm-adjusted p is the same in
    every table that shows it. Pairs whose variants are absent are left out. The mixed model
    is fitted for the families in `mixed_families` (module docstring).
    """
    metrics, wanted, fitted = list(metrics), list(pairs), set(mixed_families)
    table = check_scores(scores, metrics)
    present = set(table["variant"])
    families = list(dict.fromkeys(family_of(a, b) for a, b, _ in wanted))
    rows = []
    for family in families:
        for structure_a, structure_b, label in FAMILIES[family]:
            for composition in COMPOSITIONS[1:]:
                a, b = f"{structure_a}-{composition}", f"{structure_b}-{composition}"
                if a not in present or b not in present:
                    continue
                for metric in metrics:
                    rows.append({"family": family, "composition": composition, "metric": metric, "a": a, "b": b,
                                 "component": label, **task_contrast(table, a, b, metric),
                                 **(mixed_model_contrast(table, a, b, metric) if family in fitted
                                    else NOT_REQUESTED)})
    result = pd.DataFrame(rows, columns=[c for c in CONTRAST_COLUMNS if c not in ("p_holm", "significant_holm")])
    result["p_holm"], result["significant_holm"] = adjust_by_family(result, "p_unadjusted", alpha)
    shown = {(a, b) for a, b, _ in wanted}
    keep = np.array([(a.split("-")[0], b.split("-")[0]) in shown for a, b in zip(result["a"], result["b"])],
                    dtype=bool)
    result = result.loc[keep].reset_index(drop=True)[list(CONTRAST_COLUMNS)]
    return with_judge_columns(result, table)
