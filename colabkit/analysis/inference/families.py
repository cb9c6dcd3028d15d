"""The contrasts the suite reports, and their multiple-comparison families, defined once.

Every test belongs to exactly one Holm family, so a test has one adjusted p wherever it is
shown. The structure pairs (`FAMILIES`) are fixed here; which tests a family holds is fixed by
the analysis plan (`colabkit.analysis.inference.plan`: the planned variants x the planned
metrics), never by the data:

- `primary`: the primary endpoint, Performance, Scaffolded - Default per composition;
- `scaffolded-default`: the study's contrast on the other planned metrics;
- `decomposition`: the four diagnostic components (memory alone, assigned gates alone,
  self-chosen gates given memory, self-chosen vs assigned), per composition and metric;
- `living-memory`: beyond the study, Dynamic - Scaffolded per composition and metric, where an
  experiment plans the Dynamic variants (`experiments/dynamic.yaml`): what a living memory does.

A planned test that could not be run (absent variant or metric, too few tasks) still counts,
as p = 1, so a failure never makes a family smaller and its other tests easier.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

# (A, B, what A - B isolates), per composition: the diagnostic decomposition of Scaffolded.
DECOMPOSITION = (
    ("scaffolded", "default", "memory + self-chosen gates (total)"),
    ("memory", "default", "memory alone"),
    ("preassigned", "default", "externally assigned gates alone"),
    ("scaffolded", "memory", "self-chosen gates, given memory"),
    ("scaffolded", "preassigned", "self-chosen vs assigned gates"),
)
# Beyond the study: Dynamic differs from Scaffolded only in its living memory.
DYNAMIC_CONTRASTS = (("dynamic", "scaffolded", "living vs frozen memory"),)
FAMILIES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "scaffolded-default": DECOMPOSITION[:1],
    "decomposition": DECOMPOSITION[1:],
    "living-memory": DYNAMIC_CONTRASTS,
}


def holm(p_values: pd.Series | np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Holm-adjusted p-values and rejections of one family; a missing p counts as 1.

    The failed test's own adjusted p is NaN (there is no test to report), but it takes its
    place in the family.
    """
    p = np.asarray(p_values, dtype="float64")
    if p.size == 0:
        return np.array([], dtype="float64"), np.array([], dtype=bool)
    failed = np.isnan(p)
    reject, adjusted, _, _ = multipletests(np.where(failed, 1.0, p), alpha=alpha, method="holm")
    return np.where(failed, np.nan, adjusted), np.where(failed, False, reject)


def adjust_by_family(table: pd.DataFrame, p_column: str, alpha: float = 0.05) -> tuple[pd.Series, pd.Series]:
    """Holm within each `family` of `table`: (adjusted p, significant), aligned with its rows."""
    adjusted = pd.Series(np.nan, index=table.index, dtype="float64")
    significant = pd.Series(False, index=table.index, dtype=bool)
    for _, rows in table.groupby("family", sort=False):
        adj, rej = holm(rows[p_column].to_numpy(), alpha)
        adjusted[rows.index], significant[rows.index] = adj, rej
    return adjusted, significant
