"""Behaviour fingerprints: one row per human seat of a session, from its stored events.

Whether a simulated collaborator behaves like a person is asked of what each did, so every
feature here is computed from the events table (`colabkit.store.load_events`) and the
sessions table (`load_sessions`: the spec's models and each seat's private briefing), never
from budget settings: what a step means may change with the session's end rule, the log does
not. No judge is needed; where the study defines a process metric from a judge (H_init,norm,
A_profile) it is joined from the score table when one is given.

One row per (session, human seat D or R), task phase only (the memory build is a fixed
protocol, the same for everybody). `FEATURES` lists the columns and `FEATURE_DOCS` defines
each; docs/realism.md repeats the definitions.
A feature with nothing to measure (no messages, no request to decide) is missing (NaN), never
zero, so a comparison never mistakes "had no chance" for "never did".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from colabkit.llm import ModelConfig

HUMAN_SEATS = ("D", "R")
PERSON = "person"
MESSAGE, CELL, EDIT, WAIT = "send_message", "execute_code", "edit_result", "wait"
DECISIONS = ("approve", "reject")
PROPOSAL_ACTIONS = ("propose_memory_update",)
DIVERSITY_WINDOW = 50
FEATURE_DOCS: dict[str, str] = {
    "n_steps": "task-phase steps the seat took (every logged step, waits and invalid outputs included)",
    "share_message": "share of its steps that were chat messages",
    "share_cell": "share of its steps that ran a notebook cell",
    "share_edit": "share of its steps that edited the result (applied, or held for a signature)",
    "share_decision": "share of its steps that approved or rejected a request",
    "share_wait": "share of its steps that were waits",
    "share_proposal": "share of its steps that asked the team for something: a gated action held for a "
                      "signature, or a proposed memory update",
    "share_invalid": "share of its steps whose answer could not be parsed into an action",
    "msg_words_mean": "mean words per chat message (a CJK character counts as one word)",
    "msg_words_sd": "standard deviation of words per chat message (two messages or more)",
    "msg_chars_mean": "mean characters per chat message, whitespace left out",
    "char_diversity": f"lexical diversity on characters: the mean share of distinct characters in every window of "
                      f"{DIVERSITY_WINDOW} consecutive characters of its messages (whitespace left out; missing "
                      f"under {DIVERSITY_WINDOW})",
    "opening_share": "front-loading: the characters of its first chat message over all its messages' characters",
    "question_share": "share of its messages that contain a question mark (ASCII ? or the full-width ？ of CJK text)",
    "reply_share": "share of its messages that answer a teammate: the chat message just before it came from "
                   "someone else, was addressed to this seat or to all, and was sent this round or the last",
    "disclosure_share": "share of its private briefing's facts (briefing lines not in every seat's briefing) "
                        "whose content words reach its chat messages (half or more of a fact's words in one message)",
    "disclosure_when": "when its first briefing fact reached the chat: that round over the session's last round "
                       "(0 = at once, 1 = at the end)",
    "failure_reaction": "after a teammate's cell failed, the share of its next steps that were a message or a cell "
                        "(engaging with the failure) rather than a wait or anything else",
    "decision_rate": "requests addressed to it that it decided (approve or reject) over all requests addressed to it",
    "approval_share": "approvals over its decisions",
    "reason_words": "mean words of its decisions' stated reasons",
    "steps_to_first_act": "its task-phase steps before its first step that was not a wait (all its steps when "
                          "it never acted)",
}
FEATURES = tuple(FEATURE_DOCS)
PROCESS_FEATURES = ("h_init_norm", "a_profile")
"""Session-level process metrics of the study (judged), joined from a score table when given."""
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_WORD = re.compile(rf"[A-Za-z0-9_]+|[{_CJK}]")
"""A word: a run of Latin letters, digits and underscores, or one CJK character (Chinese and
Japanese have no spaces, and a character is the unit their word counts are usually given in)."""
QUESTION_MARKS = ("?", "\uff1f")
_STOP = frozenset(["the", "and", "for", "with", "that", "this", "from", "are", "was", "were", "has", "have", "had", "not", "but", "its", "their", "there", "which", "what", "when", "where", "who", "will", "would", "into", "than", "then", "them", "they", "these", "those", "your", "you", "our", "can", "may", "each", "per", "all", "any", "column", "columns", "file", "files", "data", "dataset", "value", "values"])


def words(text: object) -> list[str]:
    return _WORD.findall(str(text or ""))


def characters(text: str) -> str:
    """The text without whitespace: what character lengths and diversity count."""
    return "".join(str(text or "").split())


def char_diversity(texts: Sequence[str], window: int = DIVERSITY_WINDOW) -> float:
    """Moving-average type-token ratio on characters: defined the same for Chinese and English,
    and, unlike a plain ratio, not falling with the amount of text."""
    chars = "".join(characters(t) for t in texts)
    if len(chars) < window:
        return np.nan
    return float(np.mean([len(set(chars[i:i + window])) / window for i in range(len(chars) - window + 1)]))


def briefing_facts(briefings: dict[str, str], participant: str) -> list[set[str]]:
    """The seat's private facts: its briefing lines not found in every seat's briefing (the query
    and the file names everybody gets), each as its set of content words (three or more)."""
    lines = {p: {ln.strip(" -*\t") for ln in (text or "").splitlines() if ln.strip(" -*\t")}
             for p, text in briefings.items()}
    common = set.intersection(*lines.values()) if len(lines) > 1 else set()
    facts = []
    for line in sorted(lines.get(participant, set()) - common):
        content = {w.lower() for w in words(line) if len(w) >= 3 and w.lower() not in _STOP}
        if len(content) >= 3:
            facts.append(content)
    return facts


def _disclosed(fact: set[str], message: set[str]) -> bool:
    return len(fact & message) >= len(fact) / 2


def _recipients(args_json: str) -> list[str] | None:
    to = json.loads(args_json or "{}").get("to")
    return None if not to else [to] if isinstance(to, str) else list(to)


def _share(part: int, whole: int) -> float:
    return part / whole if whole else np.nan


def seat_features(events: pd.DataFrame, participant: str, briefings: dict[str, str]) -> dict[str, float]:
    """The features of one seat in one session's task-phase events (sorted by seq)."""
    task = events[events["phase"] == "task"]
    own = task[task["participant"] == participant]
    n = len(own)
    actions = own["action"]
    messages = own[(actions == MESSAGE) & (own["status"] == "ok")]
    lengths = [len(words(json.loads(a or "{}").get("text", ""))) for a in messages["args_json"]]
    texts = [json.loads(a or "{}").get("text", "") for a in messages["args_json"]]
    row: dict[str, float] = {
        "n_steps": float(n),
        "share_message": _share(int((actions == MESSAGE).sum()), n),
        "share_cell": _share(int((actions == CELL).sum()), n),
        "share_edit": _share(int((actions == EDIT).sum()), n),
        "share_decision": _share(int(actions.isin(DECISIONS).sum()), n),
        "share_wait": _share(int((actions == WAIT).sum()), n),
        "share_proposal": _share(int(((own["status"] == "pending") | actions.isin(PROPOSAL_ACTIONS)).sum()), n),
        "share_invalid": _share(int((actions == "invalid_output").sum()), n),
        "msg_words_mean": float(np.mean(lengths)) if lengths else np.nan,
        "msg_words_sd": float(np.std(lengths, ddof=1)) if len(lengths) > 1 else np.nan,
        "question_share": _share(sum(any(q in t for q in QUESTION_MARKS) for t in texts), len(texts)),
    }
    row.update(message_shape(texts))
    row["reply_share"] = _reply_share(task, participant)
    row["disclosure_share"], row["disclosure_when"] = _disclosure(messages, texts, briefings, participant,
                                                                 last_round=int(task["round"].max()) if len(task) else 0)
    row["failure_reaction"] = _failure_reaction(task, participant)
    asked = int(((task["status"] == "pending") & (task["signatory"] == participant)).sum())
    decisions = own[actions.isin(DECISIONS) & own["decision"].notna()]
    row["decision_rate"] = min(1.0, _share(len(decisions), asked)) if asked else np.nan
    row["approval_share"] = _share(int((decisions["decision"] == "approved").sum()), len(decisions))
    reasons = [len(words(r)) for r in decisions["decision_reason"]]
    row["reason_words"] = float(np.mean(reasons)) if reasons else np.nan
    acted = np.flatnonzero((actions != WAIT).to_numpy())
    row["steps_to_first_act"] = float(acted[0]) if len(acted) else float(n)
    return row


