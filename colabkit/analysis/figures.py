"""The ablation figures (seaborn), and their bytes for whoever saves them.

Figures are built on `matplotlib.figure.Figure` objects, not pyplot's global state, so a
batch making hundreds of them never leaks open figures and a notebook shows exactly the one
it returns. The layer writes no files: `figure_bytes` and `artefacts` render figures and
tables to bytes, and the caller (a notebook, the batch) writes them atomically.

Error bars are the task-clustered SE (the study samples tasks; `colabkit.analysis.inference.estimation.stats`),
and a mean or contrast over fewer than two tasks is a hollow point ("no interval", said in
the caption: a marker, not a label, so labels of neighbouring points never run into each
other). A panel with nothing to plot says "no values" and why (the scorers' flags,
`colabkit.analysis.why_missing`), a study's own variant without values is named with its
reason, and a team composition a metric does not apply to (no value in any session of it, e.g.
the humans' initiative of the single agent) is named "N/A for this composition" in its panel,
so a missing point is never silent. A study's own variants (`colabkit.analysis.own_contrasts`)
each have a column, with the comparison it is about; the contrasts figure is a grid of panels
(three a row) whose x axis always shows zero.
A panel whose values do not differ (the embedded model's all-zero demo) gets a fixed scale
and says "no spread" in its title, so floating-point noise (1e-17) is never shown as the
axis' scale. Each point's n is shown (under its structure, or beside its row), and the axis
label says what is plotted. Every figure has a caption line under it saying what its bars
are and, when the judge behind its numbers is plumbing-grade or failed its sanity check,
that too (`colabkit.analysis.judging`): only under figures that show a judged metric; the
ablation and contrast figures point to the glossary of metric names (`colabkit.analysis.glossary`);
`add_caption_line` adds a line later (the plumbing-grade run, `colabkit.analysis.presentation`).
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from scipy import stats as scipy_stats

from colabkit.analysis.gates import check_gates, gate_summary
from colabkit.analysis.glossary import GLOSSARY_LINE
from colabkit.analysis.inference.decisions.contrasts import paired_differences
from colabkit.analysis.inference.decisions.decide import study_decisions
from colabkit.analysis.inference.estimation.stats import clustered_standard_error, study_table
from colabkit.analysis.inference.planning.plan import AnalysisPlan
from colabkit.analysis.judging import judge_status, judge_warning, scores_warning
from colabkit.analysis.own_contrasts import comparison_lines, comparisons, own_contrasts, own_variants
from colabkit.analysis.scores import COMPOSITIONS, METRIC_LABELS, STRUCTURES, check_scores
from colabkit.analysis.why_missing import why_missing
from colabkit.evaluation import scorers_for

QUALITY_METRICS = ("h_init_norm", "s_hyp", "performance", "hms")
WORK_METRICS = ("w_total", "w_human", "delivered")
FIGURE_FORMATS = ("png", "svg")
# Columns a judging scorer writes without asking its judge: whether a hypothesis was delivered.
_NOT_JUDGED = frozenset({"delivered"})


def judged_metrics(metrics: Iterable[str]) -> list[str]:
    """Those of `metrics` whose values come from the judge (their figures carry its warning)."""
    by_column = {column: scorer.uses_judge for scorer in scorers_for(None) for column in scorer.columns}
    return [m for m in metrics if by_column.get(m, False) and m not in _NOT_JUDGED]


def _note(ax: Axes, text: str, *, centre: bool = False) -> None:
    """A grey note inside a panel: "no values" in its middle, or a line at its foot."""
    if centre:
        ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=9, color="grey",
                bbox={"facecolor": "white", "edgecolor": "none"})  # readable over the panel's zero line
    else:
        ax.text(0.02, 0.02, text, transform=ax.transAxes, ha="left", va="bottom", fontsize=7, color="grey",
                wrap=True)


CAPTION = "caption"  # the gid of a figure's caption text, so a line can be added to it later


def caption(fig: Figure, *lines: str | None) -> Figure:
    """Write the non-empty `lines` under the figure (saved figures keep them: bbox is tight)."""
    text = "\n".join(line for line in lines if line)
    if text:
        fig.text(0.0, 0.0, text, ha="left", va="top", fontsize=8, wrap=True, gid=CAPTION,
                 color="firebrick" if "JUDGE NOT RELIABLE" in text else "black")
    return fig


def add_caption_line(fig: Figure, line: str | None) -> Figure:
    """Add `line` to the figure's caption (or start one): one text block, so lines never overlap."""
    if not line:
        return fig
    existing = next((t for t in fig.texts if t.get_gid() == CAPTION), None)
    if existing is None:
        return caption(fig, line)
    if line not in existing.get_text().split("\n"):
        existing.set_text(f"{existing.get_text()}\n{line}")
    return fig


