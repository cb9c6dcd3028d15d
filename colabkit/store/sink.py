"""The append-only event log of one session.

Events go to `events.jsonl.part`, one JSON object per line, flushed after every event so a
crashed process loses nothing it already reported. Only `finalise()` (fsync, then an atomic
rename) produces `events.jsonl`; an interrupted run therefore leaves just the `.part` file,
which no loader reads and `record_session` discards before redoing the session.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

from colabkit.session import Event
from colabkit.store.atomic import fsync_dir

PART_SUFFIX = ".part"


class JsonlEventSink:
    """An `EventSink` writing one session's events as JSON lines, finalised atomically.

    The sink also guards the log's invariants (one session id, `seq` contiguous from 0),
    because downstream analysis joins and orders events by them: a gap or duplicate is a
    bug upstream and is better raised at the point of writing than discovered in a table.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.part_path = self.path.with_name(self.path.name + PART_SUFFIX)
        # "x": never append to a stale log left by someone else.
        self._fh = open(self.part_path, "x", encoding="utf-8")
        self.count = 0
        self.session_id: str | None = None

    def emit(self, event: Event) -> None:
        """Append one event and flush it to the operating system."""
        if self._fh.closed:
            raise ValueError(f"event log {self.part_path} is closed; cannot emit seq {event.seq}")
        if self.session_id is None:
            self.session_id = event.session_id
        if event.session_id != self.session_id:
            raise ValueError(
                f"event seq {event.seq} belongs to session {event.session_id}, "
                f"but {self.part_path} logs session {self.session_id}"
            )
        if event.seq != self.count:
            raise ValueError(f"event seq {event.seq} out of order in {self.part_path}: expected {self.count}")
        self._fh.write(event.model_dump_json() + "\n")
        self._fh.flush()
        self.count += 1

    def finalise(self) -> Path:
        """Make the log durable and publish it as `events.jsonl`; return that path."""
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
        os.replace(self.part_path, self.path)
        fsync_dir(self.path.parent)
        return self.path

    def close(self) -> None:
        """Close without publishing: what an interrupted run leaves behind is only `.part`."""
        self._fh.close()

    def __enter__(self) -> JsonlEventSink:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
