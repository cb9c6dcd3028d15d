"""The analysis statistics against values computed by hand on a constructed table.

The arithmetic is written out in each test so a reader can check it without trusting the code.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from helpers.score_tables import gate_table, score_table

from colabkit.analysis import (
    clustered_standard_error,
    contrasts,
    decision_counts,
    format_study_table,
    gate_summary,
    load_score_table,
    rubber_stamp_rate,
    study_table,
)
from colabkit.analysis.gates import JUDGE_LABELS
from colabkit.errors import ColabkitError

NAN = math.nan
# default-d and scaffolded-d on three tasks x two seeds; default-d has one missing score.
PERFORMANCE = {
    "default-d": {("t1", 0): 0.5, ("t1", 1): 0.7, ("t2", 0): 0.2, ("t2", 1): 0.4, ("t3", 0): 0.9, ("t3", 1): NAN},
    "scaffolded-d": {("t1", 0): 0.6, ("t1", 1): 0.9, ("t2", 0): 0.3, ("t2", 1): 0.3, ("t3", 0): 1.0, ("t3", 1): 0.8},
}


def small_table() -> pd.DataFrame:
    rows = []
    for variant, cells in PERFORMANCE.items():
        for (task, seed), value in cells.items():
            rows.append({"session_id": f"{variant}-{task}-{seed}", "task_id": task, "variant": variant,
                         "structure": variant.split("-")[0], "composition": "d", "seed": seed,
                         "performance": value, "delivered": value == value})
    return pd.DataFrame(rows)


def test_task_clustered_standard_error_by_hand_and_as_statsmodels_has_it():
    values, tasks = [0.5, 0.7, 0.2, 0.4, 0.9, NAN], ["t1", "t1", "t2", "t2", "t3", "t3"]
    # residuals from 0.54 summed per task: t1 -.04 + .16 = .12, t2 -.34 - .14 = -.48, t3 .36
    # G = 3 clusters, N = 5: sqrt(3/2 * (.0144 + .2304 + .1296)) / 5
    expected = math.sqrt(3 / 2 * (0.12**2 + 0.48**2 + 0.36**2)) / 5  # 0.14988
    assert clustered_standard_error(values, tasks) == pytest.approx(expected, abs=1e-12)
    y = np.array(values[:5])
    ols = sm.OLS(y, np.ones(5)).fit(cov_type="cluster", cov_kwds={"groups": np.array([0, 0, 1, 1, 2])})
    assert ols.bse[0] == pytest.approx(expected, rel=1e-9)
    assert math.isnan(clustered_standard_error([0.1, 0.2], ["t1", "t1"]))  # one cluster


def test_the_study_table_reports_mean_and_task_se_per_variant_never_a_session_se():
    table = study_table(small_table(), metrics=["performance", "delivered"])
    row = table[(table["variant"] == "default-d") & (table["metric"] == "performance")].iloc[0]
    assert (row["n"], row["n_tasks"]) == (5, 3)
    assert row["mean"] == pytest.approx(0.54)
    assert "se" not in table.columns  # an SE over sessions treats a task's seeds as independent
    assert row["se_task"] == pytest.approx(math.sqrt(1.5 * 0.3744) / 5)
    delivered = table[(table["variant"] == "default-d") & (table["metric"] == "delivered")].iloc[0]
    assert delivered["mean"] == pytest.approx(5 / 6) and delivered["n"] == 6  # a rate over all sessions
    assert list(table["variant"].unique()) == ["default-d", "scaffolded-d"]  # the study's order
    wide = format_study_table(table)
    assert wide.loc["default-d", "Performance"] == "0.54 ± 0.15 (n=5, 3 tasks)"
    assert list(wide.columns) == ["sessions", "Performance", "Delivery", "judge_grade", "judge_reliable", "plan_hash"]
    one = format_study_table(study_table(small_table().query("seed == 0 and task_id == 't1'"), ["performance"]))
    assert one.loc["default-d", "Performance"] == "0.50 (n=1, 1 task)"  # one session: no SE to show


def test_gate_summary_and_rubber_stamps_by_hand():
    gates = gate_table()
    # approvals with a grounded label: s1 req-1 (yes), s1 req-2 (no), s2 req-1 (no); s2 req-2 unjudged
    assert rubber_stamp_rate(gates) == pytest.approx(2 / 3)
    summary = gate_summary(gates).set_index("variant")
    assert summary.loc["scaffolded-dr", "approval_rate"] == pytest.approx(2 / 3)
    assert summary.loc["scaffolded-dr", "rubber_stamp_rate"] == pytest.approx(1 / 2)
    assert summary.loc["preassigned-dr", "undecided_rate"] == pytest.approx(1 / 3)
    assert summary.loc["preassigned-dr", "expertise_fit_rate"] == pytest.approx(0.0)  # one judged, False
    counts = decision_counts(gates)
    assert counts.query("action == 'edit_result' and signatory == 'R' and decision == 'approved'")["count"].item() == 3
    assert counts["count"].sum() == len(gates)


def test_gate_labels_read_from_nullable_columns_count_missing_as_missing():
    gates = gate_table()
    nullable = gates.assign(**{label: gates[label].astype("boolean") for label in JUDGE_LABELS})
    assert nullable["grounded"].isna().any()  # pandas' NA, as parquet gives it back
    assert rubber_stamp_rate(nullable) == pytest.approx(rubber_stamp_rate(gates))
    pd.testing.assert_frame_equal(gate_summary(nullable), gate_summary(gates))


def test_a_session_scored_by_two_judges_must_be_selected_first():
    scores = score_table(n_tasks=2, seeds=1)
    twice = pd.concat([scores.assign(judge_model="a"), scores.head(3).assign(judge_model="b")])
    with pytest.raises(ColabkitError, match=r"3 session\(s\) scored more than once \(judge_model: a, b\)"):
        study_table(twice)
    assert len(study_table(twice[twice["judge_model"] == "a"])) == 13 * 7


def test_an_empty_score_table_is_a_clear_error_and_empty_gates_an_empty_figure():
    with pytest.raises(ColabkitError, match="score table is empty"):
        study_table(score_table().iloc[0:0])
    from colabkit.analysis import gate_figure

    fig = gate_figure(gate_table().iloc[0:0])
    assert [t.get_text() for t in fig.texts] == ["no gated requests"]
    assert len(gate_figure(gate_table()).axes) == 2


@pytest.mark.parametrize("variants", [["default-dr", "scaffolded-dr"], ["single", "default-dr", "preassigned-dr"]])
def test_figures_of_a_small_grid(variants):
    """One composition (no dodging), one task and seed (no SE): the demo's grid still plots."""
    from colabkit.analysis import WORK_METRICS, ablation_figure, contrast_figure, figure_bytes

    scores = score_table(n_tasks=1, seeds=1).query("variant in @variants")
    fig = ablation_figure(scores)
    assert [ax.get_title() for ax in fig.axes] == ["H_init,norm", "S_hyp", "Performance", "HMS"]
    assert figure_bytes(ablation_figure(scores, WORK_METRICS), "svg").startswith(b"<?xml")
    texts = [t.get_text() for t in fig.texts]
    assert any(t.startswith("Bars: CI of each structure's paired difference") for t in texts)  # said so
    assert any("JUDGE NOT RELIABLE" in t for t in texts)  # the constructed judge is plumbing-grade
    assert any(line.get_markerfacecolor() == "white" for ax in fig.axes for line in ax.lines)  # one task: hollow, no interval
    table = contrasts(scores, metrics=["performance"])
    assert len(table) == ("scaffolded-dr" in variants)
    forest = contrast_figure(table)
    assert figure_bytes(forest, "png")[:4] == b"\x89PNG"
    if len(table):
        assert [line.get_markerfacecolor() for line in forest.axes[0].lines if line.get_marker() == "o"][-1] == "white"
        assert any("task-clustered" in t.get_text() for t in forest.texts)


