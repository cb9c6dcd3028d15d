"""The trajectory store: the file format of stored sessions, atomic IO, and pandas loaders.

Layout of a results folder `out/` (see `colabkit.store.layout`)::

    out/<session id>/events.jsonl    one Event per line (append-only, published atomically)
    out/<session id>/snapshot.json   the workspace at the end: cells, chat, editor versions, files
    out/<session id>/session.json    the SessionRecord, written last: its presence = finished
    out/llm-cache/                   model answers, so a rerun replays instead of recomputing
    out/events.parquet, out/sessions.parquet   columnar export (`export_parquet`)

The session id is the first 16 hex digits of the spec's identity, so the same request always
lands in the same folder. Running sessions into this layout (locks, resumption, batches) is
the runner layer's job (`colabkit.runner`).
"""

from colabkit.store.atomic import (
    AtomicBatch,
    atomic_path,
    atomic_write_bytes,
    atomic_write_text,
    fsync_dir,
    remove_stale_temporaries,
)
from colabkit.store.gate_delay import gate_delays, mean_gate_delay
from colabkit.store.layout import (
    CACHE_DIR,
    EVENTS_FILE,
    LOGS_DIR,
    PROMPTS_FILE,
    SESSION_FILE,
    SNAPSHOT_FILE,
    WORK_DIR,
    is_finished,
    session_dir,
)
from colabkit.store.loaders import export_parquet, load_events, load_sessions
from colabkit.store.outcomes import RUN_OUTCOME_COLUMNS, run_outcomes
from colabkit.store.records import SessionRecord
from colabkit.store.sink import JsonlEventSink

__all__ = [
    "CACHE_DIR",
    "EVENTS_FILE",
    "LOGS_DIR",
    "PROMPTS_FILE",
    "RUN_OUTCOME_COLUMNS",
    "SESSION_FILE",
    "SNAPSHOT_FILE",
    "WORK_DIR",
    "AtomicBatch",
    "JsonlEventSink",
    "SessionRecord",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_write_text",
    "export_parquet",
    "fsync_dir",
    "gate_delays",
    "is_finished",
    "load_events",
    "load_sessions",
    "mean_gate_delay",
    "remove_stale_temporaries",
    "run_outcomes",
    "session_dir",
]
