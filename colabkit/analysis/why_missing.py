"""Why a metric has no value: the scorers' own flags, summarised for a figure's empty panel.

A scorer that leaves a value missing says why in the score table's `flags` column
(`colabkit.evaluation.tables`: `"<scorer>: <flag>"`, `;`-separated, e.g. `initiative:
initiative:no_initiative_events`, `performance: no_gold: task ...`, and `session: ended by ...`
for a session that ended on infrastructure). A panel or a variant without values shows the most
frequent of those flags for the metric's scorer, so a blank is never silent; a missing value no
flag explains says that no session has a score from that scorer.
"""

from __future__ import annotations

import re
from collections import Counter

import pandas as pd

from colabkit.evaluation import scorers_for
from colabkit.evaluation.scorer import registered

SHOWN_REASONS = 2
_COUNT = re.compile(r"\(\d+\)$")  # judge_missing(3): the count per session, not a different reason


def scorer_of(metric: str) -> str:
    """The name of the scorer that fills `metric`: a default one, else an opt-in one (the metric's
    own name otherwise)."""
    return next((s.name for s in scorers_for(None) if metric in s.columns),
                next((name for name, factory in registered().items() if metric in factory().columns), metric))


def why_missing(scores: pd.DataFrame, metric: str) -> str:
    """Why the sessions of `scores` lacking `metric` lack it, in one short line ("" if none lacks it)."""
    missing = scores[scores[metric].isna()] if metric in scores.columns else scores
    if missing.empty:
        return ""
    scorer = scorer_of(metric)
    reasons: Counter[str] = Counter()
    for text in missing.get("flags", pd.Series(dtype=object)).fillna(""):
        for flag in filter(None, (f.strip() for f in str(text).split(";"))):
            source, _, what = flag.partition(": ")
            if source in (scorer, "session"):
                reasons[_COUNT.sub("", what).strip()] += 1
    if not reasons:
        return f"no session has a {scorer} score (not scored, or not defined for it)"
    shown = [f"{what} ({n} session{'s' if n > 1 else ''})" for what, n in reasons.most_common(SHOWN_REASONS)]
    more = len(reasons) - len(shown)
    return "flags: " + "; ".join(shown) + (f"; {more} more" if more > 0 else "")
