"""How far apart are people and simulated users, on a corpus where both did the same tasks?

The instrument's numbers (a feature's standardised difference, the classifier's AUC, the
Chamfer ratio) mean little without a scale. `calibrate` measures two points of one on a
corpus with real and simulated users (RecLLMSim):
- the **noise floor**: two halves of the people, split by person (nobody in both halves),
  held against each other; what the instrument reports when nothing but the draw differs;
- the **signal**: the people held against the simulated users on the same tasks, the
  simulated rows drawn per task in the people's proportions (a task's signature cannot pose
  as the simulator's style).
Per feature: the median |Hedges' g| over `repeats` random halves (floor: half vs half;
signal: half vs as many simulated rows) and the classifier's AUC on that feature alone
(signal; folds and the bootstrap interval grouped by user, so one person's or one profile's
conversations count as one draw). Combined: the classifier on all usable features, for the
floor (one split into halves) and the signal, and the median Chamfer distance and
people-to-simulated ratio of each.
A feature with no spread or no value in the corpus is not calibrated (`usable`): for a chat
corpus the workspace features (cells, edits, decisions, failures) and disclosure (no private
briefing) drop out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict
from scipy.stats import norm

from colabkit.analysis.realism.compare import chamfer_coverage, classifier_test, standardised_differences, usable
from colabkit.analysis.realism.fingerprints import FEATURES, PERSON

GROUP = "user_id"


class ScalePoint(BaseModel):
    """One calibration point: AUC with its 95% interval, Chamfer distance and ratio."""

    model_config = ConfigDict(frozen=True)

    auc: float
    auc_low: float
    auc_high: float
    chamfer: float
    chamfer_ratio: float


class FeaturePoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    floor_g: float
    signal_g: float
    auc: float
    auc_low: float
    auc_high: float


def task_matched(people: pd.DataFrame, simulated: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Simulated rows drawn per task in the people's proportions, as many as the scarcest task
    allows (tasks without people dropped)."""
    have, want = simulated["task_id"].value_counts(), people["task_id"].value_counts()
    shared = [t for t in want.index if t in have.index]
    if not shared:
        return simulated.iloc[0:0]
    rate = min(1.0, min(have[t] / want[t] for t in shared))
    parts = [simulated[simulated["task_id"] == t].sample(n=max(1, int(want[t] * rate)), random_state=seed)
             for t in shared]
    return pd.concat(parts)


