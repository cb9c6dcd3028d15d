"""What the missing scores could change: a worst-case and best-case fill-in per variant.

A session whose metrics are missing (a crash or a provider refusal, `INFRASTRUCTURE_ENDINGS`;
a judge that could not answer) drops out of a variant's mean. If such sessions are not
random (one structure crashes more), the means are biased. `missing_score_bounds` bounds
that: per variant and metric, the mean over observed sessions beside the mean with every
missing value set to the metric's lowest observed value in the whole table (worst case)
and to its highest (best case). A contrast whose sign survives both fill-ins does not
depend on the missing sessions.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from colabkit.analysis.scores import STUDY_METRICS, check_scores, variant_order

MISSING_COLUMNS = ("variant", "metric", "sessions", "n_missing", "mean_observed", "mean_worst", "mean_best")


def missing_score_bounds(scores: pd.DataFrame, metrics: Iterable[str] = STUDY_METRICS) -> pd.DataFrame:
    """Per variant and metric: sessions, how many lack the metric, and the mean observed, with
    the missing ones at the metric's table-wide minimum (worst) and maximum (best).

    A metric undefined for a whole variant by design (H_init,norm of the single agent: no
    value in any of its sessions) is not filled in: its bounds stay NaN.
    """
    metrics = list(metrics)
    table = check_scores(scores, metrics)
    rows = []
    for metric in metrics:
        low, high = table[metric].min(), table[metric].max()
        for variant in variant_order(table["variant"]):
            values = table.loc[table["variant"] == variant, metric]
            missing = int(values.isna().sum())
            defined = values.notna().any()
            rows.append({
                "variant": variant, "metric": metric, "sessions": len(values), "n_missing": missing,
                "mean_observed": values.mean(),
                "mean_worst": values.fillna(low).mean() if defined else float("nan"),
                "mean_best": values.fillna(high).mean() if defined else float("nan"),
            })
    return pd.DataFrame(rows, columns=list(MISSING_COLUMNS))
