"""How far the judge behind a table can be trusted, carried into every table, figure and banner.

The evaluation layer marks each score row with `judge_grade` ('capable', or 'plumbing' for
the embedded model) and `judge_reliable` (the judge's sanity check on known answers passed).
A statistic over judged metrics is only as good as that judge, so every table here carries
both columns for the sessions behind each row, every figure a caption line, and notebooks a
banner, whenever the judge is plumbing-grade or failed (or never ran) its check.

A set of sessions is summarised as: grade 'plumbing' if any session was judged by a
plumbing-grade judge, else 'capable' if any was judged, else missing (rule-based scores
only); reliable False if any session's judge failed its check, True if every judged session's
judge passed, else missing.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

import pandas as pd

JUDGE_COLUMNS = ("judge_grade", "judge_reliable")


def judge_status(scores: pd.DataFrame) -> tuple[str | None, bool | None]:
    """(grade, reliable) of the judge(s) behind these score rows (module docstring)."""
    grades = set(scores["judge_grade"].dropna().astype(str)) if "judge_grade" in scores.columns else set()
    reliable = scores["judge_reliable"].dropna() if "judge_reliable" in scores.columns else pd.Series(dtype=bool)
    grade = "plumbing" if "plumbing" in grades else ("capable" if grades else None)
    if reliable.empty:
        return grade, None
    return grade, all(bool(v) for v in reliable)


def judge_warning(grade: str | None, reliable: bool | None) -> str | None:
    """One line saying why judged numbers are not study results, or None when they can be."""
    problems = []
    if grade == "plumbing":
        problems.append("the judge is plumbing-grade (the embedded model)")
    if reliable is False:
        problems.append("the judge failed its sanity check on known answers")
    elif reliable is None and grade is not None:
        problems.append("the judge's sanity check did not run")
    if not problems:
        return None
    return "JUDGE NOT RELIABLE: " + "; ".join(problems) + ". Judged metrics are not study results."


def scores_warning(scores: pd.DataFrame) -> str | None:
    """`judge_warning` for a table with `judge_grade` / `judge_reliable` columns (scores,
    gated events, or any table of this layer)."""
    return judge_warning(*judge_status(scores))


def banner_html(warning: str) -> str:
    """The warning as a red box for the top of a rendered notebook."""
    return ('<div style="border:2px solid #b22222;background:#fdecea;color:#7f0000;padding:8px;'
            f'font-weight:bold">&#9888; {html.escape(warning)}</div>')


def with_judge_columns(table: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """`table` plus `judge_grade` / `judge_reliable` of the sessions behind each row.

    A row is matched to sessions by its `variant` column, or its `a` and `b` columns (a
    contrast); a table with neither gets the status of all of `scores`.
    """
    status = {v: judge_status(rows) for v, rows in scores.groupby("variant")}
    if "variant" in table.columns:
        per_row = [status.get(v, (None, None)) for v in table["variant"]]
    elif {"a", "b"} <= set(table.columns):
        per_row = [_combine([status.get(a, (None, None)), status.get(b, (None, None))])
                   for a, b in zip(table["a"], table["b"])]
    else:
        per_row = [judge_status(scores)] * len(table)
    return table.assign(judge_grade=pd.Series([g for g, _ in per_row], index=table.index, dtype="object"),
                        judge_reliable=pd.Series([r for _, r in per_row], index=table.index, dtype="object"))


def _combine(statuses: Iterable[tuple[str | None, bool | None]]) -> tuple[str | None, bool | None]:
    frame = pd.DataFrame(list(statuses), columns=list(JUDGE_COLUMNS))
    return judge_status(frame)
