"""The closing words of an analysis: what the plan's procedure declared, what it did not and why.

A reader who skips to the end of the ablations notebook should find, in sentences, what the
run shows and what it does not. Everything here is read from the tables the procedure already
made (`hypothesis_table`, `contrasts`, `own_contrasts`): the `decision` column says what was
declared, never a p-value compared here again, so the words cannot disagree with the tables.
An estimate is described against its claim's direction ("in the claimed direction", "against
it"); an estimate of zero (within the plan's tolerance) has no direction and says so, so a
zero never reads as agreement. Not declared is never "no effect".
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable

import pandas as pd

from colabkit.analysis.inference.planning.plan import AnalysisPlan
from colabkit.analysis.own_contrasts import comparison_lines
from colabkit.analysis.presentation import Html
from colabkit.analysis.scores import METRIC_LABELS

SHOWN_EXPLORATORY = 6


def _is_zero(value: float, plan: AnalysisPlan) -> bool:
    return abs(value) <= plan.zero_tolerance * max(1.0, abs(value))


def estimate_words(diff: float, direction: str, plan: AnalysisPlan) -> str:
    """The estimate with its relation to the claimed direction; a zero has none."""
    if math.isnan(diff):
        return "no estimate"
    if _is_zero(diff, plan):
        return "estimate 0 (no direction)"
    if direction in ("greater", "less"):
        along = (diff > 0) == (direction == "greater")
        return f"estimate {diff:+.3g}, {'in the claimed direction' if along else 'against the claimed direction'}"
    return f"estimate {diff:+.3g}"


def _claim_line(row: pd.Series, plan: AnalysisPlan) -> str:
    test = f"{row['a']} − {row['b']} on {METRIC_LABELS.get(str(row['metric']), row['metric'])}"
    claim = f" \"{row['claim']}\"" if isinstance(row.get("claim"), str) and row["claim"] else ""
    p = row["p_adjusted"]
    adjusted = f", adjusted p {float(p):.3g}" if not pd.isna(p) else ""
    why = f"; {row['note']}" if isinstance(row.get("note"), str) and row["note"] else ""
    return (f"{row['hypothesis']}{claim}, {test}: {row['decision']}{adjusted}; "
            f"{estimate_words(float(row['diff']), str(row['direction']), plan)}{why}.")


def summary_lines(hypotheses: pd.DataFrame, plan: AnalysisPlan, exploratory: pd.DataFrame | None = None,
                  compared: pd.DataFrame | None = None, own: pd.DataFrame | None = None,
                  metrics: Iterable[str] | None = None, notes: Iterable[str | None] = ()) -> dict[str, list[str]]:
    """Section title -> sentences: the claims declared, those not (each with its decision and
    why), the exploratory tests declared, the study's own comparisons (on `metrics`, default
    every metric of `own`), and what the run cannot show (`notes`: the plumbing-grade or judge
    lines that apply)."""
    claims = hypotheses[hypotheses["hypothesis"] != ""]
    declared = claims[claims["declared"].astype(bool)]
    others = claims[~claims["declared"].astype(bool)]
    sections = {
        f"Declared by the plan's procedure (plan {plan.plan_hash}, alpha {plan.alpha:g} study-wise)":
            [_claim_line(r, plan) for _, r in declared.iterrows()] or ["No claim was declared."],
        "Not declared, and why": [_claim_line(r, plan) for _, r in others.iterrows()] or ["Every claim was declared."],
    }
    if exploratory is not None and len(exploratory):
        rows = exploratory[(exploratory["hypothesis"] == "") & exploratory["declared"].astype(bool)]
        shown = [f"{r['a']} − {r['b']} on {METRIC_LABELS.get(str(r['metric']), r['metric'])}: "
                 f"{estimate_words(float(r['diff']), 'two-sided', plan)}, adjusted p {float(r['p_adjusted']):.3g}."
                 for _, r in rows.head(SHOWN_EXPLORATORY).iterrows()]
        more = len(rows) - len(shown)
        total = int((exploratory["hypothesis"] == "").sum())
        sections["Exploratory tests"] = [f"Of the {total} exploratory tests (two-sided, tested after the claims), "
                                         f"{len(rows)} were declared{':' if len(rows) else '.'}"] + shown + (
            [f"... and {more} more (contrasts tables)."] if more > 0 else [])
    if compared is not None and len(compared):
        own = own if own is not None else pd.DataFrame(columns=["a", "b", "metric"])
        shown_metrics = list(dict.fromkeys(own["metric"])) if metrics is None else list(metrics)
        sections["The study's own comparisons"] = comparison_lines(compared, own, shown_metrics)
    sections["What this run does not show"] = [
        "A claim not declared is not shown absent: the procedure did not find enough evidence at this "
        "run's tasks and seeds (see the power tables).",
        "A comparison not in the plan is estimated, not decided: write it into the plan before the data "
        "(colabkit plan-analysis --hypotheses FILE) to have it decided.",
        *(line for line in notes if line)]
    return sections


def summary_html(sections: dict[str, list[str]]) -> Html:
    """`summary_lines`' sections as HTML for the notebook's last cell (and as text for a console)."""
    markup = "".join(f"<h4>{html.escape(title)}</h4><ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in lines)
                     + "</ul>" for title, lines in sections.items())
    text = "\n".join(f"{title}\n" + "\n".join(f"- {line}" for line in lines) for title, lines in sections.items())
    return Html(f'<div class="ck-summary">{markup}</div>', text)