def test_a_score_table_keeps_only_the_grids_sessions(tmp_path):
    """An experiment's folder may also hold sessions of an earlier version of its grid (new
    ids after a change of defaults); pooled, a paired contrast would see two sessions per cell."""
    scores = score_table(n_tasks=2, seeds=1)
    stale = scores.assign(session_id=scores["session_id"] + "-old")
    saved = tmp_path / "scores.csv"
    pd.concat([scores, stale]).to_csv(saved, index=False)
    current = load_score_table(tmp_path, saved, sessions=scores["session_id"])
    assert sorted(current["session_id"]) == sorted(scores["session_id"])
    assert len(load_score_table(tmp_path, saved)) == 2 * len(scores)
    assert len(contrasts(current, metrics=["performance"])) == 3  # one pair per cell: the paired merge accepts it


DEMO_VARIANTS = ["single", "default-dr", "scaffolded-dr", "preassigned-dr"]  # experiments/demo.yaml


def _panel_notes(fig) -> dict[str, list[str]]:
    return {ax.get_title().split("\n")[0]: [t.get_text() for t in ax.texts if t.get_text()] for ax in fig.axes}


def test_figures_of_the_demo_grid_name_empty_panels_and_missing_compositions():
    """The demo's grid (one task, one seed): H_init had no value in any session, HMS none in the
    single agent's; those panels say so instead of being blank or silently short."""
    from colabkit.analysis import WORK_METRICS, ablation_figure

    scores = score_table(n_tasks=1, seeds=1).query("variant in @DEMO_VARIANTS")
    scores = scores.assign(h_init_norm=np.nan, hms=scores["hms"].where(scores["variant"] != "single"))
    single = scores.loc[scores["variant"] == "single", "composition"].iloc[0]
    notes = _panel_notes(ablation_figure(scores))
    [empty] = notes["H_init,norm"]
    assert empty.startswith("no values: ")  # and why (the scorers' flags: `why_missing`)
    assert notes["HMS"] == [f"N/A for this composition: {single}"]
    assert notes["S_hyp"] == [] and notes["Performance"] == []
    work = ablation_figure(scores, WORK_METRICS)
    assert _panel_notes(work)["W_human"] == [f"N/A for this composition: {single}"]
    quality_caption = " ".join(t.get_text() for t in ablation_figure(scores).texts)
    work_caption = " ".join(t.get_text() for t in work.texts)
    assert "JUDGE NOT RELIABLE" in quality_caption  # judged metrics: the plumbing judge is said
    assert "JUDGE NOT RELIABLE" not in work_caption and "Bars:" in work_caption  # no judged metric


