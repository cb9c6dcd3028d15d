"""What a change at event N did: continuations with the change against controls from the same N.

`fork_table` reads the continuations stored under a forks folder (one row each: parent, N,
change, seed, how it ended and the session's process counts); `session_values` reads the same
counts for any stored session (the original). Scores (Performance, S_hyp, W_total, ...) come
from the evaluation layer's table (`load_scores`), which treats continuations like any session.

`counterfactual_table` pairs each change continuation with the control from the same fork
point and the same seed (the seeds are the continuations' common random numbers: seed s of
the change and seed s of the control draw the same scheduling and sampling stream after N),
and reports per metric: k continuations and k controls, their means, the mean paired
difference with a t interval (95%; NaN below two pairs), and the original session's value.
Missing values are dropped pair by pair, never read as 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from scipy import stats as scipy_stats

from colabkit.session.fork import ForkRecord, describe
from colabkit.store import SESSION_FILE, SessionRecord

PROCESS_METRICS = ("actions", "messages", "cells", "edits", "approved", "rejected", "failed_steps", "delivered")
"""Counted from each session's record (no judge)."""
DEFAULT_METRICS = ("performance", "s_hyp", "w_total", "w_human", *PROCESS_METRICS)
FORK_COLUMNS = ("session_id", "parent_id", "at", "change", "change_kind", "is_control", "seed", "verify",
                "prefix_mismatches", "ended_by")
TABLE_COLUMNS = ("parent_id", "at", "change", "metric", "k", "k_control", "change_mean", "control_mean",
                 "n_pairs", "diff", "ci_low", "ci_high", "original")


def session_values(record: SessionRecord) -> dict[str, Any]:
    """The process counts of one stored session (its record's totals and whether it delivered)."""
    totals = record.totals
    return {"session_id": record.session_id, "actions": totals.actions, "messages": totals.messages,
            "cells": totals.cells, "edits": totals.edits, "approved": totals.approved,
            "rejected": totals.rejected, "failed_steps": totals.failed_steps,
            "delivered": float(bool(record.final_hypothesis.strip()))}


def read_record(folder: Path | str) -> SessionRecord:
    return SessionRecord.model_validate_json((Path(folder) / SESSION_FILE).read_bytes())


def original_values(session: Path | str, scores: pd.DataFrame | None = None) -> dict[str, dict[str, Any]]:
    """{session id: its process counts and (if `scores` has its row) its scores}: the original's
    values for `counterfactual_table`."""
    record = read_record(session)
    values = session_values(record)
    if scores is not None and not scores.empty and record.session_id in set(scores["session_id"]):
        row = scores[scores["session_id"] == record.session_id].iloc[0]
        values.update({m: row[m] for m in DEFAULT_METRICS if m in row.index and m not in values})
    return {record.session_id: values}


def continuations(forks: Path | str) -> Iterator[tuple[SessionRecord, ForkRecord]]:
    """Every finished continuation (a fork's session) under the folder `forks`: its record and fork."""
    for folder in sorted(Path(forks).iterdir()) if Path(forks).is_dir() else ():
        if folder.name.startswith(".") or not (folder / SESSION_FILE).is_file():
            continue
        record = read_record(folder)
        if record.fork is not None:
            yield record, record.fork


def fork_table(forks: Path | str) -> pd.DataFrame:
    """One row per finished continuation under `forks` (`FORK_COLUMNS` and the process counts)."""
    rows = []
    for record, fork in continuations(forks):
        point = fork.point
        rows.append({"parent_id": point.parent_id, "at": point.at, "change": describe(point.change),
                     "change_kind": point.change.kind, "is_control": point.change.kind == "none",
                     "seed": point.seed, "verify": point.verify,
                     "prefix_mismatches": len(fork.replay.mismatches), "ended_by": record.ended_by,
                     **session_values(record)})
    return pd.DataFrame(rows, columns=[*FORK_COLUMNS, *PROCESS_METRICS])


