"""Where scores live: `<session>/scores/<scorer id>.json`, written atomically, found by id.

The scorer id hashes what decides a score (scorer name and version, its prompt versions,
the judge's model config and the number of repeats), so re-scoring with a new judge or a
changed prompt writes a new file beside the old one and never touches a session; asking for
the same scoring twice finds the file and does nothing. Reading a session back for scoring
(`load_context`) is here too, so the runner and notebooks build contexts the same way.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

from colabkit.errors import ColabkitError, one_line
from colabkit.evaluation.judge import Judge, answer_bounds
from colabkit.evaluation.records import ScoreFile
from colabkit.evaluation.scorer import Scorer, SessionContext
from colabkit.hashing import sha256_hex
from colabkit.llm import ModelConfig
from colabkit.session import Event
from colabkit.store import (
    EVENTS_FILE,
    SESSION_FILE,
    SNAPSHOT_FILE,
    AtomicBatch,
    SessionRecord,
    atomic_write_text,
    fsync_dir,
)
from colabkit.tasks import TaskSuite
from colabkit.workspace import WorkspaceSnapshot

SCORES_DIR = "scores"
_ID_CHARS = 16


def scorer_id(scorer: Scorer, judge: ModelConfig | None, repeats: int) -> str:
    """The id naming a scorer's files: hash of everything that decides its results.

    A rule-based scorer ignores the judge and repeats (it asks nothing and runs once), so
    switching judges does not re-score it.
    """
    judged = scorer.uses_judge
    identity: dict[str, Any] = {
        "name": scorer.name, "version": scorer.version, "prompts": scorer.prompt_version,
        "judge": judge.output_identity() if judged and judge is not None else None,
        "repeats": repeats if judged else 1,
    }
    bounds = answer_bounds(judge) if judged and judge is not None else None
    if bounds is not None:  # what the judge may write decides its answers: a capable judge's ids stay
        identity["answer_bounds"] = bounds._asdict()
    if scorer.data_identity is not None:  # only scorers that read data files: others keep their ids
        identity["data"] = scorer.data_identity
    return sha256_hex(identity)[:_ID_CHARS]


def score_path(session_folder: Path, scorer_id_: str) -> Path:
    return session_folder / SCORES_DIR / f"{scorer_id_}.json"


def read_score(path: Path) -> ScoreFile | None:
    """The stored score at `path`, or None when absent; a damaged file is a one-line error."""
    if not path.is_file():
        return None
    try:
        return ScoreFile.model_validate_json(path.read_bytes())
    except ValueError as exc:
        raise ColabkitError(f"unreadable score file {path}: {one_line(exc)}") from None


def write_score(session_folder: Path, score: ScoreFile, batch: AtomicBatch | None = None) -> Path:
    """Store `score` atomically under its scorer id (replacing an incomplete earlier try);
    with `batch`, as one of its writes (in place once the batch flushes)."""
    path = score_path(session_folder, score.scorer_id)
    try:
        path.parent.mkdir()
    except FileExistsError:
        pass
    else:  # the new scores/ folder's own entry must be durable too
        if batch is None:
            fsync_dir(session_folder)
        else:
            batch.sync_folder(session_folder)
    text = score.model_dump_json(indent=1)
    return atomic_write_text(path, text) if batch is None else batch.write_text(path, text)


def stored_scores(session_folder: Path) -> list[ScoreFile]:
    """Every score file of a session (any scorer, judge or version), oldest first."""
    folder = session_folder / SCORES_DIR
    try:
        with os.scandir(folder) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(".json"))
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = [read_score(folder / name) for name in names]
    return sorted((s for s in found if s is not None), key=lambda s: s.scored_at)


def load_context(session_folder: Path, suite: TaskSuite | None, judge: Judge | None) -> SessionContext:
    """A scorer's view of a finished session folder (its task and gold from `suite`); the
    snapshot is read when a scorer first asks for it."""
    try:
        record = SessionRecord.model_validate_json((session_folder / SESSION_FILE).read_bytes())
        events = tuple(Event.model_validate_json(line) for line in
                       (session_folder / EVENTS_FILE).read_bytes().splitlines() if line.strip())
    except (OSError, ValueError) as exc:
        raise _unreadable(session_folder, exc) from None
    task = gold = None
    if suite is not None and record.task_id in suite.ids:
        task = suite.get(record.task_id)
        gold = suite.gold_for(record.task_id)
    return SessionContext(folder=session_folder, record=record, events=events,
                          snapshot_source=partial(read_snapshot, session_folder), task=task, gold=gold, judge=judge)


def read_snapshot(session_folder: Path) -> WorkspaceSnapshot:
    """The stored workspace snapshot; an unreadable one is a one-line error naming the folder
    (a scorer that needs it then fails, flagged and incomplete, and the others still score)."""
    try:
        return WorkspaceSnapshot.model_validate_json((session_folder / SNAPSHOT_FILE).read_bytes())
    except (OSError, ValueError) as exc:
        raise _unreadable(session_folder, exc) from None


def _unreadable(session_folder: Path, exc: Exception) -> ColabkitError:
    return ColabkitError(f"cannot read stored session {session_folder}: {one_line(exc)}")


def finished_sessions(results: Path) -> list[Path]:
    """Folders of finished sessions directly under `results`, sorted by session id."""
    if not results.is_dir():
        raise ColabkitError(f"results folder not found: {results}")
    with os.scandir(results) as entries:  # the entry's type comes with the listing: one stat less per session
        names = sorted(e.name for e in entries if not e.name.startswith(".") and e.is_dir()
                       and os.path.isfile(os.path.join(e.path, SESSION_FILE)))
    return [results / name for name in names]
