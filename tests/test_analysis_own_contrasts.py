"""A study's own variants in the analysis: the contrasts an experiment declares (else each own
variant against its Default twin) are estimated like the paper's, decided only where the plan
names them, and shown in the contrasts table and every ablation figure; a variant that cannot
be compared is named there with the reason.

The grid: the demo's registered variants, an inline `preassigned-drs` (humans D, R and a new
S) and an inline `memory-drx` that has no Default twin and whose initiative the scorer could
not give (flagged), on a constructed score table (`helpers.score_tables`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.score_tables import score_table
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from colabkit.analysis import QUALITY_METRICS, WORK_METRICS, ablation_figure, analysis_plan, contrast_figure, contrasts
from colabkit.analysis.glossary import GLOSSARY, GLOSSARY_LINE, GLOSSARY_PAGE, glossary_markdown
from colabkit.analysis.inference.decisions.contrasts import CONTRAST_COLUMNS, task_contrast
from colabkit.analysis.inference.planning.hypotheses import Hypothesis
from colabkit.analysis.own_contrasts import NOT_DECIDED, comparisons, own_contrasts
from colabkit.analysis.scores import METRIC_LABELS
from colabkit.runner import load_experiment

REPO = Path(__file__).resolve().parents[1]
DECLARED = [("preassigned-drs", "default-dr")]
FLAG = "initiative: initiative:no_initiative_events"


@pytest.fixture(scope="module")
def grid() -> pd.DataFrame:
    scores = score_table(n_tasks=4, seeds=2).query("variant in ['single', 'default-dr', 'preassigned-dr']")
    base = scores[scores["variant"] == "preassigned-dr"]
    drs = base.assign(variant="preassigned-drs", composition="drs", session_id=base["session_id"] + "-s",
                      performance=(base["performance"] + 0.1).clip(0, 1))
    drx = base.assign(variant="memory-drx", structure="memory", composition="drx", session_id=base["session_id"] + "-x",
                      h_init_norm=np.nan, flags=FLAG)
    return pd.concat([scores, drs, drx], ignore_index=True)


def caption_of(fig: Figure) -> str:
    return next(t.get_text() for t in fig.texts if t.get_gid() == "caption")


def test_an_experiment_declares_its_contrasts_in_one_checked_line(tmp_path):
    base = {"name": "t", "tasks": {"ids": ["demo_archaeology/0/0"]}, "variants": ["single", "default-dr"],
            "seeds": [0], "models": {"default": "scripted/x"}}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(base))
    plain = load_experiment(path)
    path.write_text(yaml.safe_dump({**base, "contrasts": [["default-dr", "single"]]}))
    declared = load_experiment(path)
    assert declared.contrasts == (("default-dr", "single"),) and plain.contrasts == ()
    assert declared.identity() == plain.identity()  # the analysis, not the sessions
    assert load_experiment(REPO / "experiments" / "new_study.yaml").contrasts == (("preassigned-dre", "default-dr"),)


def test_each_own_variant_meets_its_default_twin_or_is_named_with_why(grid):
    twins = comparisons(grid).set_index("a")
    assert twins.loc["preassigned-drs", "reason"].startswith("no Default twin ran")  # no default with D, R, S
    assert "declare a comparison under contrasts:" in twins.loc["memory-drx", "reason"]
    with_twin = pd.concat([grid, grid[grid["variant"] == "default-dr"].assign(
        variant="default-drs", composition="drs", session_id=lambda t: t["session_id"] + "-t")])
    found = comparisons(with_twin).set_index("a")
    assert found.loc["preassigned-drs", "b"] == "default-drs" and found.loc["preassigned-drs", "reason"] == ""
    assert "default-drs" not in found.index  # a twin is the reference, not compared itself
    ticks = [t.get_text() for t in ablation_figure(with_twin, ["performance"]).axes[0].get_xticklabels()]
    assert "default-drs\nreference\nn=8" in ticks and "preassigned-drs\nvs default-drs\nn=8" in ticks
    default = grid[grid["variant"] == "default-dr"]
    two = pd.concat([grid, default.assign(variant="a-drq", composition="drq", session_id=default["session_id"] + "-a"),
                     default.assign(variant="b-drq", composition="drq", session_id=default["session_id"] + "-b")])
    assert comparisons(two).query("a in ['a-drq', 'b-drq']")[["a", "b"]].values.tolist() == [["a-drq", "b-drq"]]
    declared = comparisons(grid, DECLARED)
    assert declared[["a", "b", "reason"]].values.tolist() == [
        ["preassigned-drs", "default-dr", ""], ["memory-drx", "", "the experiment declares its contrasts and none names it"]]


def test_a_declared_contrast_is_estimated_like_the_papers_and_decided_only_by_the_plan(grid):
    rows = own_contrasts(grid, comparisons(grid, DECLARED))
    assert list(rows.columns)[:len(CONTRAST_COLUMNS)] == list(CONTRAST_COLUMNS) and rows["plan_hash"].nunique() == 1
    performance = rows.set_index("metric").loc["performance"]
    same = task_contrast(grid, "preassigned-drs", "default-dr", "performance")
    assert performance["diff"] == pytest.approx(same["diff"]) and performance["diff"] > 0
    assert performance["p_unadjusted"] == pytest.approx(same["p_unadjusted"])
    assert performance["ci_low"] == pytest.approx(same["ci_low"]) and performance["n_tasks"] == 4
    assert (rows["decision"] == NOT_DECIDED).all() and rows["p_adjusted"].isna().all()
    variants = sorted(set(grid["variant"]))
    claim = Hypothesis(name="S.perf", a="preassigned-drs", b="default-dr", metric="performance", weight=1.0)
    planned = own_contrasts(grid, comparisons(grid, DECLARED), plan=analysis_plan(variants, hypotheses=(claim,)))
    row = planned.set_index("metric").loc["performance"]
    assert row["hypothesis"] == "S.perf" and row["p_adjusted"] == pytest.approx(row["p_test"])  # its one test
    assert row["decision"] in {"declared", "not declared"} and not np.isnan(row["sim_ci_low"])
    assert planned.set_index("metric").loc["hms", "decision"] == NOT_DECIDED  # the plan names performance only


@pytest.mark.parametrize("metrics", [QUALITY_METRICS, WORK_METRICS])
def test_every_ablation_figure_draws_the_declared_contrast_and_names_the_variant_without_one(grid, metrics):
    compared = comparisons(grid, DECLARED)
    fig = ablation_figure(grid, metrics, compared=compared)
    FigureCanvasAgg(fig).draw()
    text = caption_of(fig)
    assert "preassigned-drs − default-dr (declared in the experiment): " in text
    assert f"{METRIC_LABELS[metrics[0]]} " in text.split("preassigned-drs − default-dr")[1]  # its estimates, per metric
    assert "memory-drx: no comparison: the experiment declares its contrasts and none names it" in text
    assert GLOSSARY_LINE in text
    for ax in fig.axes[:len(metrics)]:
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        assert any(t.startswith("preassigned-drs\nvs default-dr\nn=8") for t in ticks), ticks
        assert any(t.startswith("memory-drx\nno comparison") for t in ticks), ticks
        drawn = [tuple(p) for line in ax.lines for p in line.get_xydata()]
        column = next(i for i, t in enumerate(ticks) if t.startswith("preassigned-drs"))
        assert any(abs(x - column) < 0.3 for x, _ in drawn)  # its point is drawn in its column
    twin_only = caption_of(ablation_figure(grid, metrics))  # nothing declared: each own variant against its twin
    assert "preassigned-drs: no comparison: no Default twin ran" in twin_only
    assert "memory-drx: no comparison: no Default twin ran" in twin_only


def test_a_variant_without_values_and_an_empty_panel_say_why(grid):
    fig = ablation_figure(grid, ["h_init_norm"], compared=comparisons(grid, DECLARED))
    notes = [t.get_text() for t in fig.axes[0].texts]
    assert any("memory-drx: no values: flags: initiative:no_initiative_events (8 sessions)" in n for n in notes), notes
    assert not any("N/A for this composition: none, drx" in n for n in notes)  # drx is named with its flag instead
    empty = grid.assign(hms=np.nan, flags="performance: no_gold: task archaeology/0/0")
    notes = [t.get_text().replace("\n", " ") for t in ablation_figure(empty, ["hms"]).axes[0].texts]
    assert notes == ["no values: flags: no_gold: task archaeology/0/0 (40 sessions)"]


def test_the_contrasts_figure_is_a_grid_that_keeps_zero_in_view_with_the_declared_row(grid):
    paper = score_table(n_tasks=4, seeds=1)
    paper["w_total"] += 40.0 * (paper["structure"] == "scaffolded")  # every difference far from 0
    table = contrasts(paper, metrics=None, mixed_families=())
    table = table[table["a"].str.startswith("scaffolded-") & table["b"].str.startswith("default-")]
    table = pd.concat([table, own_contrasts(grid, comparisons(grid, DECLARED))], ignore_index=True)
    fig = contrast_figure(table)
    FigureCanvasAgg(fig).draw()
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert len(shown) == 7 and len({round(ax.get_position().y0, 2) for ax in shown}) == 3  # 3 rows of panels
    for ax in shown:
        low, high = ax.get_xlim()
        assert low < 0 < high, (ax.get_title(), low, high)
    assert "preassigned-drs − default-dr" in [t.get_text() for t in shown[0].get_yticklabels()]
    assert GLOSSARY_LINE in caption_of(fig) and "dashed: 95% unadjusted" in caption_of(fig)
    twins = comparisons(grid)  # no twin for either own variant: nothing to draw, both named with the reason
    alone = caption_of(contrast_figure(own_contrasts(grid, twins), grid, compared=twins))
    assert "preassigned-drs: no comparison: no Default twin ran" in alone and "memory-drx: no comparison" in alone


def test_the_glossary_covers_every_metric_name_and_the_docs_page_shows_it():
    assert set(METRIC_LABELS) <= set(GLOSSARY)
    assert glossary_markdown() in (REPO / GLOSSARY_PAGE).read_text(encoding="utf-8")