def with_scores(forks: pd.DataFrame, scores: pd.DataFrame | None) -> pd.DataFrame:
    """`forks` with the score table's metric columns joined on session id (one row per session)."""
    if scores is None or scores.empty:
        return forks
    metrics = [c for c in scores.columns if c in DEFAULT_METRICS and c not in forks.columns]
    per_session = scores.groupby("session_id", sort=False)[metrics].first().reset_index()
    return forks.merge(per_session, on="session_id", how="left")


def paired_interval(d: Sequence[float] | pd.Series, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high) of the paired differences `d`: a t interval, NaN bounds below two pairs."""
    values = pd.Series(d, dtype="float64").dropna()
    n = len(values)
    mean = float(values.mean()) if n else math.nan
    if n < 2:
        return mean, math.nan, math.nan
    half = float(scipy_stats.t.ppf(0.5 + level / 2, n - 1)) * float(values.std(ddof=1)) / math.sqrt(n)
    return mean, mean - half, mean + half


def counterfactual_table(forks: pd.DataFrame, original: dict[str, dict[str, Any]] | None = None,
                         metrics: Iterable[str] = DEFAULT_METRICS) -> pd.DataFrame:
    """Per fork point, change and metric: change vs control continuations (module docstring).

    `forks` is `fork_table` (optionally `with_scores`); `original` maps a parent session id to
    its metric values (`session_values`, plus its scores). Metrics absent from `forks` are
    left out.
    """
    metrics = [m for m in metrics if m in forks.columns]
    rows = []
    for (parent, at), group in forks.groupby(["parent_id", "at"], sort=True):
        controls = group[group["is_control"]].set_index("seed")
        for change, changed in group[~group["is_control"]].groupby("change", sort=True):
            changed = changed.set_index("seed")
            for metric in metrics:
                treated = pd.to_numeric(changed[metric], errors="coerce").dropna()
                control = pd.to_numeric(controls[metric], errors="coerce").dropna()
                both = treated.index.intersection(control.index)
                diff, low, high = paired_interval(treated[both] - control[both])
                rows.append({"parent_id": parent, "at": at, "change": change, "metric": metric,
                             "k": len(treated), "k_control": len(control),
                             "change_mean": float(treated.mean()) if len(treated) else math.nan,
                             "control_mean": float(control.mean()) if len(control) else math.nan,
                             "n_pairs": len(both), "diff": diff, "ci_low": low, "ci_high": high,
                             "original": _number((original or {}).get(str(parent), {}).get(metric))})
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def counterfactual_figure(forks: pd.DataFrame, table: pd.DataFrame, metrics: Sequence[str] | None = None) -> Any:
    """One panel per metric: each continuation's value (controls grey, changes coloured, by
    change), the original as a dashed line, and the paired difference with its interval in
    the panel's title. Returns the matplotlib figure."""
    import matplotlib.pyplot as plt

    shown = list(metrics or dict.fromkeys(table["metric"]))
    fig, axes = plt.subplots(1, max(len(shown), 1), figsize=(3.2 * max(len(shown), 1), 3.2), squeeze=False)
    changes = sorted(set(forks.loc[~forks["is_control"], "change"]))
    for ax, metric in zip(axes[0], shown):
        groups = [("control", forks[forks["is_control"]])] + [(c, forks[forks["change"] == c]) for c in changes]
        for x, (label, rows) in enumerate(groups):
            values = pd.to_numeric(rows[metric], errors="coerce").dropna()
            ax.scatter([x] * len(values), values, color="grey" if label == "control" else f"C{x}", alpha=0.8)
        ax.set_xticks(range(len(groups)), [g[0] for g in groups], rotation=20, ha="right")
        line = table[table["metric"] == metric]
        original = line["original"].dropna()
        if len(original):
            ax.axhline(float(original.iloc[0]), color="black", linestyle="--", linewidth=1, label="original")
        title = metric
        if len(line) == 1 and not math.isnan(line["diff"].iloc[0]):
            row = line.iloc[0]
            title += f"\nΔ {row['diff']:+.2f} [{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]" \
                if not math.isnan(row["ci_low"]) else f"\nΔ {row['diff']:+.2f}"
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def _number(value: Any) -> float:
    try:
        return float(value) if value is not None else math.nan
    except (TypeError, ValueError):
        return math.nan
