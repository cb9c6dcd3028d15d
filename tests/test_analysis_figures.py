"""How the figures and tables of a run read: no overlapping labels, no noise as scale, n per
point, an axis label that says what is plotted, the plumbing-grade line, tables whole.

Small constructed grids (`helpers.score_tables`): the demo's (one task, one seed, values all
zero as the embedded model gives them, with the rounding noise a mean of zeros can carry)
and a fuller one; the figures are drawn and their text read back from matplotlib.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from helpers.score_tables import score_table
from helpers.stored import store_session
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from colabkit.analysis import WORK_METRICS, ablation_figure, contrast_figure, contrasts, figure_bytes
from colabkit.analysis.presentation import (
    PLUMBING_LINE,
    banner,
    mark_figures,
    plumbing_line,
    plumbing_run,
    table_html,
)

DEMO_VARIANTS = ["single", "default-dr", "scaffolded-dr", "preassigned-dr"]  # experiments/demo.yaml
METRICS = ["performance", "hms", "s_hyp", "h_init_norm", "w_total", "w_human"]


def demo_grid() -> pd.DataFrame:
    """The demo's grid as the embedded model scores it: every value 0, one of them 1e-17 off."""
    scores = score_table(n_tasks=1, seeds=1).query("variant in @DEMO_VARIANTS").copy()
    scores[METRICS] = 0.0
    scores.loc[scores.index[1], "performance"] = 1e-17
    return scores


def own_grid() -> pd.DataFrame:
    """The demo's grid with a study's own variant and its Default twin (two more labelled columns)."""
    scores = score_table(n_tasks=2, seeds=1).query("variant in @DEMO_VARIANTS")
    own = [scores[scores["variant"] == v].assign(variant=f"{v}s", composition="drs",
                                                 session_id=lambda t: t["session_id"] + "-s")
           for v in ("preassigned-dr", "default-dr")]
    return pd.concat([scores, *own], ignore_index=True)


@pytest.fixture(scope="module")
def forests() -> dict[str, pd.DataFrame]:
    """Scaffolded - Default on a 3-task grid as it is, and with Performance all zero (one 1e-17),
    computed once (the contrasts fit mixed models: seconds each)."""
    scores = score_table(n_tasks=3, seeds=1)
    scores.loc[scores["variant"] == "scaffolded-d", "performance"] = np.nan  # d: no Performance pair at all
    zero = scores.assign(performance=0.0)
    zero.loc[zero.index[5], "performance"] = 1e-17
    pick = lambda t: t[t["family"].isin(["structure", "exploratory: scaffolded-default"])].reset_index(drop=True)  # noqa: E731
    return {"full": pick(contrasts(scores, metrics=["performance", "hms"])),
            "zero": pick(contrasts(zero, metrics=["performance", "hms"]))}


