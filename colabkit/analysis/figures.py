"""The ablation figures (seaborn), and their bytes for whoever saves them.

Figures are built on `matplotlib.figure.Figure` objects, not pyplot's global state, so a
batch making hundreds of them never leaks open figures and a notebook shows exactly the one
it returns. The layer writes no files: `figure_bytes` and `artefacts` render figures and
tables to bytes, and the caller (a notebook, the batch) writes them atomically.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from colabkit.analysis.gates import check_gates, gate_summary
from colabkit.analysis.scores import COMPOSITIONS, METRIC_LABELS, STRUCTURES, check_scores

QUALITY_METRICS = ("h_init_norm", "s_hyp", "performance", "hms")
WORK_METRICS = ("w_total", "w_human", "delivered")
FIGURE_FORMATS = ("png", "svg")


def ablation_figure(scores: pd.DataFrame, metrics: Iterable[str] = QUALITY_METRICS) -> Figure:
    """Mean ± SE per coordination structure, one line per team composition, a panel per metric."""
    metrics = list(metrics)
    table = check_scores(scores, metrics)
    structures = [s for s in STRUCTURES if s in set(table["structure"])]
    compositions = [c for c in COMPOSITIONS if c in set(table["composition"])]
    fig = Figure(figsize=(3.6 * len(metrics), 3.4), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics):
        sns.pointplot(data=table, x="structure", y=metric, hue="composition", order=structures,
                      hue_order=compositions, errorbar="se", dodge=0.35 if len(compositions) > 1 else False,
                      linestyle="none", capsize=0.1, markers="o", ax=ax, legend=ax is axes[-1])
        ax.set_title(METRIC_LABELS.get(metric, metric))
        ax.set_xlabel("")
        ax.set_ylabel("mean ± SE")
        ax.tick_params(axis="x", labelrotation=30)
    if axes[-1].get_legend() is not None:
        sns.move_legend(axes[-1], "upper left", bbox_to_anchor=(1.02, 1), title="team")
    return fig


def contrast_figure(contrast_table: pd.DataFrame) -> Figure:
    """Forest plot of A - B per composition (paired mean and its 95% CI), a panel per metric."""
    metrics = list(dict.fromkeys(contrast_table["metric"]))
    if not metrics:  # the grid has no pair of variants to contrast
        fig = Figure(figsize=(4, 1.5))
        fig.text(0.5, 0.5, "no contrast: the grid lacks one of each pair", ha="center", va="center")
        return fig
    fig = Figure(figsize=(2.2 * len(metrics) + 2, 0.5 * contrast_table.groupby("metric").size().max() + 1.5),
                 layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False, sharey=True)[0]
    for ax, metric in zip(axes, metrics):  # every metric has the same rows, in the same order
        rows = contrast_table[contrast_table["metric"] == metric].reset_index(drop=True)
        ax.errorbar(rows["diff"], range(len(rows)), fmt="o", color="black", capsize=3,
                    xerr=[rows["diff"] - rows["ci_low"], rows["ci_high"] - rows["diff"]])
        ax.axvline(0, color="grey", linewidth=0.8, linestyle="--")
        if ax is axes[0]:
            ax.set_yticks(range(len(rows)), [f"{r.a} − {r.b}" for r in rows.itertuples()])
            ax.invert_yaxis()
        ax.set_title(METRIC_LABELS.get(metric, metric))
        ax.set_xlabel("paired difference (95% CI)")
    return fig


def gate_figure(gates: pd.DataFrame) -> Figure:
    """Decisions by action type (stacked per signatory), and the rubber-stamp rate per signatory."""
    table = check_gates(gates).assign(decision=lambda t: t["decision"].fillna("undecided"),
                                      gate=lambda t: t["action"] + " / " + t["signatory"])
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    if table.empty:  # a run without gated requests still gets its (empty) figure
        fig.text(0.5, 0.5, "no gated requests", ha="center", va="center")
        return fig
    left, right = fig.subplots(1, 2, width_ratios=(3, 2))
    decisions = ["approved", "rejected", *sorted(set(table["decision"]) - {"approved", "rejected"})]
    sns.countplot(data=table, y="gate", hue="decision", hue_order=decisions,
                  order=sorted(table["gate"].unique()), ax=left)
    left.set_title("Gated requests by action / signatory")
    left.set_ylabel("")
    stamps = gate_summary(table, by="signatory")
    sns.barplot(data=stamps, x="signatory", y="rubber_stamp_rate", color="tab:red", ax=right)
    right.set_ylim(0, 1)
    right.set_title("Rubber-stamp rate (approvals not grounded)")
    right.set_ylabel("share of judged approvals")
    return fig


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