def _no_interval(ax: Axes, x: float, y: float, color: object) -> None:
    """A hollow point over the filled one: its mean has no interval (said in the caption)."""
    ax.plot([x], [y], marker="o", linestyle="none", markerfacecolor="white", markeredgecolor=color, zorder=3)


NO_SPREAD = 1e-9  # values closer than this (relative to their size) are one value with rounding noise


def steady_scale(ax: Axes, values: Iterable[float], axis: str = "y") -> str | None:
    """When the panel's values do not differ, fix a readable scale around them and return a
    "no spread" note; None when they spread (the axis then scales itself)."""
    finite = np.array([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if finite.size == 0:
        return None
    low, high = float(finite.min()), float(finite.max())
    if high - low > NO_SPREAD * max(1.0, abs(high), abs(low)):
        return None
    centre = round((low + high) / 2, 9) + 0.0  # 1e-17 is 0; + 0.0 turns -0.0 into 0.0
    half = max(0.5, abs(centre) * 0.5)
    (ax.set_ylim if axis == "y" else ax.set_xlim)(centre - half, centre + half)
    return f"no spread: every value {centre:.3g}"


def _title(ax: Axes, metric: str, note: str | None) -> None:
    label = METRIC_LABELS.get(metric, metric)
    ax.set_title(f"{label}\n({note})" if note else label, fontsize=10)


def _n_label(ns: list[int]) -> str:
    """The n of a structure's points, in the legend's order (one number when they agree)."""
    return f"n={ns[0]}" if len(set(ns)) == 1 else "n=" + "/".join(map(str, ns))


def _decision_levels(table: pd.DataFrame, plan: AnalysisPlan | None) -> dict[tuple[str, str, str], float]:
    """(A, B, metric) -> the local level the plan's procedure tested A - B at (0: not reached)."""
    decisions = study_decisions(table, plan or AnalysisPlan())
    paired = ~decisions["composition"].isin(["pooled", "intersection"])  # a claim over several pairs is not A - B's
    return {(str(a), str(b), str(m)): float(level)
            for a, b, m, level in zip(*(decisions.loc[paired, c] for c in ("a", "b", "metric", "local_alpha")))}


def _paired_half_widths(table: pd.DataFrame, cells: pd.DataFrame, metric: str,
                        levels: dict[tuple[str, str, str], float]) -> list[float]:
    """Per cell: the half-width of its paired difference from Default of its composition
    (task-clustered SE, t on tasks - 1 df) at the level the plan's procedure tested it at
    (`levels`), so a bar missing Default's point is a declared difference; NaN for Default,
    Single, a test the procedure never reached and cells without two tasks."""
    widths = []
    for cell in cells.itertuples():
        level = levels.get((str(cell.variant), f"default-{cell.composition}", metric), 0.0)
        if cell.structure in ("default", "single") or not level > 0:
            widths.append(float("nan"))
            continue
        d = paired_differences(table, str(cell.variant), f"default-{cell.composition}", metric)
        tasks = d["task_id"].nunique()
        se = clustered_standard_error(d["d"], d["task_id"]) if tasks >= 2 else float("nan")
        widths.append(float(scipy_stats.t.ppf(1 - level / 2, tasks - 1)) * se if tasks >= 2 else float("nan"))
    return widths


def _own_bar(own_rows: pd.DataFrame, variant: str, metric: str) -> tuple[float, bool]:
    """(half-width, decided) of an own variant's bar: its first comparison's interval on
    `metric`, at the plan's level when the plan decides it, else 95% unadjusted; NaN: none."""
    rows = own_rows[(own_rows["a"] == variant) & (own_rows["metric"] == metric)]
    if rows.empty or np.isnan(rows["diff"].iloc[0]):
        return float("nan"), False
    row = rows.iloc[0]
    decided = not np.isnan(row["sim_ci_high"])
    return float((row["sim_ci_high"] if decided else row["ci_high"]) - row["diff"]), decided


def _wrapped(lines: Iterable[str], width: int) -> str:
    return "\n".join(textwrap.fill(line, width, break_long_words=False) for line in lines if line)


def ablation_figure(scores: pd.DataFrame, metrics: Iterable[str] = QUALITY_METRICS,
                    plan: AnalysisPlan | None = None, compared: pd.DataFrame | None = None) -> Figure:
    """Mean per coordination structure, a line per team composition, a panel per metric; a
    structure's bar is the interval of its paired difference from Default of the same
    composition (task-clustered) at the level the plan's procedure tested it at, drawn around
    its mean: a bar that misses Default's point is a declared difference. A study's own
    variant (`colabkit.analysis.own_contrasts`) has a column of its own, labelled with what it
    is compared with (`compared`: the pairs of `comparisons`, default each own variant and its
    Default twin); its bar is that comparison's interval, and the caption gives every pair's
    estimates or why it has none. Under each column, its points' n (sessions). A panel or a
    variant without values says why (the scorers' flags). The caption names the analysis plan."""
    metrics = list(metrics)
    table = check_scores(scores, metrics)
    means = study_table(table, metrics, plan=plan)
    levels = _decision_levels(table, plan)
    compared = comparisons(table) if compared is None else compared
    own = own_variants(table["variant"])
    own_rows = own_contrasts(table, compared, metrics, plan)
    versus = {pair.a: pair.b for pair in compared.itertuples() if not pair.reason and pair.a in own}
    versus = {v: versus[v] for v in own if v in versus}
    columns = [s for s in STRUCTURES if s in set(table.loc[~table["variant"].isin(own), "structure"])] + own
    seen = list(dict.fromkeys(table["composition"]))
    compositions = [c for c in COMPOSITIONS if c in seen] + sorted(set(seen) - set(COMPOSITIONS))
    palette = dict(zip(compositions, sns.color_palette(n_colors=len(compositions))))
    offsets = np.linspace(-0.18, 0.18, len(compositions)) if len(compositions) > 1 else [0.0]
    references = set(compared.loc[compared["reason"] == "", "b"])
    labels = {c: [c] for c in columns} | {
        v: [v, f"vs {versus[v]}" if v in versus else "reference" if v in references else "no comparison"] for v in own}
    longest = max(len(line) for lines in labels.values() for line in lines)
    width = max(3.6, max(0.85, 0.075 * longest + 0.15) * len(columns) + 0.9)  # every label unrotated
    fig = Figure(figsize=(width * len(metrics), 3.6 + 0.15 * bool(own)), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics):
        rows = means[means["metric"] == metric]
        present = set(rows.loc[rows["mean"].notna(), "composition"])
        if not present:  # no scale to read: the reason instead
            _note(ax, _wrapped([f"no values: {why_missing(table, metric)}"], 34), centre=True)
            ax.set_yticks([])
        else:
            blank = [v for v in own if v not in set(rows.loc[rows["mean"].notna(), "variant"])]
            named = set(rows.loc[rows["variant"].isin(blank), "composition"])
            missing = [c for c in compositions if c not in present and c not in named]  # by design, not a flag
            _note(ax, _wrapped([f"N/A for this composition: {', '.join(missing)}" if missing else "",
                                *(f"{v}: no values: {why_missing(table[table['variant'] == v], metric)}"
                                  for v in blank)], int(12 * width)))
        plotted: list[float] = []
        for offset, composition in zip(offsets, compositions):
            cells = rows[(rows["composition"] == composition) & rows["mean"].notna()]
            x = [columns.index(c.variant if c.variant in own else c.structure) + offset for c in cells.itertuples()]
            widths, dashed = _paired_half_widths(table, cells, metric, levels), []
            for i, cell in enumerate(cells.itertuples()):
                if cell.variant in own:
                    widths[i], decided = _own_bar(own_rows, str(cell.variant), metric)
                    dashed.append(not decided and not np.isnan(widths[i]))
                else:
                    dashed.append(False)
            solid = [w if not d else np.nan for w, d in zip(widths, dashed)]
            ax.errorbar(x, cells["mean"], yerr=np.nan_to_num(solid), fmt="o", capsize=3,
                        color=palette[composition], label=composition)
            if any(dashed):
                bars = ax.errorbar(x, cells["mean"], yerr=np.nan_to_num([w if d else 0.0 for w, d in zip(widths, dashed)]),
                                   fmt="none", capsize=3, color=palette[composition])
                bars[2][0].set_linestyle("--")
            for xi, cell, half in zip(x, cells.itertuples(), widths):
                if cell.structure not in ("default", "single") and np.isnan(half):
                    _no_interval(ax, xi, cell.mean, palette[composition])
                plotted += [cell.mean, cell.mean - np.nan_to_num(half), cell.mean + np.nan_to_num(half)]
        ns = {c: [int(r.n) for r in rows.itertuples() if (r.variant if r.variant in own else r.structure) == c
                  and not np.isnan(r.mean)] for c in columns}
        ax.set_xticks(range(len(columns)), ["\n".join([*labels[c], _n_label(ns[c])] if ns[c] else labels[c])
                                            for c in columns], fontsize=8)
        ax.set_ylabel(f"{METRIC_LABELS.get(metric, metric)}: mean over sessions")
        ax.set_xlim(-0.5, len(columns) - 0.5)  # every column's place, with or without a point
        ax.margins(y=0.15)
        _title(ax, metric, steady_scale(ax, plotted) if present else None)
    axes[-1].legend(title="team", loc="upper left", bbox_to_anchor=(1.02, 1))
    own_line = ("Own variants (a column each, labelled with what each is compared with): the bar is that paired "
                "difference's interval drawn around the variant's mean, solid at the level the plan's procedure "
                "tested it at, dashed 95% unadjusted when the plan does not name the comparison (estimated, not "
                "decided). " if own else "")
    return caption(fig, "Bars: CI of each structure's paired difference from Default of the same team "
                        "(task-clustered SE, t on tasks - 1 df) at the level the plan's procedure tested it at, "
                        "drawn around its mean; Default and Single are the reference (no bar); hollow point: "
                        "undecided, no interval (a test the procedure never reached, or fewer than two tasks with "
                        "pairs). "
                        "Points: the mean over a cell's sessions; n under each column: its sessions per "
                        f"point, in the legend's order. Analysis {means['plan_label'].iloc[0]}.",
                   own_line + " ".join(comparison_lines(compared, own_rows, metrics)) if len(compared) else None,
                   GLOSSARY_LINE, scores_warning(table) if judged_metrics(metrics) else None)


def _contrast_interval(rows: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """(low, high, dashed) per row: at the level the plan's procedure tested it at when the
    table has one, else the unadjusted 95% interval, marked dashed."""
    if "sim_ci_low" not in rows.columns:
        return rows["ci_low"], rows["ci_high"], pd.Series(False, index=rows.index)
    dashed = rows["sim_ci_low"].isna() & rows["ci_low"].notna()
    return (rows["sim_ci_low"].where(~dashed, rows["ci_low"]), rows["sim_ci_high"].where(~dashed, rows["ci_high"]),
            dashed)


def _zero_in_view(ax: Axes) -> None:
    """Widen the x axis so that 0 (no difference) is inside the panel, with a little room."""
    low, high = ax.get_xlim()
    pad = 0.08 * (max(high, 0.0) - min(low, 0.0))
    ax.set_xlim(min(low, -pad), max(high, pad))


def contrast_figure(contrast_table: pd.DataFrame, scores: pd.DataFrame | None = None, columns: int = 3,
                    compared: pd.DataFrame | None = None) -> Figure:
    """Forest plot of A - B per composition (mean paired difference and its interval from the
    task-clustered SE on G - 1 df: at the level the plan's procedure gave each test when the
    table has them, else 95% unadjusted, dashed), a panel per metric in a grid of `columns`,
    zero always in view, each row's n (tasks) at its right; a panel without values says why
    (the rows' notes; with `scores`, the scorers' flags); the caption names the analysis plan
    and each pair of `compared` (`comparisons`) that has no row, with the reason."""
    metrics = list(dict.fromkeys(contrast_table["metric"]))
    warning = judge_warning(*judge_status(contrast_table)) if judged_metrics(metrics) else None
    unmade = compared[compared["reason"] != ""] if compared is not None else pd.DataFrame(columns=["reason"])
    not_drawn = " ".join(comparison_lines(unmade, contrast_table.iloc[0:0], [])) or None
    if not metrics:  # the grid has no pair of variants to contrast
        fig = Figure(figsize=(4.5, 1.5))
        fig.text(0.5, 0.5, "no contrast: the grid lacks one of each pair\n(and no comparison of its own ran)",
                 ha="center", va="center")
        return caption(fig, not_drawn, warning)
    names = list(dict.fromkeys(f"{r.a} − {r.b}" for r in contrast_table.itertuples()))
    ncols = min(columns, len(metrics))
    nrows = -(-len(metrics) // ncols)
    fig = Figure(figsize=(2.7 * ncols + 0.075 * max(map(len, names)) + 0.6, nrows * (0.32 * len(names) + 1.3) + 0.9),
                 layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=True)
    decided = "sim_ci_low" in contrast_table.columns
    for i, ax in enumerate(axes.flat):
        if i >= len(metrics):
            ax.set_visible(False)  # the grid's last row is not full
            continue
        metric = metrics[i]
        rows = contrast_table[contrast_table["metric"] == metric].reset_index(drop=True)
        y = [names.index(f"{r.a} − {r.b}") for r in rows.itertuples()]
        low, high, dashed = _contrast_interval(rows)
        for style, keep in (("-", ~dashed), ("--", dashed)):
            if keep.any():
                bars = ax.errorbar(rows["diff"][keep], np.array(y)[keep.to_numpy()], fmt="o", color="black", capsize=3,
                                   xerr=[(rows["diff"] - low)[keep].fillna(0), (high - rows["diff"])[keep].fillna(0)])
                bars[2][0].set_linestyle(style)
        for yi, row in zip(y, rows.itertuples()):
            undecided = decided and np.isnan(row.sim_ci_low) and not np.isnan(row.diff)  # never reached: no decision
            if np.isnan(row.ci_low) and not np.isnan(row.diff):
                _no_interval(ax, row.diff, float(yi), "black")
            if not np.isnan(row.diff):  # the row's n, at the panel's right edge
                ax.text(0.98, float(yi), f"n={int(row.n_tasks)}" + (", undecided" if undecided else ""),
                        transform=ax.get_yaxis_transform(), ha="right", va="center", fontsize=7, color="grey")
        ax.axvline(0, color="grey", linewidth=0.8, alpha=0.6)
        if rows["diff"].isna().all():
            why = "; ".join(n for n in dict.fromkeys(rows["note"].fillna("")) if n) if "note" in rows else ""
            if scores is not None and metric in scores.columns:
                why = why_missing(scores[scores["variant"].isin({*rows["a"], *rows["b"]})], metric) or why
            _note(ax, _wrapped([f"no values: {why}" if why else "no values"], 30), centre=True)
        ax.set_yticks(range(len(names)), names)
        ax.tick_params(axis="y", labelleft=i % ncols == 0, labelsize=8)
        ax.set_ylim(len(names) - 0.5, -0.5)  # first row on top
        if rows["diff"].isna().all():  # no scale to read: 0 in the middle, the reason above it
            ax.set_xlim(-1.0, 1.0)
            ax.set_xticks([0.0])
            _title(ax, metric, None)
            continue
        ax.margins(x=0.35)  # no point, interval end or n on the panel's edge
        ax.locator_params(axis="x", nbins=4)
        _title(ax, metric, steady_scale(ax, [*rows["diff"], *low, *high], axis="x"))
        _zero_in_view(ax)
    fig.supxlabel("difference in means, A − B (paired on task and seed)", fontsize=10)  # one label for every panel
    plan = f" Analysis {contrast_table['plan_label'].iloc[0]}." if "plan_label" in contrast_table.columns else ""
    kind = ("solid: at the level the plan's procedure tested each at (excludes 0 exactly when a two-sided test is "
            "declared; no joint coverage); dashed: 95% unadjusted, for a test the plan does not decide or the "
            "procedure never reached (marked undecided)" if decided else "95%, unadjusted")
    return caption(fig, f"Intervals: task-clustered SE (CR1), t on tasks - 1 df, {kind}; hollow point: no interval "
                        f"(fewer than two tasks or no spread); n: tasks behind each difference; grey vertical "
                        f"line: no difference.{plan}", not_drawn, GLOSSARY_LINE, warning)


def gate_figure(gates: pd.DataFrame) -> Figure:
    """Decisions by action type (stacked per signatory), and the rubber-stamp rate per signatory."""
    table = check_gates(gates).assign(decision=lambda t: t["decision"].fillna("undecided"),
                                      gate=lambda t: t["action"] + " / " + t["signatory"])
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    warning = judge_warning(*judge_status(table)) if "judge_grade" in table.columns else None
    if table.empty:  # a run without gated requests still gets its (empty) figure
        fig.text(0.5, 0.5, "no gated requests", ha="center", va="center")
        return caption(fig, warning)
    left, right = fig.subplots(1, 2, width_ratios=(3, 2))
    decisions = ["approved", "rejected", *sorted(set(table["decision"]) - {"approved", "rejected"})]
    sns.countplot(data=table, y="gate", hue="decision", hue_order=decisions,
                  order=sorted(table["gate"].unique()), ax=left)
    left.set_title("Gated requests by action / signatory")
    left.set_ylabel("")
    left.set_xlabel("gated requests")
    stamps = gate_summary(table, by="signatory")
    sns.barplot(data=stamps, x="signatory", y="rubber_stamp_rate", color="tab:red", ax=right)
    right.set_ylim(0, 1)
    right.set_title("Rubber-stamp rate (approvals not grounded)")
    right.set_ylabel("share of judged approvals")
    return caption(fig, "Labels by the gate judge; a rubber stamp is an approval it found not grounded.", warning)


def figure_bytes(fig: Figure, fmt: str) -> bytes:
    """The figure rendered as `fmt` (png at 150 dpi, svg) in memory."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, dpi=150, bbox_inches="tight")
    return buffer.getvalue()


def artefacts(tables: Mapping[str, pd.DataFrame], figures: Mapping[str, Figure]) -> dict[str, bytes]:
    """File name -> content: each table as `<name>.csv`, each figure as `<name>.png` and `.svg`."""
    files = {f"{name}.csv": table.to_csv(index=False).encode("utf-8") for name, table in tables.items()}
    for name, fig in figures.items():
        files |= {f"{name}.{fmt}": figure_bytes(fig, fmt) for fmt in FIGURE_FORMATS}
    return files
