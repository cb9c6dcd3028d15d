"""Two samples of fingerprints held against each other: people vs simulators, or D vs R.

Three views, each answering a different question, none needing a judge:

- `standardised_differences`: per feature, Hedges' g (b - a over the pooled SD, small-sample
  corrected) with a 95% interval from its large-sample SE; which behaviour differs, by how much.
  With a single row in `a` (one person session) it is Glass's delta on b's SD, whose interval
  counts the lone row as one draw: wide, as it should be.
- `classifier_test`: can a classifier tell the samples apart? A standardised logistic
  regression (features median-imputed and scaled over both samples, which uses no label) scored
  by out-of-fold ROC-AUC under cross-validation grouped by task (no task is
  in both a training and a test fold, so a task's signature cannot stand in for the sample's),
  with a permutation p-value (labels shuffled, the whole cross-validation redone) and a 95%
  interval from a cluster bootstrap of the out-of-fold scores (whole groups resampled, so rows
  of one task or one user count as one draw). AUC near 0.5: indistinguishable on these
  features; near 1: a give-away.
- `chamfer_coverage`: two-sided Chamfer distance in the pooled standardised feature space:
  the mean distance from each person to the nearest simulated row (does the simulator cover
  people's spread?) and from each simulated row to the nearest person (does it do things no
  person does?), each over the same sample's own leave-one-out nearest-neighbour distance, so
  1 means "as close as the sample's members are to each other".

Few rows give intervals, not verdicts: below `MIN_ROWS` rows per sample or `MIN_TASKS`
tasks, the classifier's AUC is still reported when it can be computed but the result says
it is too few to conclude.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.stats import norm
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GroupKFold
from sklearn.preprocessing import StandardScaler

MIN_ROWS = 10
MIN_TASKS = 5
MAX_FOLDS = 5


def usable(frame: pd.DataFrame, features: Sequence[str]) -> list[str]:
    """The features with at least one value and some spread in `frame`."""
    return [f for f in features if frame[f].notna().any() and frame[f].nunique(dropna=True) > 1]


def standardised_differences(a: pd.DataFrame, b: pd.DataFrame, features: Sequence[str],
                             level: float = 0.95) -> pd.DataFrame:
    """Per feature: n, mean and SD of each sample, Hedges' g of b vs a and its interval."""
    z = norm.ppf(0.5 + level / 2)
    rows = []
    for feat in features:
        x, y = a[feat].dropna().to_numpy(float), b[feat].dropna().to_numpy(float)
        nx, ny = len(x), len(y)
        g = lo = hi = np.nan
        if nx == 1 and ny >= 2 and y.std(ddof=1) > 0:  # one person: Glass's delta on the simulated SD
            g = (y.mean() - x[0]) / y.std(ddof=1)
            se = math.sqrt(1 + 1 / ny + g * g / (2 * (ny - 1)))
            lo, hi = g - z * se, g + z * se
        elif nx >= 2 and ny >= 2:
            pooled = math.sqrt(((nx - 1) * x.var(ddof=1) + (ny - 1) * y.var(ddof=1)) / (nx + ny - 2))
            if pooled > 0:
                g = (y.mean() - x.mean()) / pooled * (1 - 3 / (4 * (nx + ny) - 9))
                se = math.sqrt((nx + ny) / (nx * ny) + g * g / (2 * (nx + ny)))
                lo, hi = g - z * se, g + z * se
        rows.append({"feature": feat, "n_a": nx, "mean_a": x.mean() if nx else np.nan,
                     "sd_a": x.std(ddof=1) if nx > 1 else np.nan, "n_b": ny, "mean_b": y.mean() if ny else np.nan,
                     "sd_b": y.std(ddof=1) if ny > 1 else np.nan, "g": g, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class ClassifierTest:
    """Out-of-fold ROC-AUC of telling b from a, its permutation p-value, and the folds' tasks."""

    auc: float
    p_value: float
    n_a: int
    n_b: int
    n_tasks: int
    folds: tuple[tuple[frozenset[str], frozenset[str]], ...] = ()
    note: str = ""
    features: tuple[str, ...] = field(default=())
    auc_low: float = np.nan
    auc_high: float = np.nan

    @property
    def conclusive(self) -> bool:
        return not self.note and not math.isnan(self.auc)


def _oof_scores(x: np.ndarray, y: np.ndarray, splits: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray | None:
    scores = np.full(len(y), np.nan)
    for train, test in splits:
        if len(set(y[train])) < 2:
            return None
        model = LogisticRegression(solver="liblinear").fit(x[train], y[train])
        scores[test] = model.predict_proba(x[test])[:, 1]
    return scores


def _oof_auc(x: np.ndarray, y: np.ndarray, splits: list[tuple[np.ndarray, np.ndarray]]) -> float:
    scores = _oof_scores(x, y, splits)
    return np.nan if scores is None else float(roc_auc_score(y, scores))


def cluster_bootstrap_auc(y: np.ndarray, scores: np.ndarray, groups: np.ndarray, *, draws: int = 1000,
                          seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the AUC of fixed `scores`, resampling whole groups with
    replacement (a draw with one class only is skipped); NaN with fewer than two groups."""
    members = [np.flatnonzero(groups == g) for g in np.unique(groups)]
    if len(members) < 2:
        return np.nan, np.nan
    rng = np.random.default_rng(seed)
    aucs = []
    for _ in range(draws):
        rows = np.concatenate([members[i] for i in rng.integers(0, len(members), len(members))])
        if len(set(y[rows])) == 2:
            aucs.append(roc_auc_score(y[rows], scores[rows]))
    if not aucs:
        return np.nan, np.nan
    tail = (1 - level) / 2 * 100
    return float(np.percentile(aucs, tail)), float(np.percentile(aucs, 100 - tail))


def classifier_test(a: pd.DataFrame, b: pd.DataFrame, features: Sequence[str], *, group: str = "task_id",
                    permutations: int = 200, seed: int = 0, draws: int = 1000) -> ClassifierTest:
    """The classifier two-sample test (module docstring); b is the positive class; folds and
    bootstrap resample the values of `group` (tasks by default, users for a corpus); with no
    `permutations` the p-value is missing (the AUC and its interval are all that is asked)."""
    both = pd.concat([a.assign(_y=0), b.assign(_y=1)], ignore_index=True)
    feats = usable(both, features)
    y, groups = both["_y"].to_numpy(), both[group].astype(str).to_numpy()
    n_tasks = len(set(groups))
    few = (f"too few to conclude ({len(a)} vs {len(b)} rows over {n_tasks} task(s); a verdict needs "
           f"{MIN_ROWS}+ rows per side and {MIN_TASKS}+ tasks): read the intervals")
    if n_tasks < 2 or min(len(a), len(b)) < 2 or not feats:
        why = "no feature varies" if not feats else few
        return ClassifierTest(np.nan, np.nan, len(a), len(b), n_tasks, note=why, features=tuple(feats))
    # Imputing and scaling look at no label, so they are done once (the permutations reuse them).
    x = StandardScaler().fit_transform(SimpleImputer(strategy="median").fit_transform(both[feats].to_numpy(float)))
    splits = list(GroupKFold(n_splits=min(MAX_FOLDS, n_tasks)).split(x, y, groups))
    folds = tuple((frozenset(groups[tr]), frozenset(groups[te])) for tr, te in splits)
    scores = _oof_scores(x, y, splits)
    auc = np.nan if scores is None else float(roc_auc_score(y, scores))
    low, high = (np.nan, np.nan) if scores is None else cluster_bootstrap_auc(y, scores, groups, draws=draws, seed=seed)
    rng = np.random.default_rng(seed)
    null = [_oof_auc(x, rng.permutation(y), splits) for _ in range(permutations)]
    null_arr = np.array([v for v in null if not math.isnan(v)])
    p = (1 + int((null_arr >= auc).sum())) / (1 + len(null_arr)) if len(null_arr) and not math.isnan(auc) else np.nan
    note = few if min(len(a), len(b)) < MIN_ROWS or n_tasks < MIN_TASKS else ""
    return ClassifierTest(auc, p, len(a), len(b), n_tasks, folds, note, tuple(feats), low, high)


def _nearest(from_: np.ndarray, to: np.ndarray, *, same: bool = False) -> np.ndarray:
    dist = np.sqrt(((from_[:, None, :] - to[None, :, :]) ** 2).sum(axis=2))
    if same:
        np.fill_diagonal(dist, np.inf)
    return dist.min(axis=1)


def chamfer_coverage(a: pd.DataFrame, b: pd.DataFrame, features: Sequence[str]) -> dict[str, float]:
    """Two-sided Chamfer distance between the samples (module docstring); NaN when a side is
    empty, and the ratios NaN when a side has a single row (no within-sample distance)."""
    feats = usable(pd.concat([a, b]), features)
    out = dict.fromkeys(("a_to_b", "b_to_a", "chamfer", "a_to_b_ratio", "b_to_a_ratio"), np.nan)
    if not len(a) or not len(b) or not feats:
        return out
    pooled = pd.concat([a[feats], b[feats]])
    fill = pooled.median()
    scale = pooled.std(ddof=0).replace(0, 1)
    xa, xb = (((s[feats].fillna(fill) - pooled.mean().fillna(0)) / scale).to_numpy(float) for s in (a, b))
    a_b, b_a = _nearest(xa, xb).mean(), _nearest(xb, xa).mean()
    within_a, within_b = (_nearest(x, x, same=True).mean() if len(x) > 1 else np.nan for x in (xa, xb))
    out.update(a_to_b=a_b, b_to_a=b_a, chamfer=(a_b + b_a) / 2,
               a_to_b_ratio=a_b / within_a if within_a > 0 else np.nan,
               b_to_a_ratio=b_a / within_b if within_b > 0 else np.nan)
    return out
