"""RecLLMSim (`wzf2000/RecLLMSim`, Apache-2.0): real and LLM-simulated users on the same tasks.

Four planning tasks (travel, skills learning, gifts, recipes), asked of an LLM assistant by:
- `real_human_user/User_<k>/<task in Chinese>/<n>.json`: 291 conversations of 31 people;
- `human_exp_V2/User_<k>/<task in Chinese>/<n>.json`: 1,833 conversations of 115 people (a
  second study, same tasks);
- `LLM_agent_user/<task in English>/<n>.json`: 1,856 conversations of an LLM playing a user
  from one of 100 profiles (`preference_id`); "new travel planning" is travel planning with a
  second set of scenarios, read as the travel task.
Each file holds `history`, a list of `{"role": "user"|"assistant", "content": ...}`. People
wrote Chinese; the simulated users wrote English, and each turn carries a Chinese translation
(`content_zh`). `recllmsim_conversations` reads the Chinese side of both (`language="zh"`)
so the two samples share a language, which leaves one difference that is not the user's:
a simulated user's Chinese is a machine translation. With `language="en"` the simulated
users' English originals are read instead (people have none: their conversations are
skipped). No turn carries a time, so nothing here measures timing.

Who the user was (`user_id`): `real_human_user/User_<k>`, `human_exp_V2/User_<k>`, or
`LLM_agent_user/profile_<preference_id>` (one simulated profile plays many conversations).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pandas as pd

from colabkit.analysis.realism.corpora import (
    Conversation,
    CorpusSource,
    Turn,
    conversation_tables,
    corpus_fingerprints,
    read_json,
)
from colabkit.errors import ColabkitError

RECLLMSIM = CorpusSource(
    name="recllmsim", repository="https://github.com/wzf2000/RecLLMSim", licence="Apache-2.0",
    attribution="RecLLMSim, Copyright the RecLLMSim authors (wzf2000/RecLLMSim), licensed under the Apache "
                "License 2.0; from 'When Synthetic Meets Real: Boosting User Profile Identification in "
                "Task-Oriented Conversations through Agent Simulation'",
    notes="people wrote Chinese; simulated users wrote English, read here in the corpus's Chinese translation")
PEOPLE_PARTS = ("real_human_user", "human_exp_V2")
SIMULATED_PART = "LLM_agent_user"
PARTS = (*PEOPLE_PARTS, SIMULATED_PART)
SIMULATOR = "recllmsim/llm-agent-user"
TASKS = {"旅行规划": "travel planning", "技能学习规划": "skills learning planning", "礼物准备": "preparing gifts",
         "菜谱规划": "recipe planning", "travel planning": "travel planning",
         "new travel planning": "travel planning", "skills learning planning": "skills learning planning",
         "preparing gifts": "preparing gifts", "recipe planning": "recipe planning"}


def _task(folder: Path) -> str:
    if folder.name not in TASKS:
        raise ColabkitError(f"{folder}: not a RecLLMSim task folder (expected one of {sorted(set(TASKS))})")
    return f"recllmsim:{TASKS[folder.name]}"


def _turns(path: Path, data: object, key: str) -> tuple[Turn, ...]:
    history = data.get("history") if isinstance(data, dict) else None
    if not isinstance(history, list) or not all(isinstance(h, dict) and h.get("role") in ("user", "assistant")
                                                and isinstance(h.get(key), str) for h in history):
        raise ColabkitError(f"{path}: not a RecLLMSim conversation (needs a history of user and assistant "
                            f"turns with {key!r})")
    return tuple(Turn(role=h["role"], text=h[key]) for h in history)


def _files(folder: Path) -> Iterator[Path]:
    return iter(sorted(folder.glob("*.json"), key=lambda p: (len(p.stem), p.stem)))


def _people(root: Path, part: str, language: str) -> Iterator[Conversation]:
    if language != "zh":
        return
    for user in sorted((root / part).iterdir()):
        for task in sorted(p for p in user.iterdir() if p.is_dir()):
            for path in _files(task):
                data = read_json(path, "RecLLMSim")
                yield Conversation(corpus="recllmsim", conversation_id=str(path.relative_to(root)),
                                   task_id=_task(task), user_id=f"{part}/{user.name}", kind="person",
                                   assistant=str(data.get("chat_model", "assistant")), language="zh",
                                   turns=_turns(path, data, "content"))


def _simulated(root: Path, language: str) -> Iterator[Conversation]:
    key = "content_zh" if language == "zh" else "content"
    for task in sorted(p for p in (root / SIMULATED_PART).iterdir() if p.is_dir()):
        for path in _files(task):
            data = read_json(path, "RecLLMSim")
            if not isinstance(data, dict) or "preference_id" not in data:
                raise ColabkitError(f"{path}: not a RecLLMSim simulated-user conversation (no preference_id)")
            yield Conversation(corpus="recllmsim", conversation_id=str(path.relative_to(root)), task_id=_task(task),
                               user_id=f"{SIMULATED_PART}/profile_{data['preference_id']}", kind="simulated",
                               simulator=SIMULATOR, language=language, turns=_turns(path, data, key))


def recllmsim_conversations(root: Path | str, parts: Iterable[str] = PARTS, language: str = "zh") -> list[Conversation]:
    """The conversations of `parts` in a local copy of the repository at `root` (module docstring)."""
    root = Path(root)
    wanted = list(parts)
    unknown = [p for p in wanted if p not in PARTS]
    if unknown or language not in ("zh", "en"):
        raise ColabkitError(f"RecLLMSim: unknown part {unknown} or language {language!r} "
                            f"(parts: {', '.join(PARTS)}; languages: zh, en)")
    missing = [p for p in wanted if not (root / p).is_dir()]
    if missing:
        raise ColabkitError(f"{root / missing[0]}: no such folder (a local copy of wzf2000/RecLLMSim has "
                            f"{', '.join(PARTS)})")
    out: list[Conversation] = []
    for part in wanted:
        out += _simulated(root, language) if part == SIMULATED_PART else _people(root, part, language)
    return out


def recllmsim_people(root: Path | str, seats: Iterable[str] = ("D", "R")) -> pd.DataFrame:
    """The fingerprints of RecLLMSim's people (both studies), once per seat in `seats`, to hold
    against the simulators in each seat (`outside_cards`)."""
    prints = corpus_fingerprints(*recllmsim_tables(root, PEOPLE_PARTS))
    return pd.concat([prints.assign(participant=seat) for seat in seats], ignore_index=True)


def recllmsim_tables(root: Path | str, parts: Iterable[str] = PARTS, language: str = "zh",
                     seat: str = "R") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(events, sessions) of `recllmsim_conversations`, attributed to `RECLLMSIM`."""
    return conversation_tables(recllmsim_conversations(root, parts, language), RECLLMSIM, seat)