def test_the_contrast_figure_has_one_x_label_and_no_point_on_a_panel_edge():
    from colabkit.analysis import contrast_figure

    scores = score_table(n_tasks=3, seeds=1)
    table = contrasts(scores, metrics=["performance", "hms", "s_hyp", "w_total"])
    fig = contrast_figure(table)
    assert fig.get_supxlabel() == "difference in means, A − B (paired on task and seed)"
    assert all(ax.get_xlabel() == "" for ax in fig.axes)  # not once per panel, running into each other
    for ax, metric in zip(fig.axes, dict.fromkeys(table["metric"])):
        rows = table[table["metric"] == metric]
        low, high = ax.get_xlim()
        span = high - low
        ends = pd.concat([rows["sim_ci_low"], rows["sim_ci_high"], rows["diff"]]).dropna()  # what is drawn
        assert low < ends.min() - 0.05 * span and ends.max() + 0.05 * span < high  # padded
    assert "JUDGE NOT RELIABLE" in " ".join(t.get_text() for t in fig.texts)
    work_only = contrast_figure(contrasts(scores, metrics=["w_total"]))
    assert "JUDGE NOT RELIABLE" not in " ".join(t.get_text() for t in work_only.texts)


def test_ablation_bars_are_paired_difference_intervals():
    """A structure's bar is the CI half-width of its paired difference from Default of the
    same team (task_contrast) at the level the plan's procedure tested it at (none when it
    was never reached), not the SE of its level (which carries task difficulty)."""
    from scipy import stats as scipy_stats

    from colabkit.analysis import ablation_figure, task_contrast
    from colabkit.analysis.inference.decisions.contrasts import DEFAULT_PLAN
    from colabkit.analysis.inference.decisions.decide import study_decisions

    scores = score_table(n_tasks=6, seeds=3)
    fig = ablation_figure(scores, ["performance"])
    ax = fig.axes[0]
    d_bars = ax.containers[1]  # after single ("none"), team "d": default, scaffolded, memory, preassigned
    segments = d_bars.lines[2][0].get_segments()
    halves = [(seg[1][1] - seg[0][1]) / 2 for seg in segments]
    decisions = study_decisions(scores, DEFAULT_PLAN).set_index(["a", "b", "metric"])["local_alpha"]
    expected = []
    for structure in ("default", "scaffolded", "memory", "preassigned"):
        level = decisions.get((f"{structure}-d", "default-d", "performance"), 0.0)
        if structure == "default" or not level > 0:
            expected.append(0.0)
            continue
        row = task_contrast(scores, f"{structure}-d", "default-d", "performance")
        expected.append(float(scipy_stats.t.ppf(1 - level / 2, row["n_tasks"] - 1)) * row["se_task"])
    assert halves == pytest.approx(expected)
    level_se = study_table(scores, ["performance"]).query("variant == 'scaffolded-d'")["se_task"].item()
    assert all(h != pytest.approx(1.96 * level_se, rel=0.05) for h in halves)