def halves(people: pd.DataFrame, rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The people split into two halves by person (every person's rows on one side)."""
    users = people[GROUP].unique()
    first = set(rng.permutation(users)[: len(users) // 2])
    inside = people[GROUP].isin(first)
    return people[inside], people[~inside]


def _abs_g(a: pd.DataFrame, b: pd.DataFrame, features: Sequence[str]) -> pd.Series:
    return standardised_differences(a, b, features).set_index("feature")["g"].abs()


def _point(test_a: pd.DataFrame, test_b: pd.DataFrame, features: Sequence[str], chamfers: list[dict[str, float]],
           draws: int, seed: int) -> ScalePoint:
    test = classifier_test(test_a, test_b, features, group=GROUP, permutations=0, seed=seed, draws=draws)
    return ScalePoint(auc=test.auc, auc_low=test.auc_low, auc_high=test.auc_high,
                      chamfer=float(np.median([c["chamfer"] for c in chamfers])),
                      chamfer_ratio=float(np.median([c["a_to_b_ratio"] for c in chamfers])))


def calibrate(prints: pd.DataFrame, features: Sequence[str] = FEATURES, *, repeats: int = 20, draws: int = 1000,
              seed: int = 0) -> tuple[pd.DataFrame, dict[str, ScalePoint]]:
    """(per-feature table, {"floor": ..., "signal": ...}) of fingerprints with `kind` and
    `user_id` (`corpus_fingerprints`); module docstring."""
    people = prints[prints["kind"] == PERSON]
    simulated = task_matched(people, prints[prints["kind"] != PERSON], seed)
    feats = [f for f in usable(people, features) if f in usable(simulated, features)]
    rng = np.random.default_rng(seed)
    floor_g, signal_g, floor_c, signal_c = [], [], [], []
    for _ in range(repeats):
        one, two = halves(people, rng)
        sims = simulated.sample(n=min(len(one), len(simulated)), random_state=int(rng.integers(2**31)))
        floor_g.append(_abs_g(one, two, feats))
        signal_g.append(_abs_g(one, sims, feats))
        floor_c.append(chamfer_coverage(one, two, feats))
        signal_c.append(chamfer_coverage(one, sims, feats))
    floor, signal = pd.concat(floor_g, axis=1).median(axis=1), pd.concat(signal_g, axis=1).median(axis=1)
    rows = []
    for feat in feats:
        test = classifier_test(people, simulated, [feat], group=GROUP, permutations=0, seed=seed, draws=draws)
        rows.append({"feature": feat, "floor_g": floor[feat], "signal_g": signal[feat], "auc": test.auc,
                     "auc_low": test.auc_low, "auc_high": test.auc_high})
    one, two = halves(people, np.random.default_rng(seed))
    points = {"floor": _point(one, two, feats, floor_c, draws, seed),
              "signal": _point(people, simulated, feats, signal_c, draws, seed)}
    return pd.DataFrame(rows, columns=["feature", *FeaturePoint.model_fields]), points


def between(a: pd.DataFrame, b: pd.DataFrame, features: Sequence[str], *, repeats: int = 20, draws: int = 1000,
            seed: int = 0) -> ScalePoint:
    """Two samples of people (another study, another platform) held against each other like
    the signal: the classifier on all rows, the Chamfer medians over equal-sized draws."""
    rng = np.random.default_rng(seed)
    size = min(len(a), len(b))
    chamfers = [chamfer_coverage(a.sample(n=size, random_state=int(rng.integers(2**31))),
                                 b.sample(n=size, random_state=int(rng.integers(2**31))), features)
                for _ in range(repeats)]
    return _point(a, b, features, chamfers, draws, seed)


def calibration_markdown(table: pd.DataFrame, points: dict[str, ScalePoint], uncalibrated: Sequence[str]) -> str:
    """The calibration as a markdown table: per feature, then combined, then what is left out."""
    lines = ["| fingerprint | real vs real: abs(g) | real vs simulated: abs(g) | AUC real vs simulated [95% CI] |",
             "| --- | --- | --- | --- |"]
    for r in table.itertuples(index=False):
        lines.append(f"| `{r.feature}` | {r.floor_g:.2f} | {r.signal_g:.2f} | {r.auc:.2f} [{r.auc_low:.2f}, "
                     f"{r.auc_high:.2f}] |")
    floor, signal = points["floor"], points["signal"]
    lines.append(f"| **combined** (Chamfer distance; AUC) | {floor.chamfer:.2f}; AUC {floor.auc:.2f} "
                 f"[{floor.auc_low:.2f}, {floor.auc_high:.2f}] | {signal.chamfer:.2f} | {signal.auc:.2f} "
                 f"[{signal.auc_low:.2f}, {signal.auc_high:.2f}] |")
    lines.append(f"| combined: Chamfer ratio (people to the other sample, over people's own spacing) | "
                 f"{floor.chamfer_ratio:.2f} | {signal.chamfer_ratio:.2f} | |")
    if uncalibrated:
        lines.append("")
        lines.append("Not calibrated (no value or no spread on this corpus): "
                     + ", ".join(f"`{f}`" for f in uncalibrated) + ".")
    return "\n".join(lines)


def auc_interval_width(auc: float, n_people: int, n_simulated: int, level: float = 0.95) -> float:
    """Expected width of an AUC's interval with `n_people` and `n_simulated` independent
    sessions (Hanley and McNeil 1982); sessions of one person or one task are not independent,
    so a grouped design needs more (the design effect; see docs/realism.md)."""
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    var = (auc * (1 - auc) + (n_people - 1) * (q1 - auc * auc) + (n_simulated - 1) * (q2 - auc * auc)) \
        / (n_people * n_simulated)
    return float(2 * norm.ppf(0.5 + level / 2) * np.sqrt(max(var, 0.0)))


def people_needed(width: float, auc: float, simulated_per_person: float = 2.0, level: float = 0.95,
                  limit: int = 100_000) -> int:
    """The fewest person sessions whose AUC interval is at most `width` wide, beside
    `simulated_per_person` simulated sessions each (simulated sessions are cheap)."""
    for n in range(2, limit):
        if auc_interval_width(auc, n, max(2, round(n * simulated_per_person)), level) <= width:
            return n
    return limit
