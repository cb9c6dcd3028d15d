"""The ablations notebook's closing words: read from the procedure's decisions, never decided
again; a zero estimate has no direction; the study's own comparisons and what the run cannot
show are said too."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers.score_tables import score_table

from colabkit.analysis import analysis_plan, comparisons, contrasts, hypothesis_table, own_contrasts
from colabkit.analysis.summary import estimate_words, summary_html, summary_lines


@pytest.fixture(scope="module")
def decided():
    scores = score_table(n_tasks=8, seeds=2)
    memory = scores["structure"] == "memory"
    scores.loc[memory, "h_init_norm"] = (scores.loc[memory, "h_init_norm"] + 0.4).clip(upper=1.0)  # H3.memory declared
    same = scores[scores["variant"] == "default-dr"].set_index(["task_id", "seed"])["performance"]
    rows = scores["variant"] == "scaffolded-dr"
    scores.loc[rows, "performance"] = [same[(t, s)] for t, s in zip(scores.loc[rows, "task_id"], scores.loc[rows, "seed"])]
    plan = analysis_plan()
    return scores, plan, hypothesis_table(scores, plan)


def test_the_summary_says_each_claims_decision_as_the_procedure_made_it(decided):
    scores, plan, hypotheses = decided
    sections = summary_lines(hypotheses, plan, exploratory=contrasts(scores, plan=plan, mixed_families=()))
    declared, others = list(sections.values())[:2]
    assert any(line.startswith("H3.memory ") and ": declared, adjusted p" in line for line in declared)
    for row in hypotheses.itertuples():  # each claim once, with the table's decision (never a new one)
        [line] = [line for line in declared + others if line.startswith(f"{row.hypothesis} ")]
        assert f": {row.decision}" in line
        assert (line in declared) == bool(row.declared)
    [h2dr] = [line for line in others if line.startswith("H2.dr ")]
    assert hypotheses.set_index("hypothesis").loc["H2.dr", "diff"] == 0
    assert "estimate 0 (no direction)" in h2dr and "direction." not in h2dr.replace("(no direction)", "")
    assert sections["Exploratory tests"][0].startswith("Of the ")
    assert any("not shown absent" in line for line in sections["What this run does not show"])


def test_estimates_read_against_the_claims_direction_and_zero_has_none(decided):
    _, plan, _ = decided
    assert estimate_words(0.1, "greater", plan) == "estimate +0.1, in the claimed direction"
    assert estimate_words(0.1, "less", plan) == "estimate +0.1, against the claimed direction"
    assert estimate_words(1e-17, "greater", plan) == "estimate 0 (no direction)"
    assert estimate_words(np.nan, "greater", plan) == "no estimate"


def test_the_summary_names_the_studys_own_comparisons_and_the_lines_that_apply(decided):
    scores, plan, hypotheses = decided
    base = scores[scores["variant"] == "preassigned-dr"]
    grid = pd.concat([scores, base.assign(variant="preassigned-drs", composition="drs",
                                          session_id=base["session_id"] + "-s")], ignore_index=True)
    compared = comparisons(grid)
    shown = summary_html(summary_lines(hypotheses, plan, compared=compared, own=own_contrasts(grid, compared),
                                       notes=["PLUMBING-GRADE RUN: ...", None]))
    assert "preassigned-drs: no comparison: no Default twin ran" in shown.text
    assert "- PLUMBING-GRADE RUN: ..." in shown.text and "<h4>What this run does not show</h4>" in shown.markup
