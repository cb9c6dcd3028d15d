"""The replication report: the paper's published numbers, sourced, beside this run's; a verdict per claim."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from helpers.score_tables import score_table
from scipy import stats

from colabkit.analysis import analysis_plan, claim_verdicts, claims_table, hypothesis_table, replication_table
from colabkit.analysis.inference.decisions.decide import study_decisions
from colabkit.analysis.inference.estimation.missing import missing_sessions, worst_case_within_task
from colabkit.analysis.inference.planning.plan import ALL_VARIANTS
from colabkit.analysis.inference.power_analysis.simulate import simulated_scores
from colabkit.analysis.reference import seed_paper


def test_the_reference_data_names_its_source_and_leaves_unpublished_numbers_missing():
    paper = seed_paper()
    assert "papernotes.org" in paper["source"] and paper["standard_errors"] == {}
    assert paper["table"]["single"]["h_init_norm"] is None  # undefined for one participant, never 0
    assert paper["table"]["scaffolded-dr"]["performance"] == 0.76 and "preassigned-dr" not in paper["table"]


def test_each_published_number_sits_beside_this_runs_estimate_and_interval():
    scores = score_table(n_tasks=6, seeds=2)
    table = replication_table(scores)
    row = table[(table["variant"] == "default-dr") & (table["metric"] == "performance")].iloc[0]
    mine = scores.loc[scores["variant"] == "default-dr", "performance"].mean()
    assert row["published"] == 0.63 and row["estimate"] == mine and row["ci_low"] < mine < row["ci_high"]
    assert pd.isna(row["published_se"]) and row["n_tasks"] == 6
    missing = replication_table(scores[scores["variant"] != "single"])
    assert missing.loc[missing["variant"] == "single", "note"].str.startswith("no sessions").all()


def test_a_verdict_per_claim_never_reads_non_declaration_as_no_effect():
    scores = score_table(n_tasks=6, seeds=2)
    plan = analysis_plan(metrics=["performance", "h_init_norm", "s_hyp", "w_total", "w_human"])
    verdicts = claim_verdicts(hypothesis_table(scores, plan), plan).set_index("hypothesis")
    assert verdicts.loc["H2.pooled", "paper_effect"] == pytest.approx((0.72 + 0.73 + 0.76 - 0.69 - 0.68 - 0.63) / 3)
    assert not verdicts["verdict"].str.contains("no effect").any()
    assert verdicts["verdict"].str.match(r"^(replicated|contradicted|not decided|declared \(the paper)").all()
    # memory's effect on initiative entropy is published (+0.27 to +0.40), never "not in the paper"
    assert verdicts.loc["H3.memory", "published"] == "+0.27 to +0.40 (stated, per composition)"


SIMULATED = ["performance", "h_init_norm", "s_hyp", "w_total", "w_human"]


def test_with_the_papers_effects_true_no_claim_is_contradicted_without_an_opposite_declaration():
    """Many simulated grids under the paper's effects: estimates fall on the other side of a
    claim often (the old sign-reading verdict called those "contradicted"), yet a claim reads
    "contradicted" only where a planned test declared the opposite; the default plan plans
    none, so never."""
    study = [v for v in ALL_VARIANTS if not v.startswith("dynamic")]  # the study's 13 variants
    plan = analysis_plan(study, metrics=SIMULATED, planned_tasks=8, planned_seeds=2)
    opposite_estimates = 0
    for seed in range(16):
        decisions = study_decisions(simulated_scores(plan, seed=seed), plan)
        hypotheses = decisions[decisions["hypothesis"] != ""]
        verdicts = claim_verdicts(hypotheses, plan, decisions)
        assert not verdicts["verdict"].str.startswith("contradicted").any(), seed
        replicated = verdicts[verdicts["verdict"] == "replicated"]["hypothesis"]
        assert hypotheses.set_index("hypothesis").loc[list(replicated), "declared"].all()
        opposite_estimates += int(verdicts["verdict"].str.contains("on the other side").sum())
    assert opposite_estimates >= 3  # the grids did put estimates against the claims


def test_a_planned_opposite_test_that_is_declared_contradicts_the_claim():
    scores = score_table(n_tasks=12, seeds=3)
    scores.loc[scores["variant"] == "scaffolded-dr", "performance"] -= 0.3  # Scaffolded-DR far below Default-DR
    own = [{"name": "S", "a": "scaffolded-dr", "b": "default-dr", "direction": "greater", "weight": 0.5,
            "claim": "Scaffolded-DR beats Default-DR"},
           {"name": "S.opposite", "a": "scaffolded-dr", "b": "default-dr", "direction": "less", "weight": 0.5,
            "claim": "planned opposite"}]
    plan = analysis_plan(metrics=["performance"], hypotheses=own)
    verdicts = claims_table(scores, plan).set_index("hypothesis")
    assert verdicts.loc["S", "verdict"] == "contradicted: S.opposite declares the opposite"
    assert verdicts.loc["S.opposite", "verdict"].startswith("contradicted: its planned test")  # paper: +0.13
    alone = analysis_plan(metrics=["performance"], hypotheses=own[:1])
    assert claims_table(scores, alone).set_index("hypothesis").loc["S", "verdict"].startswith("not decided")


def test_an_intersection_is_declared_only_when_every_comparison_is():
    plan = analysis_plan(metrics=["performance"])
    scores = score_table(n_tasks=12, seeds=3)
    table = study_decisions(scores, plan).set_index("hypothesis")
    synergy = table.loc["H3.synergy"]
    assert synergy["comparisons"].count("(p ") == 2
    ps = [float(x) for x in re.findall(r"\(p ([0-9.e+-]+)\)", synergy["comparisons"])]
    assert synergy["p_test"] == pytest.approx(max(ps), rel=1e-3)
    scores.loc[scores["variant"] == "preassigned-dr", "performance"] += 0.5  # one comparison fails
    again = study_decisions(scores, plan).set_index("hypothesis").loc["H3.synergy"]
    assert again["p_test"] == 1.0 and not again["declared"]


def test_non_superiority_declares_a_team_not_above_single_and_refuses_one_above_the_margin():
    from colabkit.analysis.inference.decisions.decide import claim_p

    below = {"p_unadjusted": 0.5, "t": -0.5, "diff": -0.02, "se_task": 0.01, "df": 37, "n_tasks": 38}
    assert claim_p(below, "not-greater", 0.5, 0.05) == pytest.approx(2 * stats.t.sf(7, 37))
    above = below | {"diff": 0.06}
    assert claim_p(above, "not-greater", 0.5, 0.05) == 1.0  # above the margin: never declared


def test_the_claims_table_counts_missing_sessions_by_reason_and_checks_the_worst_case():
    scores = score_table(n_tasks=10, seeds=3)
    scores["ended_by"] = "finish"
    crashed = scores.index[(scores["variant"] == "default-dr")][:2]
    scores.loc[crashed, ["ended_by", "performance"]] = ["error", np.nan]
    overflow = scores.index[(scores["variant"] == "scaffolded-dr")][:1]
    scores.loc[overflow, ["ended_by", "performance"]] = ["provider_error", np.nan]
    scores.loc[overflow, "flags"] = "session: ContextWindowExceededError: context length exceeded"
    scores = scores.drop(index=scores.index[(scores["variant"] == "scaffolded-d")][:1])
    counts = missing_sessions(scores, "performance").set_index("variant")
    assert counts.loc["default-dr", "crash"] == 2 and counts.loc["scaffolded-dr", "context overflow"] == 1
    assert counts.loc["scaffolded-d", "absent"] == 1 and counts.loc["single", "missing"] == 0
    plan = analysis_plan(metrics=["performance"])
    table = claims_table(scores, plan).set_index("hypothesis")
    assert table.loc["H2.dr", "missing"] == "3 of 60 (crash 2, context overflow 1)"
    declared = table[table["decision"] == "declared"]
    assert len(declared) and declared["worst_case"].isin(
        ["stays declared", "nothing missing", "not declared under worst-case imputation within task"]).all()
    assert (table.loc[table["decision"] != "declared", "worst_case"] == "").all()
    filled = worst_case_within_task(scores, "performance", {"scaffolded-dr": 1.0, "default-dr": -1.0})
    task = scores.loc[overflow[0], "task_id"]
    assert filled.loc[overflow[0], "performance"] == scores.loc[scores["task_id"] == task, "performance"].min()


def test_a_scored_delivery_column_with_missing_values_is_read_as_a_rate():
    scores = score_table(n_tasks=4, seeds=2)
    delivered = scores["delivered"].astype("boolean")
    delivered.iloc[::7] = pd.NA  # a session the evaluator could not decide
    table = hypothesis_table(scores.assign(delivered=delivered))
    assert table["p_adjusted"].notna().all()