def test_the_study_table_shows_each_variants_ai_steps_endings_and_expired_requests():
    scores = score_table(n_tasks=2, seeds=2)
    scores["ended_by"] = "budget"
    scores["ai_steps"] = 30.0
    scores["expired_requests"] = 0.0
    dr = scores["variant"] == "scaffolded-dr"
    scores.loc[dr, "ai_steps"] = [30.0, 12.0, 30.0, 20.0]
    scores.loc[dr, "ended_by"] = ["budget", "finish", "budget", "llm_budget"]
    scores.loc[dr, "expired_requests"] = [0.0, 1.0, 2.0, 0.0]
    table = study_table(scores, ["performance", "hms"])
    row = table[(table["variant"] == "scaffolded-dr") & (table["metric"] == "hms")].iloc[0]
    assert (row["ai_steps_mean"], row["ai_steps_min"], row["ai_steps_max"]) == (23.0, 12.0, 30.0)
    assert row["endings"] == "budget 2; finish 1; llm_budget 1" and row["expired_requests"] == 3
    wide = format_study_table(table)
    assert wide.loc["scaffolded-dr", "AI steps (mean [min-max])"] == "23.0 [12-30]"
    assert wide.loc["single", "endings"] == "budget 4" and wide.loc["scaffolded-dr", "expired requests"] == 3
    assert "endings" not in format_study_table(study_table(score_table(n_tasks=2, seeds=2), ["hms"])).columns


def test_missing_scores_are_bounded_by_a_worst_and_best_case_fill_in():
    from colabkit.analysis import missing_score_bounds

    scores = score_table(n_tasks=2, seeds=2)
    dr = scores.index[scores["variant"] == "default-dr"]
    scores.loc[dr[:2], "performance"] = np.nan  # two sessions crashed: no score
    low, high = scores["performance"].min(), scores["performance"].max()
    table = missing_score_bounds(scores, ["performance", "h_init_norm"]).set_index(["variant", "metric"])
    row = table.loc[("default-dr", "performance")]
    observed = scores.loc[dr[2:], "performance"]
    assert row["n_missing"] == 2 and math.isclose(row["mean_observed"], observed.mean())
    assert math.isclose(row["mean_worst"], (observed.sum() + 2 * low) / 4)
    assert math.isclose(row["mean_best"], (observed.sum() + 2 * high) / 4)
    full = table.loc[("single", "performance")]
    assert full["n_missing"] == 0 and full["mean_worst"] == full["mean_best"] == full["mean_observed"]
    undefined = table.loc[("single", "h_init_norm")]  # undefined by design: not filled in
    assert undefined["n_missing"] == 4 and math.isnan(undefined["mean_worst"])
