"""The trajectory store: sessions on disk, idempotently, and back as pandas tables.

Layout of a results folder `out/`::

    out/<session id>/events.jsonl    one Event per line (append-only, published atomically)
    out/<session id>/snapshot.json   the workspace at the end: cells, chat, editor versions, files
    out/<session id>/session.json    the SessionRecord, written last: its presence = finished
    out/llm-cache/                   model answers, so a rerun replays instead of recomputing
    out/events.parquet, out/sessions.parquet   columnar export (`export_parquet`)

The session id is the first 16 hex digits of the spec's identity, so the same request always
lands in the same folder and a finished session is never run twice.
"""

from colabkit.store.atomic import atomic_path, atomic_write_bytes, atomic_write_text
from colabkit.store.build import build_session
from colabkit.store.loaders import export_parquet, load_events, load_sessions
from colabkit.store.recorder import (
    EVENTS_FILE,
    SESSION_FILE,
    SNAPSHOT_FILE,
    arecord_session,
    is_finished,
    record_session,
    session_dir,
)
from colabkit.store.records import SessionRecord
from colabkit.store.sink import JsonlEventSink

__all__ = [
    "EVENTS_FILE",
    "SESSION_FILE",
    "SNAPSHOT_FILE",
    "JsonlEventSink",
    "SessionRecord",
    "arecord_session",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_write_text",
    "build_session",
    "export_parquet",
    "is_finished",
    "load_events",
    "load_sessions",
    "record_session",
    "session_dir",
]
