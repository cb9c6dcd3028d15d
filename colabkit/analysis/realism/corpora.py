"""Public corpora of real and simulated users as the instrument's own tables.

Two-party chat corpora (a user and an assistant) hold no cells, edits or decisions, but their
users' messages can be fingerprinted like a colabkit seat's. A reader (`recllmsim`,
`simulatorarena`) turns a local copy of a corpus into `Conversation`s; `conversation_tables`
turns those into the events and sessions tables `fingerprints` reads, the same pair the Co-Gym
importer (`cogym_tables`) feeds:
- the user is the seat `seat` (default "R", as for Co-Gym: the user holds the task's
  knowledge, which the study gives R); the assistant is "ai";
- every turn is a chat message (`send_message`, status ok, addressed to all) in a round of
  its own (the turn's index), task phase; a person's turn has `actor_kind` "person", a
  simulated user's "model", and the session's stored models name who played the seat
  (`simulator`), so `fingerprints` sets `kind` and `simulator` as for a colabkit session;
- `time` is the turn's time in seconds where the corpus records one, else missing;
- the sessions table adds `user_id` (who the user was: one person, or one simulated profile,
  the unit a calibration resamples), `corpus`, `licence` and `source` (the repository and its
  commit when known), so every row keeps its attribution.

A corpus file that is missing, not JSON or not in the corpus's shape is a `ColabkitError`
naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict

from colabkit.analysis.realism.fingerprints import PERSON, fingerprints
from colabkit.errors import ColabkitError


class CorpusSource(BaseModel):
    """Where a corpus comes from and under which licence; shipped with every table it feeds."""

    model_config = ConfigDict(frozen=True)

    name: str
    repository: str
    licence: str
    attribution: str
    notes: str = ""


class Turn(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Literal["user", "assistant"]
    text: str
    time: float | None = None


class Conversation(BaseModel):
    """One user-assistant conversation from a corpus, with who the user was."""

    model_config = ConfigDict(frozen=True)

    corpus: str
    conversation_id: str
    task_id: str
    user_id: str
    kind: Literal["person", "simulated"]
    simulator: str = PERSON
    assistant: str = "assistant"
    language: str
    turns: tuple[Turn, ...]


def read_json(path: Path, corpus: str) -> Any:
    """A corpus file's JSON, or one clear line naming the file."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ColabkitError(f"{path}: no such {corpus} file") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ColabkitError(f"{path}: not a {corpus} file (not JSON: {exc})") from None


def conversation_tables(conversations: Iterable[Conversation], source: CorpusSource,
                        seat: str = "R") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(events, sessions) of `conversations` in the instrument's format (module docstring)."""
    events: list[dict[str, object]] = []
    sessions: list[dict[str, object]] = []
    for conv in conversations:
        session_id = f"{conv.corpus}:{conv.conversation_id}"
        user_kind = PERSON if conv.kind == PERSON else "model"
        for seq, turn in enumerate(conv.turns):
            user = turn.role == "user"
            events.append({"session_id": session_id, "seq": seq, "phase": "task", "round": seq,
                           "participant": seat if user else "ai", "action": "send_message", "status": "ok",
                           "args_json": json.dumps({"text": turn.text, "to": None}, ensure_ascii=False),
                           "signatory": None, "decision": None, "decision_reason": None,
                           "actor_kind": user_kind if user else "model",
                           "time": float("nan") if turn.time is None else turn.time})
        sessions.append({"session_id": session_id, "task_id": conv.task_id, "variant": conv.corpus, "seed": 0,
                         "briefings_json": "{}",
                         "models_json": json.dumps({"ai": {"model": conv.assistant}, seat: {"model": conv.simulator}}),
                         "humans": seat, "user_id": conv.user_id, "language": conv.language,
                         "corpus": source.name, "licence": source.licence, "source": source.repository})
    event_columns = ["session_id", "seq", "phase", "round", "participant", "action", "status", "args_json",
                     "signatory", "decision", "decision_reason", "actor_kind", "time"]
    session_columns = ["session_id", "task_id", "variant", "seed", "briefings_json", "models_json", "humans",
                       "user_id", "language", "corpus", "licence", "source"]
    return pd.DataFrame(events, columns=event_columns), pd.DataFrame(sessions, columns=session_columns)


def corpus_fingerprints(events: pd.DataFrame, sessions: pd.DataFrame, seat: str = "R") -> pd.DataFrame:
    """`fingerprints` of a corpus's tables, with each row's `user_id` and `language`."""
    prints = fingerprints(events, sessions, seats=(seat,))
    return prints.merge(sessions[["session_id", "user_id", "language"]], on="session_id", how="left")
