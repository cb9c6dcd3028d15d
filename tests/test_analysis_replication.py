"""The replication report: the paper's published numbers, sourced, beside this run's; a verdict per claim."""

from __future__ import annotations

import pandas as pd
from helpers.score_tables import score_table

from colabkit.analysis import analysis_plan, claim_verdicts, hypothesis_table, replication_table
from colabkit.analysis.reference import seed_paper
from colabkit.analysis.replication import _verdict


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
    assert _verdict("greater", 0.1, 0.05, True, "declared") == "replicated (declared, same direction)"
    assert _verdict("greater", 0.1, 0.05, False, "not declared") == "same direction, not declared"
    assert _verdict("less", -0.08, 0.02, False, "not declared") == "contradicted (opposite direction)"
    assert _verdict("equivalent", 0.3, 0.1, False, "inconclusive (TOST power < 80%)").startswith("inconclusive")
    scores = score_table(n_tasks=6, seeds=2)
    plan = analysis_plan(metrics=["performance", "h_init_norm", "s_hyp", "w_total", "w_human"])
    verdicts = claim_verdicts(hypothesis_table(scores, plan), plan).set_index("hypothesis")
    assert verdicts.loc["H2.pooled", "paper_effect"] == (0.72 + 0.73 + 0.76 - 0.69 - 0.68 - 0.63) / 3
    assert not verdicts["verdict"].str.contains("no effect").any()


def test_a_scored_delivery_column_with_missing_values_is_read_as_a_rate():
    scores = score_table(n_tasks=4, seeds=2)
    delivered = scores["delivered"].astype("boolean")
    delivered.iloc[::7] = pd.NA  # a session the evaluator could not decide
    table = hypothesis_table(scores.assign(delivered=delivered))
    assert table["p_adjusted"].notna().all()
