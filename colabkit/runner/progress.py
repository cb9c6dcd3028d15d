"""What a batch reports while it runs and when it ends.

One progress bar (tqdm.auto: a widget in Jupyter, text in a terminal) counts sessions
done / failed / cached, with the tokens and cost spent so far, updated on every event so a
slow model still shows movement. Every session this process ran (or failed to run) is
appended to `<results>/runs.jsonl`, one JSON line per attempt, so what happened to a
session across reruns and processes can be read back (`read_journal`).
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any, Literal

import orjson
import pandas as pd
from pydantic import BaseModel

from colabkit.session import Event

JOURNAL = "runs.jsonl"
Status = Literal["done", "failed", "cached", "skipped"]


class SessionOutcome(BaseModel):
    """What became of one session in one batch run."""

    session_id: str
    task_id: str
    variant: str
    seed: int
    status: Status
    """done: ran here and ended normally; failed: ran here and ended in error or raised;
    cached: finished before (or by another process while this one waited); skipped: not
    started, because a provider refused an earlier session of the batch."""
    ran_here: bool
    ended_by: str | None = None
    error: str | None = None
    tokens: int = 0
    cost: float = 0.0


class BatchSummary(BaseModel):
    """All outcomes of one batch run, in grid order."""

    outcomes: list[SessionOutcome]

    def count(self, status: Status) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    def table(self) -> pd.DataFrame:
        columns = list(SessionOutcome.model_fields)
        return pd.DataFrame([o.model_dump() for o in self.outcomes], columns=columns)

    def line(self) -> str:
        tokens = sum(o.tokens for o in self.outcomes)
        cost = sum(o.cost for o in self.outcomes)
        return (f"{len(self.outcomes)} sessions: {self.count('done')} done, {self.count('failed')} failed, "
                f"{self.count('cached')} cached; {tokens} tokens, ${cost:.4f} this run")


class Progress:
    """The live counters behind the bar; safe to call from one event loop."""

    def __init__(self, total: int, *, desc: str, enabled: bool = True) -> None:
        from tqdm.auto import tqdm

        self.counts = {"done": 0, "failed": 0, "cached": 0, "skipped": 0}
        self.tokens, self.cost = 0, 0.0
        self._shown = 0.0
        self.bar = tqdm(total=total, desc=desc, unit="session", disable=not enabled, dynamic_ncols=True)
        self._refresh()

    def on_event(self, event: Event) -> None:
        for call in event.llm_calls:
            self.tokens += call.prompt_tokens + call.completion_tokens
            self.cost += call.cost
        if event.llm_calls and time.monotonic() - self._shown > 1.0:  # live, but not a line per event
            self._refresh()

    def finished(self, outcome: SessionOutcome) -> None:
        self.counts[outcome.status] += 1
        self.bar.update(1)
        self._refresh()

    def _refresh(self) -> None:
        self.bar.set_postfix_str(f"done {self.counts['done']} failed {self.counts['failed']} "
                                 f"cached {self.counts['cached']} | {self.tokens} tok ${self.cost:.4f}",
                                 refresh=False)
        self.bar.refresh()
        self._shown = time.monotonic()

    def close(self) -> None:
        self.bar.close()


def journal(out: Path, outcome: SessionOutcome) -> None:
    """Append one attempt to `<out>/runs.jsonl` (one write with O_APPEND: lines never interleave)."""
    entry: dict[str, Any] = {**outcome.model_dump(), "pid": os.getpid(), "host": socket.gethostname(),
                             "time": time.time()}
    fd = os.open(out / JOURNAL, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
    try:
        os.write(fd, orjson.dumps(entry) + b"\n")
    finally:
        os.close(fd)


def read_journal(out: Path | str) -> pd.DataFrame:
    """Every attempt recorded in `<out>/runs.jsonl` (empty when nothing ran yet)."""
    path = Path(out) / JOURNAL
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines() if line] if path.is_file() else []
    return pd.DataFrame(rows)