def message_shape(texts: Sequence[str]) -> dict[str, float]:
    """The language-independent shape of a seat's messages: characters, diversity, front-loading."""
    chars = [len(characters(t)) for t in texts]
    return {"msg_chars_mean": float(np.mean(chars)) if chars else np.nan,
            "char_diversity": char_diversity(texts),
            "opening_share": chars[0] / sum(chars) if chars and sum(chars) else np.nan}


def _reply_share(task: pd.DataFrame, participant: str) -> float:
    chat = task[(task["action"] == MESSAGE) & (task["status"] == "ok")]
    replies = mine = 0
    previous: pd.Series | None = None
    for _, msg in chat.iterrows():
        if msg["participant"] == participant:
            mine += 1
            if previous is not None and previous["participant"] != participant \
                    and msg["round"] - previous["round"] <= 1:
                to = _recipients(previous["args_json"])
                replies += to is None or participant in to
        previous = msg
    return _share(replies, mine)


def _disclosure(messages: pd.DataFrame, texts: Sequence[str], briefings: dict[str, str], participant: str,
                last_round: int) -> tuple[float, float]:
    facts = briefing_facts(briefings, participant)
    if not facts:
        return np.nan, np.nan
    said = [({w.lower() for w in words(t)}, int(r)) for t, r in zip(texts, messages["round"])]
    first = [min((r for bag, r in said if _disclosed(fact, bag)), default=None) for fact in facts]
    reached = [r for r in first if r is not None]
    when = min(reached) / last_round if reached and last_round else np.nan
    return len(reached) / len(facts), when


