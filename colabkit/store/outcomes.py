"""How the sessions of each variant ended: the AI's steps, the endings, the expired requests.

Like for like needs more than equal settings: if one variant's sessions give the AI fewer
steps, end differently or lose more held actions, its scores differ for that reason. So the
batch report (`colabkit.runner.progress.BatchSummary.by_variant`) and the study table
(`colabkit.analysis.format_study_table`) both show, per variant, `run_outcomes` of its
sessions: the AI's steps used (mean, min, max), the endings ("budget 110; finish 4") and the
requests that expired. Its input has a row per session with `variant`, `ended_by` and the
AI's steps and expired requests: the sessions table's `ai_actions` and `expired`, or the
score table's `ai_steps` and `expired_requests`.
"""

from __future__ import annotations

import pandas as pd

RUN_OUTCOME_COLUMNS = ("variant", "sessions", "ai_steps_mean", "ai_steps_min", "ai_steps_max", "endings",
                       "expired_requests")


def run_outcomes(sessions: pd.DataFrame) -> pd.DataFrame:
    """Per variant (in first-seen order): sessions, AI steps mean/min/max, endings, expired requests.

    One row per session is counted (a table with a row per judge is reduced by `session_id`);
    a session without the counts (an older record) counts in `sessions` and `endings` only.
    """
    frame = sessions.rename(columns={"ai_actions": "ai_steps", "expired": "expired_requests"})
    frame = frame.drop_duplicates("session_id") if "session_id" in frame.columns else frame
    rows = []
    for variant, group in frame.groupby("variant", sort=False):
        steps = pd.to_numeric(group["ai_steps"], errors="coerce").dropna()
        endings = group["ended_by"].fillna("unknown").value_counts()
        rows.append({
            "variant": variant, "sessions": len(group),
            "ai_steps_mean": float(steps.mean()) if len(steps) else float("nan"),
            "ai_steps_min": float(steps.min()) if len(steps) else float("nan"),
            "ai_steps_max": float(steps.max()) if len(steps) else float("nan"),
            "endings": "; ".join(f"{end} {n}" for end, n in sorted(endings.items(), key=lambda kv: (-kv[1], kv[0]))),
            "expired_requests": int(pd.to_numeric(group["expired_requests"], errors="coerce").fillna(0).sum()),
        })
    return pd.DataFrame(rows, columns=list(RUN_OUTCOME_COLUMNS))
