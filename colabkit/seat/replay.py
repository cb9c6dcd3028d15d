"""Replay a stored session with a person in it, offline, and check it gives the same events.

The person's answers (and each step's `PersonStep`: timings, invalid attempts, timeouts) are
in the results' response cache, keyed like model answers; the models' answers are there too.
Replaying runs the session again on a fresh kernel with every seat answered from the cache:
the person seats by a `PersonSeat` without a desk (a missing answer is refused, never asked),
the others through the gateway. Nothing is sent anywhere: a replay needs no person, no
network and no key.

"Identical" is `replay_view`: the events without what a replay cannot repeat by design
(wall-clock `time`, and of each model call its latency, whether it was a cache hit and how
many transport attempts it took).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from colabkit.llm import Gateway
from colabkit.session import Event, ListSink, SessionSpec, comparable, run_session
from colabkit.session.seats.person import is_person, seat_terms
from colabkit.session.seats.policy import PersonSeat, Seat
from colabkit.store import CACHE_DIR, EVENTS_FILE, SESSION_FILE
from colabkit.tasks import Task, load_tasks


def replay_view(events: list[Event]) -> list[dict[str, Any]]:
    """The events as `comparable` gives them, less what a replay changes in each call by nature:
    that the suite's cache answered it (`suite_replay`), what this run paid for it (nothing, the
    original cost moving to `replayed_cost`) and its attempts."""
    rows = comparable(events)
    for row in rows:
        for call in row["llm_calls"]:
            for key in ("suite_replay", "cost", "replayed_cost", "attempts"):
                call.pop(key)
    return rows


@dataclass(frozen=True)
class Replay:
    stored: list[Event]
    replayed: list[Event]

    @property
    def identical(self) -> bool:
        return replay_view(self.stored) == replay_view(self.replayed)


def stored_events(folder: Path) -> list[Event]:
    return [Event.model_validate_json(line) for line in (folder / EVENTS_FILE).read_text().splitlines() if line]


async def replay_session(folder: Path | str, *, task: Task | None = None,
                         data_root: Path | str | None = None) -> Replay:
    """Run the session stored in `folder` again from its cache; return both event lists."""
    folder = Path(folder)
    record = json.loads((folder / SESSION_FILE).read_text())
    spec = SessionSpec.model_validate(record["spec"])
    task = task or load_tasks(data_root).get(spec.task_id)
    seats: dict[str, Seat] = {pid: PersonSeat(seat_terms(spec.model_for(pid)))
                              for pid in spec.variant.team if is_person(spec.model_for(pid))}
    gateway = Gateway(cache_dir=folder.parent / CACHE_DIR)
    sink = ListSink()
    try:
        with tempfile.TemporaryDirectory(prefix="colabkit-replay-") as work:
            await run_session(spec, task, gateway=gateway, sink=sink, workdir_root=Path(work), seats=seats)
    finally:
        gateway.close()
    return Replay(stored=stored_events(folder), replayed=sink.events)
