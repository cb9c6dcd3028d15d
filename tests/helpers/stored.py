"""Finished sessions written straight to a results folder, for scoring tests.

Scoring reads only what the store wrote (`session.json`, `events.jsonl`, `snapshot.json`),
so a test can lay down the files of a finished session with a chosen hypothesis without
running one. The record is a real `SessionRecord` (validated), written with the store's
atomic writes; `colabkit run` sessions are used by the end-to-end test.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from colabkit.session import SessionSpec
from colabkit.session.events import EndedBy
from colabkit.session.totals import session_totals
from colabkit.store import SessionRecord, atomic_write_text
from colabkit.store.records import resolved_models
from colabkit.tasks import TaskSuite, load_tasks
from colabkit.team import variant
from colabkit.workspace import EditorVersion, IsolationReport, Limits, WorkspaceSnapshot


def store_session(results: Path, task_id: str, hypothesis: str, *, variant_name: str = "single",
                  seed: int = 0, task_digest: str | None = None, suite: TaskSuite | None = None,
                  ended_by: EndedBy = "finish") -> Path:
    """Write a finished session whose editor ends with `hypothesis`; return its folder.

    `task_digest` overrides the task's metadata digest (a session that ran on other metadata);
    `suite` is where the task comes from (default: the demo tasks)."""
    spec = SessionSpec(task_id=task_id, variant=variant(variant_name), seed=seed)
    folder = results / spec.session_id
    folder.mkdir(parents=True)
    isolation = IsolationReport(level="none", network_isolated=False, data_read_only=True, env_allowlisted=True)
    versions = (EditorVersion(index=0, author="ai", text=hypothesis, time=1.0),) if hypothesis else ()
    snapshot = WorkspaceSnapshot(isolation=isolation, limits=Limits(), data_files=(), cells=(), messages=(),
                                 editor_versions=versions, events=(), files=())
    now = datetime.now(UTC)
    record = SessionRecord(
        session_id=spec.session_id, spec_identity=spec.identity(), task_id=task_id, seed=seed,
        variant_hash=spec.variant.identity(), spec=spec, models=resolved_models(spec), memory=None,
        task_digest=task_digest or (suite or load_tasks()).get(task_id).task_digest, briefings={}, persona_versions={},
        memory_digest=None, final_hypothesis=hypothesis, ended_by=ended_by, n_events=0,
        totals=session_totals([], spec.settings, {p: "ai" if p == "ai" else "human" for p in spec.participants},
                              rounds=0),
        isolation=isolation, isolation_level="none", package_version="test", started=now, finished=now)
    atomic_write_text(folder / "events.jsonl", "")
    atomic_write_text(folder / "snapshot.json", snapshot.model_dump_json())
    atomic_write_text(folder / "session.json", record.model_dump_json())
    return folder