def _failure_reaction(task: pd.DataFrame, participant: str) -> float:
    failed = task[(task["action"] == CELL) & (task["status"] == "error") & (task["participant"] != participant)]
    own = task[task["participant"] == participant]
    engaged = seen = 0
    for seq in failed["seq"]:
        after = own[own["seq"] > seq]
        if len(after):
            seen += 1
            engaged += after.iloc[0]["action"] in (MESSAGE, CELL)
    return _share(engaged, seen)


def simulator_label(models_json: str, participant: str) -> str:
    """Who played the seat: its model string, plus the sampling fields that differ from that
    model's defaults (a sweep may pit one model at two temperatures)."""
    models = json.loads(models_json or "{}")
    entry = models.get(participant) or models.get("default") or {}
    config = ModelConfig.model_validate(entry if isinstance(entry, dict) else {"model": entry})
    base = ModelConfig(model=config.model).model_dump(exclude={"timeout"})
    diffs = [f"{k}={v}" for k, v in config.model_dump(exclude={"timeout"}).items() if v != base[k]]
    return config.model + (f" [{', '.join(diffs)}]" if diffs else "")


def fingerprints(events: pd.DataFrame, sessions: pd.DataFrame, scores: pd.DataFrame | None = None,
                 seats: Iterable[str] = HUMAN_SEATS) -> pd.DataFrame:
    """One row per (session, human seat present in it): factors, who played the seat
    (`kind` "person" or "simulated", `simulator` the model or "person") and `FEATURES`;
    with a score table, its `PROCESS_FEATURES` per session."""
    rows = []
    by_session = dict(tuple(events.sort_values(["session_id", "seq"]).groupby("session_id", sort=False)))
    for rec in sessions.itertuples(index=False):
        ev = by_session.get(rec.session_id)
        if ev is None:
            continue
        briefings = json.loads(rec.briefings_json or "{}")
        for seat in seats:
            mine = ev[ev["participant"] == seat]
            if mine.empty:
                continue
            person = bool((mine["actor_kind"] == PERSON).any())
            rows.append({"session_id": rec.session_id, "task_id": rec.task_id, "variant": rec.variant,
                         "seed": rec.seed, "participant": seat, "kind": PERSON if person else "simulated",
                         "simulator": PERSON if person else simulator_label(rec.models_json, seat),
                         **seat_features(ev, seat, briefings)})
    frame = pd.DataFrame(rows, columns=["session_id", "task_id", "variant", "seed", "participant", "kind",
                                        "simulator", *FEATURES])
    frame["structure"] = frame["variant"].str.split("-").str[0]
    if scores is not None:
        present = [c for c in PROCESS_FEATURES if c in scores.columns]
        frame = frame.merge(scores[["session_id", *present]].drop_duplicates("session_id"), on="session_id", how="left")
    return frame


def stored_fingerprints(*folders: Path | str, scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """`fingerprints` of every finished session in `folders` (results folders; a session found
    in two is counted once)."""
    from colabkit.store import load_events, load_sessions

    found = [Path(f) for f in folders if Path(f).is_dir()]
    events = pd.concat([load_events(f) for f in found]).drop_duplicates(["session_id", "seq"]) if found else None
    sessions = pd.concat([load_sessions(f) for f in found]).drop_duplicates("session_id") if found else None
    if events is None or sessions is None or sessions.empty:
        return fingerprints(pd.DataFrame(columns=["session_id", "seq"]), pd.DataFrame(columns=["session_id"]), scores)
    return fingerprints(events, sessions, scores)
