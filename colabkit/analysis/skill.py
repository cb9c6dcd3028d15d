"""Role-level skills on one scale: who makes a team better, AI models and human seats alike.

In the spirit of CollabSkill (Collaborative Gym PR #14: y = s_agent + s_human + noise, Gaussian
priors mean 0 and SD 1, exact posterior, ranked by mean - 3 SD), extended to this study's design:

    y_i = mu + task_t(i) + s_ai(i) + sum_{h in humans(i)} s_h + structure_k(i) + e_i,
    s ~ N(0, 1), structure ~ N(0, 1), task ~ N(0, tau^2), mu ~ N(0, 10^2), e ~ N(0, sigma^2).

Every term is Gaussian, so the posterior is exact (a linear-Gaussian model: no sampling, no
MixedLM convergence to watch). The two variance parameters are not guessed: (sigma, tau) is the
point of `NOISE_GRID` x `TASK_GRID` with the highest exact marginal likelihood (type-II maximum
likelihood over a grid), reported with the fit. A human entity is a persona played by a model
(`D:<model>`) or a person (`people`), so one table ranks the models a lab runs and the people it
seats. The outcome is centred on its mean before fitting (mu then only absorbs the rest).

**What the design can separate.** Data say something about the difference of two skills only
if the sessions contain it: a and b are *comparable* when e_a - e_b lies in the row space of the
design matrix (an estimable contrast; with tasks and structures in the model this is exact,
e.g. a person who only ever sat in one structure nobody else sat in cannot be told apart from
that structure). Skills are reported within comparability classes, centred on their class's
mean, with the exact posterior SD of that contrast, and ranked inside the class by mean - 3 SD.
An entity alone in its class has no identifiable skill: its value is missing and `identifiable`
False, with the reason. Beside it, `component` is the connected component of the bipartite graph
of AI models and human seats (an edge: they played together), the diagnostic CollabSkill names;
single-agent sessions can still compare AI models through shared tasks, which the graph misses
and the row-space test sees.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from colabkit.errors import ColabkitError

NOISE_GRID = (0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
TASK_GRID = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
SKILL_SD = 1.0
MU_SD = 10.0
CONSERVATIVE_SDS = 3.0
_TOL = 1e-6
SKILL_COLUMNS = ("entity", "kind", "n_sessions", "identifiable", "comparable_class", "component", "skill", "sd",
                 "conservative", "rank", "note")


@dataclass(frozen=True)
class SkillFit:
    """The fitted model: the skill table and what the fit chose."""

    table: pd.DataFrame
    """One row per AI model and human entity (`SKILL_COLUMNS`), ranked within comparable classes."""
    noise_sd: float
    task_sd: float
    log_evidence: float
    n_sessions: int
    separable: bool
    """Whether every AI model is comparable with every other, and every human with every other."""


def skill_frame(scores: pd.DataFrame, sessions: pd.DataFrame, outcome: str,
                people: Mapping[str, Mapping[str, str]] | None = None) -> pd.DataFrame:
    """One row per scored session: outcome, task, AI model, human entities, structure.

    `scores` is the score table (`load_scores`, one judge's rows), `sessions` the store's session
    table (`colabkit.store.load_sessions`); `people` maps a session id to {seat: person} for
    seats a person held (default: the seat's persona and model, `D:<model>`).
    """
    merged = scores[["session_id", "task_id", "structure", outcome]].merge(
        sessions[["session_id", "model", "humans", "models_json"]], on="session_id", how="inner")
    rows = []
    for r in merged.itertuples(index=False):
        models = json.loads(r.models_json)
        seats = [h for h in str(r.humans).split(",") if h]
        named = (people or {}).get(r.session_id, {})
        rows.append({"outcome": getattr(r, outcome), "task_id": r.task_id, "structure": r.structure,
                     "ai": r.model, "humans": tuple(named.get(h, f"{h}:{models[h]['model']}") for h in seats)})
    return pd.DataFrame(rows, columns=["outcome", "task_id", "structure", "ai", "humans"])


def fit_skills(frame: pd.DataFrame) -> SkillFit:
    """Fit the model (module docstring) to `frame` (`skill_frame`'s columns); NaN outcomes are dropped."""
    data = frame.dropna(subset=["outcome"]).reset_index(drop=True)
    if len(data) < 2:
        raise ColabkitError(f"the skill model needs at least 2 sessions with an outcome, got {len(data)}")
    ais = sorted(set(data["ai"]))
    humans = sorted({h for hs in data["humans"] for h in hs})
    tasks, structures = sorted(set(data["task_id"])), sorted(set(data["structure"]))
    names = ["mu", *(f"task:{t}" for t in tasks), *ais, *humans, *(f"structure:{s}" for s in structures)]
    index = {n: i for i, n in enumerate(names)}
    x = np.zeros((len(data), len(names)))
    for i, r in enumerate(data.itertuples(index=False)):
        for name in ("mu", f"task:{r.task_id}", r.ai, *r.humans, f"structure:{r.structure}"):
            x[i, index[name]] += 1.0
    y = data["outcome"].to_numpy(dtype=float)
    y = y - y.mean()
    task_cols = np.array([n.startswith("task:") for n in names])
    best = max(((_log_evidence(x, y, _prior(names, task_cols, t), s), s, t) for s in NOISE_GRID for t in TASK_GRID),
               key=lambda c: c[0])
    log_evidence, noise, task_sd = best
    mean, cov = _posterior(x, y, _prior(names, task_cols, task_sd), noise)
    table = _table(x, data, ais, humans, index, mean, cov)
    separable = all(table.loc[table["kind"] == k, "comparable_class"].nunique() <= 1 for k in ("ai", "human"))
    return SkillFit(table=table, noise_sd=noise, task_sd=task_sd, log_evidence=log_evidence,
                    n_sessions=len(data), separable=separable)


def _prior(names: Sequence[str], task_cols: np.ndarray, task_sd: float) -> np.ndarray:
    variances = np.full(len(names), SKILL_SD**2)
    variances[0] = MU_SD**2
    variances[task_cols] = max(task_sd, 1e-6) ** 2  # tau = 0: tasks pinned at 0 (numerically)
    return variances


def _log_evidence(x: np.ndarray, y: np.ndarray, prior: np.ndarray, noise: float) -> float:
    """log N(y; 0, X diag(prior) X' + noise^2 I), the exact marginal likelihood, computed in the
    parameters' dimension (matrix determinant lemma and Woodbury), not the sessions': a study's
    1,500 sessions would otherwise mean a 1,500 x 1,500 determinant per grid point."""
    n = len(y)
    precision = np.diag(1.0 / prior) + x.T @ x / noise**2
    chol = np.linalg.cholesky(precision)
    projected = np.linalg.solve(chol, x.T @ y / noise**2)
    logdet = n * np.log(noise**2) + float(np.sum(np.log(prior))) + 2.0 * float(np.sum(np.log(np.diag(chol))))
    quadratic = float(y @ y) / noise**2 - float(projected @ projected)
    return float(-0.5 * (logdet + quadratic + n * np.log(2 * np.pi)))


def _posterior(x: np.ndarray, y: np.ndarray, prior: np.ndarray, noise: float) -> tuple[np.ndarray, np.ndarray]:
    precision = x.T @ x / noise**2 + np.diag(1.0 / prior)
    cov = np.linalg.inv(precision)
    return cov @ x.T @ y / noise**2, cov


def comparable_classes(x: np.ndarray, columns: Sequence[int]) -> list[int]:
    """Class labels of `columns`: two share a class when their difference is estimable."""
    projector = np.linalg.pinv(x) @ x
    labels = list(range(len(columns)))
    for a, b in itertools.combinations(range(len(columns)), 2):
        contrast = np.zeros(x.shape[1])
        contrast[columns[a]], contrast[columns[b]] = 1.0, -1.0
        if np.linalg.norm(projector @ contrast - contrast) < _TOL:
            old, new = labels[b], labels[a]
            labels = [new if label == old else label for label in labels]
    return labels


def graph_components(pairs: Iterable[tuple[str, Sequence[str]]]) -> dict[str, int]:
    """Connected components of the bipartite graph of AI models and human seats (who played with whom)."""
    parent: dict[str, str] = {}

    def root(node: str) -> str:
        while parent.setdefault(node, node) != node:
            node = parent[node]
        return node

    for ai, humans in pairs:
        for h in humans:
            parent[root(f"ai:{ai}")] = root(f"human:{h}")
        root(f"ai:{ai}")
    roots = sorted({root(n) for n in parent})
    return {n: roots.index(root(n)) for n in parent}


def _table(x: np.ndarray, data: pd.DataFrame, ais: list[str], humans: list[str], index: Mapping[str, int],
           mean: np.ndarray, cov: np.ndarray) -> pd.DataFrame:
    components = graph_components(zip(data["ai"], data["humans"]))
    counts = {a: int((data["ai"] == a).sum()) for a in ais} | \
        {h: int(sum(h in hs for hs in data["humans"])) for h in humans}
    rows = []
    for kind, entities in (("ai", ais), ("human", humans)):
        labels = comparable_classes(x, [index[e] for e in entities])
        for cls in sorted(set(labels)):
            members = [e for e, label in zip(entities, labels) if label == cls]
            for e in members:
                row = {"entity": e, "kind": kind, "n_sessions": counts[e], "comparable_class": f"{kind}-{cls}",
                       "component": components[f"{kind}:{e}"]}
                if len(members) < 2:
                    why = "the only one of its kind" if len(entities) == 1 else \
                        "not separable: no session design links it to another of its kind"
                    rows.append({**row, "identifiable": False, "note": why})
                    continue
                contrast = np.zeros(len(mean))
                contrast[[index[m] for m in members]] = -1.0 / len(members)
                contrast[index[e]] += 1.0
                sd = float(np.sqrt(contrast @ cov @ contrast))
                skill = float(contrast @ mean)
                rows.append({**row, "identifiable": True, "skill": skill, "sd": sd,
                             "conservative": skill - CONSERVATIVE_SDS * sd, "note": "relative to its class's mean"})
    table = pd.DataFrame(rows, columns=list(SKILL_COLUMNS))
    table["rank"] = table.groupby("comparable_class")["conservative"].rank(ascending=False, method="min")
    return table.sort_values(["kind", "comparable_class", "rank"], na_position="last").reset_index(drop=True)
