"""One study-wise error rate: the graphical multiple-test procedure of Bretz et al. (2009).

Bretz, Maurer, Brannath and Posch, "A graphical approach to sequentially rejective multiple
test procedures", Statistics in Medicine 28:586-604 (2009). Each hypothesis H_i gets an
initial weight w_i (sum <= 1): its share of alpha. A transition matrix G (g_ii = 0, rows
summing to <= 1) says where a rejected hypothesis's level goes: when H_i is rejected,

    w_j <- w_j + w_i g_ij,   g_jk <- (g_jk + g_ji g_ik) / (1 - g_ji g_ij)   (0 when g_ji g_ij = 1)

for the hypotheses j != k still in the set, and H_i leaves it. The procedure controls the
familywise error over *all* its hypotheses at alpha, strongly and for any dependence between
the tests (it is a shortcut of a closed test of weighted Bonferroni tests). Holm, Bonferroni,
the fixed sequence, the fallback procedure and serial or parallel gatekeeping are special
cases (`tests/test_analysis_graph.py` checks each).

`graph_adjusted` gives the adjusted p-values (the smallest alpha at which each hypothesis
would be rejected): always reject the smallest p_i / w_i next; the j-th rejected gets the
running maximum of those ratios (capped at 1); a hypothesis whose weight is 0 when nothing
else can be rejected gets 1. Rejected at alpha <=> adjusted p <= alpha, the sequential
decision. `graph_reject` runs the sequence itself and gives the local weight each hypothesis was
rejected at, or its final weight (what an interval agreeing with the decision is drawn at). A missing p
(a test that could not run) counts as 1: it can never be rejected, so it never passes its
level on, and the others are never made easier by a failure.
"""

from __future__ import annotations

import numpy as np

TOLERANCE = 1e-12


def check_graph(weights: np.ndarray, transitions: np.ndarray) -> None:
    """Fail unless `weights` and `transitions` form a valid graph (module docstring)."""
    w, g = np.asarray(weights, float), np.asarray(transitions, float)
    if w.ndim != 1 or g.shape != (len(w), len(w)):
        raise ValueError(f"a graph of {len(w)} hypotheses needs a {len(w)} x {len(w)} transition matrix, got {g.shape}")
    if (w < -TOLERANCE).any() or w.sum() > 1 + 1e-9:
        raise ValueError(f"initial weights must be >= 0 and sum to <= 1, got sum {w.sum():.6g}")
    if (g < -TOLERANCE).any() or (np.abs(np.diag(g)) > TOLERANCE).any() or (g.sum(axis=1) > 1 + 1e-9).any():
        raise ValueError("transition weights must be >= 0, 0 on the diagonal, each row summing to <= 1")


def pass_on(i: int, w: np.ndarray, g: np.ndarray, active: np.ndarray) -> None:
    """Remove H_i from the graph in place, passing its level on (module docstring): what a
    rejection does, and how a hypothesis the plan cannot test leaves the graph before the data."""
    active[i] = False
    rest = np.flatnonzero(active)
    w[rest] += w[i] * g[i, rest]
    g_ji, g_ij, g_ik = g[rest, i], g[i, rest], g[i, rest]
    denominator = 1.0 - g_ji * g_ij
    with np.errstate(divide="ignore", invalid="ignore"):
        updated = (g[np.ix_(rest, rest)] + np.outer(g_ji, g_ik)) / denominator[:, None]
    updated[denominator <= TOLERANCE, :] = 0.0
    np.fill_diagonal(updated, 0.0)
    g[np.ix_(rest, rest)] = updated
    w[i], g[i, :], g[:, i] = 0.0, 0.0, 0.0


def graph_adjusted(p_values: np.ndarray, weights: np.ndarray, transitions: np.ndarray) -> np.ndarray:
    """The adjusted p of every hypothesis under the graph (module docstring)."""
    check_graph(weights, transitions)
    p = np.where(np.isnan(np.asarray(p_values, float)), 1.0, np.asarray(p_values, float))
    w, g = np.asarray(weights, float).copy(), np.asarray(transitions, float).copy()
    m = len(p)
    adjusted = np.ones(m)
    active = np.ones(m, dtype=bool)
    running = 0.0
    while active.any():
        index = np.flatnonzero(active)
        with np.errstate(divide="ignore"):
            ratio = np.where(w[index] > TOLERANCE, p[index] / np.maximum(w[index], TOLERANCE), np.inf)
        best = int(np.argmin(ratio))
        if not np.isfinite(ratio[best]):
            break  # nothing left has any level: the rest stay at 1
        i = int(index[best])
        running = max(running, min(1.0, float(ratio[best])))
        adjusted[i] = running
        pass_on(i, w, g, active)
    return adjusted


def graph_reject(p_values: np.ndarray, weights: np.ndarray, transitions: np.ndarray,
                 alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The sequential procedure itself at `alpha`: (rejected, local weight), the weight being
    the one a rejected hypothesis was rejected at (smallest p / w first) or a retained one's
    weight when the procedure stopped (which does not depend on the order)."""
    check_graph(weights, transitions)
    p = np.where(np.isnan(np.asarray(p_values, float)), 1.0, np.asarray(p_values, float))
    w, g = np.asarray(weights, float).copy(), np.asarray(transitions, float).copy()
    active, rejected = np.ones(len(p), dtype=bool), np.zeros(len(p), dtype=bool)
    level = np.zeros(len(p))
    while True:
        candidates = np.flatnonzero(active & (p <= w * alpha * (1 + 1e-9)) & (w > TOLERANCE))
        if not len(candidates):
            return rejected, np.where(rejected, level, w)
        i = int(candidates[np.argmin(p[candidates] / w[candidates])])
        rejected[i], level[i] = True, w[i]
        pass_on(i, w, g, active)


def holm_graph(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Holm's procedure as a graph: equal weights, each passes its level equally to the rest."""
    g = np.full((m, m), 1.0 / (m - 1)) if m > 1 else np.zeros((m, m))
    np.fill_diagonal(g, 0.0)
    return np.full(m, 1.0 / m), g
