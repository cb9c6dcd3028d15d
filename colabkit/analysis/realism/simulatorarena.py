"""SimulatorArena (`microsoft/SimulatorArena`, MIT): people asking an assistant, with ratings.

The repository's `data/` holds two benchmarking subsets of conversations between crowd workers
and an LLM assistant: `document_creation_annotations_for_benchmarking.json` (51; the user
drafts an email, blog post or story) and `math_tutoring_annotations_redacted_for_benchmarking.json`
(50; the user is a student working a MATH problem, whose text is redacted). Each entry has
`user_queries` and `ai_responses` (alternating, user first), the worker (`workerId`), the
assistant model and the worker's ratings. All are people, writing English; the repository
ships no simulated user's conversation as data (its simulators are code to run), so this
corpus gives a second, English real-user sample: a noise floor on another domain and language.
No turn carries a time.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from colabkit.analysis.realism.corpora import (
    Conversation,
    CorpusSource,
    Turn,
    conversation_tables,
    read_json,
)
from colabkit.errors import ColabkitError

SIMULATORARENA = CorpusSource(
    name="simulatorarena", repository="https://github.com/microsoft/SimulatorArena", licence="MIT",
    attribution="SimulatorArena, Copyright (c) Microsoft Corporation, licensed under the MIT License",
    notes="benchmarking subsets only; math problems are redacted in the public files")
SUBSETS = {"document_creation": "data/document_creation_annotations_for_benchmarking.json",
           "math_tutoring": "data/math_tutoring_annotations_redacted_for_benchmarking.json"}


def _conversation(path: Path, subset: str, index: int, entry: object) -> Conversation:
    ok = isinstance(entry, dict) and isinstance(entry.get("user_queries"), list) \
        and isinstance(entry.get("ai_responses"), list)
    if not ok:
        raise ColabkitError(f"{path}: entry {index} is not a SimulatorArena conversation "
                            f"(needs user_queries and ai_responses lists)")
    assert isinstance(entry, dict)
    turns = []
    for i, query in enumerate(entry["user_queries"]):
        turns.append(Turn(role="user", text=str(query)))
        if i < len(entry["ai_responses"]):
            turns.append(Turn(role="assistant", text=str(entry["ai_responses"][i])))
    topic = entry.get("document_type") or entry.get("type") or "all"
    return Conversation(corpus="simulatorarena", conversation_id=f"{subset}/{index}",
                        task_id=f"simulatorarena:{subset}:{topic}", user_id=f"{subset}/{entry.get('workerId', index)}",
                        kind="person", assistant=str(entry.get("model", "assistant")), language="en",
                        turns=tuple(turns))


def simulatorarena_conversations(root: Path | str, subsets: tuple[str, ...] = tuple(SUBSETS)) -> list[Conversation]:
    """The benchmarking subsets' conversations in a local copy of the repository at `root`."""
    out = []
    for subset in subsets:
        if subset not in SUBSETS:
            raise ColabkitError(f"SimulatorArena: unknown subset {subset!r} (subsets: {', '.join(SUBSETS)})")
        path = Path(root) / SUBSETS[subset]
        data = read_json(path, "SimulatorArena")
        if not isinstance(data, list):
            raise ColabkitError(f"{path}: not a SimulatorArena file (expected a list of conversations)")
        out += [_conversation(path, subset, i, entry) for i, entry in enumerate(data)]
    return out


def simulatorarena_tables(root: Path | str, subsets: tuple[str, ...] = tuple(SUBSETS),
                          seat: str = "R") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(events, sessions) of `simulatorarena_conversations`, attributed to `SIMULATORARENA`."""
    return conversation_tables(simulatorarena_conversations(root, subsets), SIMULATORARENA, seat)
