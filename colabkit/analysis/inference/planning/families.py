"""The contrasts the suite reports, and their multiple-comparison families, defined once.

Every planned test has one procedure-adjusted p wherever it is shown: the plan's hypotheses
and these families' tests go through one graph (`colabkit.analysis.inference.decisions.decide`); a
family is a label, and its tests that are not hypotheses are the exploratory tests, Holm among
themselves after the hypotheses. The structure pairs (`FAMILIES`) are fixed here; which tests
a family holds is fixed by the analysis plan (the planned variants x the planned metrics),
never by the data:

- `scaffolded-default`: the study's contrast on every planned metric;
- `decomposition`: the four diagnostic components (memory alone, assigned gates alone,
  self-chosen gates given memory, self-chosen vs assigned), per composition and metric;
- `living-memory`: beyond the study, Dynamic - Scaffolded per composition and metric, where an
  experiment plans the Dynamic variants (`experiments/dynamic.yaml`): what a living memory does.

A planned test that could not be run (absent variant or metric, too few tasks) still counts,
as p = 1, so a failure never makes another test easier. `holm` stays for the descriptive
tables outside the study's claims (termination, simulators).
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
