"""The contrasts the suite reports, and their multiple-comparison families, defined once.

Every reported table is one Holm family, and every test belongs to exactly one family, so a
test has one adjusted p wherever it is shown:

- `scaffolded-default`: the study's contrast, Scaffolded - Default, per composition and
  metric (the contrasts table);
- `decomposition`: the four diagnostic components (memory alone, assigned gates alone,
  self-chosen gates given memory, self-chosen vs assigned), per composition and metric (the
  decomposition table). Its "total" row is the study's contrast and carries that family's p;
- `living-memory`: beyond the study, Dynamic - Scaffolded per composition and metric, where an
  experiment has the Dynamic variants (`experiments/dynamic.yaml`): what a living memory does.

A family is every (pair, composition, metric) of its pairs whose two variants are in the
grid, for the metrics asked; a test that could not be run (too few tasks, no spread) still
counts, as p = 1, so a failure never makes a family smaller and its other tests easier.
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


def family_of(structure_a: str, structure_b: str) -> str:
    """The family of the contrast A - B (structures, e.g. 'scaffolded', 'default')."""
    for name, pairs in FAMILIES.items():
        if any((a, b) == (structure_a, structure_b) for a, b, _ in pairs):
            return name
    known = ", ".join(f"{a}-{b}" for pairs in FAMILIES.values() for a, b, _ in pairs)
    raise ValueError(f"no family holds the contrast {structure_a} - {structure_b}; known: {known}")


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