def drawn_texts(fig: Figure) -> list[tuple[str, object]]:
    """Every text the rendered figure shows, with its box on the canvas."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    shown = []
    for ax in fig.axes:  # tick labels: only those of ticks inside the view
        for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            for tick in axis.get_major_ticks():
                inside = min(low, high) - 1e-9 <= tick.get_loc() <= max(low, high) + 1e-9
                if inside and tick.label1.get_visible() and tick.label1.get_text():
                    shown.append(tick.label1)
    ticks = {id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) for t in axis.get_ticklabels(which="both")}
    shown += [t for t in fig.findobj(Text) if id(t) not in ticks and t.get_visible() and t.get_text().strip()]
    return [(t.get_text(), t.get_window_extent(renderer)) for t in shown]


def test_no_two_labels_of_a_figure_overlap(forests):
    """Bounding boxes of every drawn text: "no intervalno interval" was two labels in one place."""
    figures = {"demo quality": ablation_figure(demo_grid()), "demo work": ablation_figure(demo_grid(), WORK_METRICS),
               "full quality": ablation_figure(score_table(n_tasks=3, seeds=1)),
               "contrasts": contrast_figure(forests["full"]), "zero contrasts": contrast_figure(forests["zero"]),
               "own variants": ablation_figure(own_grid())}
    for name, fig in figures.items():
        mark_figures([fig], PLUMBING_LINE)
        texts = drawn_texts(fig)
        assert len(texts) > 10, name
        clashes = [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(texts, 2) if box_a.overlaps(box_b)]
        assert not clashes, (name, clashes)


def test_a_panel_without_spread_says_so_and_shows_no_noise_as_scale(forests):
    fig = ablation_figure(demo_grid(), ["performance", "w_total"])
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    for ax in fig.axes:
        low, high = ax.get_ylim()
        assert high - low >= 0.5  # not a 1e-17 wide axis
        assert ax.yaxis.get_offset_text().get_text() == ""  # no "1e-17" multiplier above the axis
        assert ax.get_title().endswith("(no spread: every value 0)")
    forest = contrast_figure(forests["zero"])
    FigureCanvasAgg(forest).draw()
    performance, hms = forest.axes
    assert performance.get_title() == "Performance\n(no spread: every value 0)"
    assert np.diff(performance.get_xlim())[0] >= 0.5 and performance.xaxis.get_offset_text().get_text() == ""
    assert "no spread" not in hms.get_title()  # HMS differs between tasks: its own scale


def test_each_point_shows_its_n_and_the_axis_says_what_is_plotted(forests):
    scores = score_table(n_tasks=3, seeds=2)
    scores.loc[(scores["variant"] == "scaffolded-d") & (scores["seed"] == 0), "performance"] = np.nan
    ax = ablation_figure(scores, ["performance"]).axes[0]
    labels = {t.get_text().split("\n")[0]: t.get_text().split("\n")[1] for t in ax.get_xticklabels()}
    assert labels["single"] == "n=6" and labels["default"] == "n=6"
    assert labels["scaffolded"] == "n=3/6/6"  # d lost three sessions' scores: per point, legend order
    assert ax.get_ylabel() == "Performance: mean over sessions"
    forest = contrast_figure(forests["full"])
    performance, hms = forest.axes
    assert [t.get_text().split(",")[0] for t in performance.texts] == ["n=3", "n=3"]  # d: no pair, no point, no n
    assert [t.get_text().split(",")[0] for t in hms.texts] == ["n=3", "n=3", "n=3"]
    assert forest.get_supxlabel() == "difference in means, A − B (paired on task and seed)"


def test_every_figure_of_a_plumbing_grade_run_carries_the_line(tmp_path):
    store_session(tmp_path, "demo_archaeology/0/0", "a hypothesis")  # its spec names no model: the embedded one
    line = plumbing_line(tmp_path)
    assert line == PLUMBING_LINE and "plumbing-grade" in line.lower()
    assert plumbing_line(tmp_path / "nothing here") is None
    assert not plumbing_run(["openai/gpt-4o", "person/p-1"]) and plumbing_run(["local/smollm2-135m"])
    work = ablation_figure(demo_grid(), WORK_METRICS)  # no judged metric: no judge line of its own
    mark_figures([work, work], line)  # twice: one line
    captions = [t.get_text() for t in work.texts if t.get_gid() == "caption"]
    assert len(captions) == 1 and captions[0].count(PLUMBING_LINE) == 1
    assert PLUMBING_LINE.encode() in figure_bytes(work, "svg").replace(b"&#45;", b"-")  # kept in the saved file
    assert "PLUMBING-GRADE" in banner(line)._repr_html_() and banner(None)._repr_html_() == repr(banner(None)) == ""


def test_a_table_renders_whole_and_an_empty_one_says_why():
    wide = pd.DataFrame({f"column_{i}": ["a long value " * 8] for i in range(30)})
    markup = table_html(wide, "unused")._repr_html_()
    assert 'overflow-x:auto' in markup and markup.count("<th style") == 30  # every column, in a box that scrolls
    assert "white-space:normal" in markup  # long cells wrap instead of stretching the table
    empty = table_html(wide.iloc[0:0], "no Dynamic variants in this experiment")
    assert empty._repr_html_() == '<p class="ck-empty"><i>No rows: no Dynamic variants in this experiment</i></p>'
    assert "column_0" not in empty._repr_html_()


@pytest.mark.parametrize("variants", [["default-dr"], DEMO_VARIANTS])
def test_a_demo_grid_figure_renders(variants):
    scores = demo_grid().query("variant in @variants")
    assert figure_bytes(ablation_figure(scores), "png")[:4] == b"\x89PNG"


def test_a_test_the_procedure_never_reached_is_drawn_undecided_never_as_an_exact_estimate():
    table = contrasts(score_table(n_tasks=6, seeds=2), metrics=["performance", "hms"])
    reached = table["local_alpha"] > 0
    assert (~reached).any() and reached.any()
    assert table.loc[~reached, "interval"].eq("not reached: undecided, no interval").all()
    assert table.loc[reached, "interval"].str.endswith("no joint coverage").all()
    fig = contrast_figure(table)
    labels = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert sum(label.endswith(", undecided") for label in labels) == int((~reached & table["diff"].notna()).sum())
