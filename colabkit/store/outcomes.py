"""How the sessions of each variant ended: the AI's steps, the endings, the expired requests.

Like for like needs more than equal settings: if one variant's sessions give the AI fewer
steps, end differently or lose more held actions, its scores differ for that reason. So the
batch report (`colabkit.runner.progress.BatchSummary.by_variant`) and the study table
(`colabkit.analysis.format_study_table`) both show, per variant, `run_outcomes` of its
sessions: the AI's turns (waits included: what its budget counts), its steps used (mean, min,
max; waits left out), the endings ("budget 110; finish 4"), the requests that expired and,
where actions were held, the mean delay from a proposal to its effect in the AI's turns
(`gate_delays`; columns `ai_turns` and `gate_delay` of the input, when it has them). Its input has a row per session with `variant`, `ended_by` and the
AI's steps and expired requests: the sessions table's `ai_actions` and `expired`, or the
score table's `ai_steps` and `expired_requests`.
"""

from __future__ import annotations

import pandas as pd

RUN_OUTCOME_COLUMNS = ("variant", "sessions", "ai_turns_mean", "ai_steps_mean", "ai_steps_min", "ai_steps_max",
                       "endings", "expired_requests", "gate_delay_mean")


def run_outcomes(sessions: pd.DataFrame) -> pd.DataFrame:
    """Per variant (in first-seen order): sessions, AI turns mean, AI steps mean/min/max, endings,
    expired requests, mean gate delay (NaN where nothing held took effect).

    One row per session is counted (a table with a row per judge is reduced by `session_id`);
    a session without the counts (an older record) counts in `sessions` and `endings` only.
    """
    frame = sessions.rename(columns={"ai_actions": "ai_steps", "expired": "expired_requests"})
    frame = frame.drop_duplicates("session_id") if "session_id" in frame.columns else frame
    rows = []
    for variant, group in frame.groupby("variant", sort=False):
        steps = pd.to_numeric(group["ai_steps"], errors="coerce").dropna()
        turns = pd.to_numeric(group.get("ai_turns", pd.Series(dtype=float)), errors="coerce").dropna()
        delays = pd.to_numeric(group.get("gate_delay", pd.Series(dtype=float)), errors="coerce").dropna()
        endings = group["ended_by"].fillna("unknown").value_counts()
        rows.append({
            "variant": variant, "sessions": len(group),
            "ai_turns_mean": float(turns.mean()) if len(turns) else float("nan"),
            "ai_steps_mean": float(steps.mean()) if len(steps) else float("nan"),
            "ai_steps_min": float(steps.min()) if len(steps) else float("nan"),
            "ai_steps_max": float(steps.max()) if len(steps) else float("nan"),
            "endings": "; ".join(f"{end} {n}" for end, n in sorted(endings.items(), key=lambda kv: (-kv[1], kv[0]))),
            "expired_requests": int(pd.to_numeric(group["expired_requests"], errors="coerce").fillna(0).sum()),
            "gate_delay_mean": float(delays.mean()) if len(delays) else float("nan"),
        })
    return pd.DataFrame(rows, columns=list(RUN_OUTCOME_COLUMNS))
