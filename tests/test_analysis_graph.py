"""The graphical procedure (Bretz et al. 2009) reproduces its special cases and its published
worked example, and decides as the sequence does."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from colabkit.analysis.inference.planning.graph import graph_adjusted, graph_reject, holm_graph

RNG = np.random.default_rng(7)
P_SETS = [RNG.uniform(0, 0.08, 5) for _ in range(30)]


def chain(m: int) -> np.ndarray:
    g = np.zeros((m, m))
    g[np.arange(m - 1), np.arange(1, m)] = 1.0
    return g


def test_equal_weights_and_no_edges_is_bonferroni_and_the_complete_graph_is_holm():
    for p in P_SETS:
        m = len(p)
        bonferroni = graph_adjusted(p, np.full(m, 1 / m), np.zeros((m, m)))
        assert np.allclose(bonferroni, multipletests(p, method="bonferroni")[1])
        assert np.allclose(graph_adjusted(p, *holm_graph(m)), multipletests(p, method="holm")[1])


def test_fixed_sequence_stops_at_the_first_failure():
    for p in P_SETS:
        adjusted = graph_adjusted(p, np.eye(len(p))[0], chain(len(p)))
        assert np.allclose(adjusted, np.maximum.accumulate(p))  # the fixed-sequence adjusted p
        rejected, _ = graph_reject(p, np.eye(len(p))[0], chain(len(p)), 0.05)
        first_failure = int(np.argmax(np.append(p, 1.0) > 0.05))
        assert rejected.tolist() == [i < first_failure for i in range(len(p))]


def test_the_fallback_procedure_carries_a_rejected_level_forward_only():
    w, g = np.array([0.5, 0.5]), chain(2)
    # H1 rejected at alpha/2 hands its level on: H2 is tested at the full alpha
    assert graph_reject(np.array([0.02, 0.04]), w, g, 0.05)[0].tolist() == [True, True]
    # H2 rejected first keeps nothing for H1 (no edge back): H1 still at alpha/2
    assert graph_reject(np.array([0.03, 0.001]), w, g, 0.05)[0].tolist() == [False, True]


def test_the_published_two_primary_two_secondary_example():
    """Bretz et al. (2009)'s gatekeeping graph, as in the gMCP / lrstat documentation
    (`fadjpbon`): w = (1/2, 1/2, 0, 0); each primary passes to its secondary, each secondary to
    the other primary. Adjusted p worked by hand from the paper's algorithm."""
    w = np.array([0.5, 0.5, 0.0, 0.0])
    g = np.array([[0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0], [1, 0, 0, 0]], dtype=float)
    assert np.allclose(graph_adjusted(np.array([0.01, 0.005, 0.015, 0.022]), w, g), [0.02, 0.01, 0.03, 0.03])
    assert np.allclose(graph_adjusted(np.array([0.02, 0.015, 0.010, 0.023]), w, g), [0.04, 0.03, 0.04, 0.04])


def test_a_secondary_never_shows_a_p_below_its_gatekeeper():
    w = np.array([0.5, 0.5, 0.0, 0.0])
    g = np.array([[0, 0.5, 0.5, 0], [0.5, 0, 0, 0.5], [0, 1, 0, 0], [1, 0, 0, 0]], dtype=float)
    for p in P_SETS:
        p = p[:4].copy()
        adjusted = graph_adjusted(p, w, g)
        assert adjusted[2] >= adjusted[0] - 1e-12 and adjusted[3] >= adjusted[1] - 1e-12


def test_adjusted_p_decides_as_the_sequence_does():
    w = np.array([0.4, 0.4, 0.2, 0.0, 0.0])
    g = np.array([[0, 0.5, 0, 0.5, 0], [0.5, 0, 0, 0, 0.5], [0.5, 0.5, 0, 0, 0],
                  [0, 0, 0.5, 0, 0.5], [0, 0, 0.5, 0.5, 0]])
    for p in P_SETS:
        for alpha in (0.01, 0.025, 0.05):
            assert (graph_reject(p, w, g, alpha)[0] == (graph_adjusted(p, w, g) <= alpha)).all()


def test_a_missing_p_is_never_rejected_and_weights_above_one_are_refused():
    adjusted = graph_adjusted(np.array([np.nan, 0.001]), *holm_graph(2))
    assert adjusted[0] == 1.0 and adjusted[1] == pytest.approx(0.002)
    with pytest.raises(ValueError, match="sum to <= 1"):
        graph_adjusted(np.array([0.01, 0.02]), np.array([0.7, 0.7]), np.zeros((2, 2)))


def test_in_the_default_graph_no_claim_shows_a_p_below_what_gates_it_and_decisions_follow_adjusted_p():
    """The default plan's graph with exploratory tests after it, on random p-values (some
    claims true, some null): a claim with no initial share never has an adjusted p below the
    smallest of the claims that pass it level (it can be reached only after one of them is
    declared), and at every alpha the sequence declares exactly the adjusted p's <= alpha, so a
    claim not declared, or never reached, never shows a p at or below alpha."""
    from colabkit.analysis.inference.planning.hypotheses import PAPER_HYPOTHESES, study_graph

    hypotheses, exploratory = PAPER_HYPOTHESES, 12
    w, g = study_graph(hypotheses, exploratory)
    gates = {i: [j for j, parent in enumerate(hypotheses) if h.name in parent.then]
             for i, h in enumerate(hypotheses) if h.weight == 0}
    rng = np.random.default_rng(34)
    for _ in range(300):
        p = np.where(rng.random(len(w)) < 0.4, rng.uniform(0, 0.002, len(w)), rng.uniform(0, 1, len(w)))
        adjusted = graph_adjusted(p, w, g)
        for i, parents in gates.items():
            assert adjusted[i] >= adjusted[parents].min() - 1e-12, hypotheses[i].name
        for alpha in (0.01, 0.05):
            declared, level = graph_reject(p, w, g, alpha)
            assert (declared == (adjusted <= alpha)).all()
            assert (adjusted[~declared] > alpha).all() and (adjusted[(level == 0) & ~declared] > alpha).all()
