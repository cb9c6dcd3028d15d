"""The tidy score table the analysis layer reads: its columns, its order of variants, checks.

The evaluation layer writes one row per session (COMMON.md's interface); analysis only reads
it. Everything here is about recognising a valid table and ordering its factors the way the
study reports them (single, then default / scaffolded / memory / preassigned, each with d, r,
dr), so every table and figure lists variants in the same order.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path

import pandas as pd

from colabkit.errors import ColabkitError

STRUCTURES = ("single", "default", "scaffolded", "memory", "preassigned", "dynamic")  # dynamic: beyond the study
SOLO = "solo"
"""Each persona alone (`solo-d`, `solo-r`, beyond the study): a structure of the table, never of the
study's grid or its plan (so it is not in `STRUCTURES`)."""
COMPOSITIONS = ("none", "d", "r", "dr")
# The columns the analysis needs; the evaluation table has more (flags, judge grade, ...).
FACTOR_COLUMNS = ("session_id", "task_id", "variant", "structure", "composition", "seed")
# The study's table, in the paper's order; `delivered` is reported as the delivery rate.
STUDY_METRICS = ("h_init_norm", "s_hyp", "performance", "hms", "w_total", "w_human", "delivered")
# Metrics bounded in [0, 1]: the ones a "0.05 difference" is meaningful for (power analysis).
RATE_METRICS = ("performance", "h_init_norm", "s_hyp", "hms")
METRIC_LABELS = {
    "h_init_norm": "H_init,norm", "s_hyp": "S_hyp", "performance": "Performance", "hms": "HMS",
    "w_total": "W_total", "w_human": "W_human", "delivered": "Delivery", "a_profile": "A_profile",
    "c_wf": "C_wf", "h_init_events": "H_init,events", "ca_plus": "CA+", "ca_minus": "CA-",
    "pooling": "Pooling", "pooling_lex": "Pooling_lex", "pooling_hyp": "Pooling_hyp", "pooling_delay": "Pooling delay",
}


def variant_order(variants: Iterable[str]) -> list[str]:
    """The variants present, in the study's order (unknown names last, alphabetically)."""
    known = ["single"] + [f"{s}-{c}" for s in STRUCTURES[1:] for c in COMPOSITIONS[1:]] + ["solo-d", "solo-r"]
    present = set(variants)
    return [v for v in known if v in present] + sorted(present - set(known))


def check_scores(scores: pd.DataFrame, metrics: Iterable[str] = ()) -> pd.DataFrame:
    """Return the table with its metric columns as floats, or fail naming what is missing.

    `delivered` (a bool) becomes 0/1 so its mean is the delivery rate; a missing metric stays
    NaN (never 0), and every statistic below counts only the sessions that have a value.
    """
    if not isinstance(scores, pd.DataFrame):
        raise ColabkitError(f"score table must be a pandas DataFrame, got {type(scores).__name__}")
    wanted = [*FACTOR_COLUMNS, *metrics]
    missing = [c for c in wanted if c not in scores.columns]
    if missing:
        raise ColabkitError(f"score table lacks column(s): {', '.join(missing)}")
    unknown = sorted(set(scores["structure"]) - {*STRUCTURES, SOLO})
    if unknown:
        raise ColabkitError(f"score table has unknown structure value(s): {', '.join(map(str, unknown))}")
    if scores.empty:
        raise ColabkitError("score table is empty: no scored sessions (score the experiment first)")
    repeated = scores["session_id"].duplicated(keep=False)
    if repeated.any():
        judges = ", ".join(sorted(map(str, scores.loc[repeated, "judge_model"].unique()))) \
            if "judge_model" in scores.columns else "unknown"
        raise ColabkitError(f"score table has {scores.loc[repeated, 'session_id'].nunique()} session(s) scored more "
                            f"than once (judge_model: {judges}); select one judge's rows first")
    table = scores.copy()
    for metric in metrics:
        try:
            table[metric] = pd.to_numeric(table[metric].astype("float64"), errors="raise")
        except (TypeError, ValueError) as exc:
            raise ColabkitError(f"score column {metric!r} is not numeric: {exc}") from None
    return table


def read_score_table(path: Path | str) -> pd.DataFrame:
    """A score table saved as parquet or CSV (e.g. one exported from several experiments)."""
    path = Path(path)
    if not path.is_file():
        raise ColabkitError(f"score table not found: {path}")
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    if path.suffix == ".csv":
        return pd.read_csv(path)
    raise ColabkitError(f"score table must be .parquet or .csv: {path}")


def load_score_table(results: Path | str, scores_file: Path | str | None = None, *,
                     sessions: Collection[str] | None = None) -> pd.DataFrame:
    """The score table of an experiment's results folder, or of `scores_file` when given.

    `sessions`, if given, keeps only those session ids: an experiment's folder can also hold
    sessions of an earlier version of its grid (a session's id is its spec's hash, so a change
    of the suite's defaults gives new ids), which must not be pooled with the current ones.
    The evaluation layer is imported here, not at module level: reading a saved table (and
    every statistic) must not pull in the judges and their model stack.
    """
    if scores_file:
        table = read_score_table(scores_file)
    else:
        from colabkit.evaluation import load_scores

        table = load_scores(results)
    if sessions is not None:
        table = table[table["session_id"].isin(set(sessions))].reset_index(drop=True)
    return table
