"""How a living memory moved in each session (the Dynamic variants), from the event log.

One row per session: how many updates were proposed, applied (every other member approved),
dropped (someone rejected) or left undecided at the end; which slots changed; the gate rules
added and removed; when the first and last change took effect (task round); and the
memory's final version (1: never changed). Counts are 0 for a session whose memory never
moved, including every session of a frozen-memory variant, so the table joins the score
table on `session_id` for any experiment.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

MEMORY_DYNAMICS_COLUMNS = ("session_id", "variant", "updates_proposed", "updates_applied", "updates_dropped",
                           "updates_expired", "slots_changed", "gates_added", "gates_removed",
                           "first_update_round", "last_update_round", "memory_version")


def memory_dynamics(events: pd.DataFrame) -> pd.DataFrame:
    """The memory-dynamics columns per session of an events table (`colabkit.store.load_events`)."""
    rows = []
    for (session_id, variant), group in events.groupby(["session_id", "variant"], sort=True):
        proposed = group[(group["action"] == "propose_memory_update") & (group["status"] == "pending")]
        applied = group[group["action"] == "memory_updated"]
        args = [json.loads(a) for a in applied["args_json"]]
        expired = group[(group["action"] == "request_expired")
                        & group["request_id"].fillna("").str.startswith("upd-")]
        rounds = applied["round"].tolist()
        rows.append({
            "session_id": session_id, "variant": variant,
            "updates_proposed": len(proposed), "updates_applied": len(applied),
            "updates_dropped": int((group["action"] == "memory_update_dropped").sum()),
            "updates_expired": len(expired),
            "slots_changed": ",".join(sorted({a["slot"] for a in args})),
            "gates_added": ";".join(g for a in args for g in a.get("gates_added", [])),
            "gates_removed": ";".join(g for a in args for g in a.get("gates_removed", [])),
            "first_update_round": min(rounds) if rounds else np.nan,
            "last_update_round": max(rounds) if rounds else np.nan,
            "memory_version": max((a["version"] for a in args), default=1),
        })
    return pd.DataFrame(rows, columns=list(MEMORY_DYNAMICS_COLUMNS))


def memory_versions(events: pd.DataFrame, session_id: str) -> list[dict]:
    """Every version a session's living memory took after the frozen build: version, round,
    update id, slot, proposer, digest and the full record (as the `memory_updated` event holds it)."""
    applied = events[(events["session_id"] == session_id) & (events["action"] == "memory_updated")]
    versions = []
    for round_, raw in zip(applied["round"], applied["args_json"], strict=True):
        args = json.loads(raw)
        versions.append({"round": int(round_), **{k: args[k] for k in ("version", "update_id", "slot", "proposer",
                                                                       "digest", "memory")}})
    return versions
