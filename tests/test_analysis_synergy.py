"""Synergy against the members alone (issue 47): declared in a simulated grid where the team is
built to beat its best member alone, not where it only matches it; exploratory tests that leave
the claims' decisions as they were; a description, never a decision, where the plan has none."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from colabkit.analysis.inference.decisions.decide import study_decisions
from colabkit.analysis.inference.planning.hypotheses import Hypothesis
from colabkit.analysis.inference.planning.plan import analysis_plan
from colabkit.analysis.inference.planning.synergy import synergy_tests
from colabkit.analysis.synergy import NOT_PLANNED, synergy_table

TEAMS = ("default-dr", "scaffolded-dr")
ALONE = ("single", "solo-d", "solo-r")
CLAIM = Hypothesis(name="A", a="scaffolded-dr", b="default-dr", metric="performance", direction="greater", weight=1.0)


def grid(means: dict[str, float], tasks: int = 30, seeds: int = 3, noise: float = 0.05, seed: int = 0) -> pd.DataFrame:
    """Performance per task and seed: a task's difficulty plus each variant's mean plus noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(tasks):
        level = rng.normal(0.5, 0.15)
        for s in range(seeds):
            for variant, mean in means.items():
                structure, _, composition = variant.rpartition("-") if "-" in variant else ("single", "", "none")
                rows.append({"session_id": f"{variant}-{t}-{s}", "task_id": f"t{t}", "variant": variant,
                             "structure": structure, "composition": composition, "seed": s,
                             "performance": level + mean + rng.normal(0, noise)})
    return pd.DataFrame(rows)


def plan(*variants: str):
    return analysis_plan(variants=variants, hypotheses=(CLAIM,), metrics=("performance",))


BEATS = {"single": 0.0, "solo-d": -0.10, "solo-r": -0.05, "default-dr": -0.05, "scaffolded-dr": 0.15}
MATCHES = {**BEATS, "scaffolded-dr": 0.0}


def rows_of(table: pd.DataFrame, team: str) -> pd.Series:
    return table[table["team"] == team].set_index("kind")["decision"]


def test_strong_synergy_is_declared_where_the_team_beats_its_best_member_and_not_where_it_matches_it():
    full = plan(*TEAMS, *ALONE)
    beats = synergy_table(grid(BEATS), full)
    assert rows_of(beats, "scaffolded-dr")["strong"] == "declared"
    strong = beats[(beats["team"] == "scaffolded-dr") & (beats["kind"] == "strong")].iloc[0]
    assert strong["versus"] == "single" and strong["diff"] == pytest.approx(0.15, abs=0.03)  # the best member
    assert rows_of(beats, "default-dr")["strong"] != "declared"
    assert rows_of(beats, "default-dr")["process-loss"] == "declared"  # below the AI alone by construction
    matches = synergy_table(grid(MATCHES), full)
    assert rows_of(matches, "scaffolded-dr")["strong"] != "declared"
    assert rows_of(matches, "scaffolded-dr")["weak"] == "declared"  # above its average member, not its best
    assert set(beats["status"]) == {"exploratory test of the plan (its graph, after the claims)"}


def test_synergy_tests_leave_the_claims_decisions_and_the_default_plan_unchanged():
    scores = grid(BEATS)
    without = study_decisions(scores, plan(*TEAMS, "single"))
    with_solo = study_decisions(scores, plan(*TEAMS, *ALONE))
    claims = ["hypothesis", "p_test", "p_adjusted", "declared", "local_alpha"]
    pd.testing.assert_frame_equal(without[without["hypothesis"] != ""][claims].reset_index(drop=True),
                                  with_solo[with_solo["hypothesis"] != ""][claims].reset_index(drop=True))
    assert synergy_tests(analysis_plan().variants) == []  # the paper's plan plans none
    assert (with_solo["family"] == "exploratory: synergy").sum() == 6


def test_without_the_solo_variants_planned_the_table_describes_and_decides_nothing():
    described = synergy_table(grid(BEATS), plan(*TEAMS, "single"))
    assert set(described["decision"]) == {NOT_PLANNED} and described["p_adjusted"].isna().all()
    assert set(described["status"]) == {"descriptive"}
    strong = described[(described["team"] == "scaffolded-dr") & (described["kind"] == "strong")].iloc[0]
    assert strong["ci_low"] > 0  # the interval is shown, and still not a decision


def test_a_missing_member_alone_is_missing_not_zero():
    scores = grid(BEATS)
    scores.loc[scores["variant"] == "solo-r", "performance"] = np.nan
    table = synergy_table(scores, plan(*TEAMS, *ALONE))
    strong = table[(table["team"] == "scaffolded-dr") & (table["kind"] == "strong")].iloc[0]
    # the comparison without data binds: no estimate, and it counts as p = 1 in the procedure
    assert strong["versus"] == "solo-r" and np.isnan(strong["diff"]) and strong["decision"] == "not declared"
    assert strong["p_adjusted"] == 1.0
