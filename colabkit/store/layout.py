"""Where a session lives on disk and what "finished" means: the store's file format.

Layout of a results folder `out/`::

    out/<session id>/events.jsonl    the event log (only `events.jsonl.part` while running)
    out/<session id>/snapshot.json   the workspace at the end
    out/<session id>/session.json    the SessionRecord, written last: its presence = finished
    out/<session id>/prompts.jsonl   the rendered prompts, only when asked for (`log_prompts`)
    out/<session id>/logs/           kernel, workspace and host logs, kept only when the session
                                     failed or its kernel needed a second start (`LOGS_DIR`)
    out/llm-cache/                   model answers, so a rerun replays instead of recomputing
    out/.work/                       private work area of running sessions (never data)

Names starting with a dot are never sessions, so loaders skip `.work` and temporary files.
"""

from __future__ import annotations

from pathlib import Path

from colabkit.session import SessionSpec

SESSION_FILE = "session.json"
EVENTS_FILE = "events.jsonl"
SNAPSHOT_FILE = "snapshot.json"
PROMPTS_FILE = "prompts.jsonl"
CACHE_DIR = "llm-cache"
WORK_DIR = ".work"
LOGS_DIR = "logs"


def session_dir(spec: SessionSpec, out: Path | str) -> Path:
    """Where `spec`'s session is (or will be) stored under `out`."""
    return Path(out) / spec.session_id


def is_finished(folder: Path) -> bool:
    """A session folder is finished exactly when its record exists (it is written last)."""
    return (folder / SESSION_FILE).is_file()
