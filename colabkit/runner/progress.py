"""What a batch reports while it runs and when it ends.

One progress bar (tqdm.auto: a widget in Jupyter, text in a terminal) counts sessions
done / failed / cached, with what was paid so far (`Spend`: paid cost and tokens, the
provider's cached share, the suite's replays apart), updated on every event so a slow model
still shows movement. In a notebook the bar is displayed with a display id and updated once
more when it closes, so a rendered notebook (papermill stores what was last sent) shows its
final state, not its first. Every session this process ran (or failed to run) is
appended to `<results>/runs.jsonl`, one JSON line per attempt, so what happened to a
session across reruns and processes can be read back (`read_journal`).
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import Any, Literal

import orjson
import pandas as pd
from pydantic import BaseModel, Field

from colabkit.llm import Spend
from colabkit.session import Event
from colabkit.store import run_outcomes

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
    ai_steps: int | None = None
    """The AI agent's task-phase steps (None: not run, or no record)."""
    expired_requests: int | None = None
    """Requests (and memory updates) still open after the closing pass."""
    ai_turns: int | None = None
    """The AI agent's task-phase turns, its waits included (what its budget counts)."""
    gate_delay: float | None = None
    """The mean of the AI's turns from a held action's proposal to its effect (`colabkit.store.gate_delays`;
    None: nothing held took effect)."""
    error: str | None = None
    tokens: int = 0
    spend: Spend = Field(default_factory=Spend)
    """What this run paid for the session's calls, its suite replays apart."""


class BatchSummary(BaseModel):
    """All outcomes of one batch run, in grid order."""

    outcomes: list[SessionOutcome]

    def count(self, status: Status) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    def table(self) -> pd.DataFrame:
        columns = [c for c in SessionOutcome.model_fields if c != "spend"]
        return pd.DataFrame([{**o.model_dump(exclude={"spend"}), "paid_cost": o.spend.paid_cost,
                              "suite_replays": o.spend.suite_replays} for o in self.outcomes],
                            columns=[*columns, "paid_cost", "suite_replays"])

    def by_variant(self) -> pd.DataFrame:
        """Per variant: the AI's turns (waits included) and steps used (mean, min, max), the endings,
        the expired requests and the mean gate delay of its sessions with a record
        (`colabkit.store.run_outcomes`)."""
        ended = self.table().dropna(subset=["ended_by"])
        return run_outcomes(ended)

    def report(self) -> str:
        """`line()` and the per-variant outcomes, as the batch command prints them."""
        table = self.by_variant()
        if table.empty:
            return self.line()
        return self.line() + "\n" + table.to_string(index=False, float_format=lambda x: f"{x:.1f}")

    def spend(self) -> Spend:
        return sum((o.spend for o in self.outcomes), Spend())

    def line(self) -> str:
        return (f"{len(self.outcomes)} sessions: {self.count('done')} done, {self.count('failed')} failed, "
                f"{self.count('cached')} cached; this run: {self.spend().short()}")


class Progress:
    """The live counters behind the bar; safe to call from one event loop."""

    def __init__(self, total: int, *, desc: str, enabled: bool = True) -> None:
        self.counts = {"done": 0, "failed": 0, "cached": 0, "skipped": 0}
        self.spend = Spend()
        self._shown = 0.0
        self.bar, self._handle = progress_bar(total, desc=desc, unit="session", enabled=enabled)
        self._refresh()

    def on_event(self, event: Event) -> None:
        if event.llm_calls:
            self.spend = self.spend + Spend.of(event.llm_calls)
            if time.monotonic() - self._shown > 1.0:  # live, but not a line per event
                self._refresh()

    def finished(self, outcome: SessionOutcome) -> None:
        self.counts[outcome.status] += 1
        self.bar.update(1)
        self._refresh()

    def _refresh(self) -> None:
        self.bar.set_postfix_str(f"done {self.counts['done']} failed {self.counts['failed']} "
                                 f"cached {self.counts['cached']} | {self.spend.short()}", refresh=False)
        self.bar.refresh()
        self._shown = time.monotonic()

    def close(self) -> None:
        close_bar(self.bar, self._handle)


LINE_EVERY_S = 30.0
"""How often a progress line is written where output is not a terminal (`LineBar`)."""


class LineBar:
    """A progress bar for output that is not a terminal (a log file, a pipe, CI): a plain
    line (`desc: n/total unit, postfix`) when something changed and `LINE_EVERY_S` passed,
    and one at the end. tqdm there redraws with carriage returns on every tick: a batch's
    log filled with 58 KB of them. The same calls as the tqdm bar its callers use."""

    def __init__(self, total: int, *, desc: str, unit: str, file: Any = None) -> None:
        self.total, self.desc, self.unit, self.n = total, desc, unit, 0
        self.file = file
        self.postfix = ""
        self._written = ""
        self._at = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.n += n
        self.refresh(final=False)

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self.postfix = text
        if refresh:
            self.refresh(final=False)

    def refresh(self, final: bool = False) -> None:
        line = f"{self.desc}: {self.n}/{self.total} {self.unit}" + (f", {self.postfix}" if self.postfix else "")
        if line == self._written or not (final or time.monotonic() - self._at >= LINE_EVERY_S):
            return
        print(line, file=self.file or sys.stderr, flush=True)
        self._written, self._at = line, time.monotonic()

    def close(self) -> None:
        self.refresh(final=True)


def progress_bar(total: int, *, desc: str, unit: str, enabled: bool = True) -> tuple[Any, Any]:
    """(a tqdm.auto bar, the display handle of its notebook widget or None); where stderr is
    not a terminal (and not a notebook), a `LineBar`, which writes no carriage returns.

    tqdm's notebook widget shows its text form (what a rendered notebook keeps) as it was
    when first displayed; displaying it under a display id lets `close_bar` send the final
    state once more.
    """
    from tqdm.auto import tqdm

    notebook = enabled and any(cls.__module__ == "tqdm.notebook" for cls in tqdm.__mro__)
    if enabled and not notebook and not sys.stderr.isatty():
        return LineBar(total, desc=desc, unit=unit), None
    if not notebook:
        return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, dynamic_ncols=True), None
    from IPython.display import display

    bar = tqdm(total=total, desc=desc, unit=unit, display=False)
    return bar, display(bar.container, display_id=True)


def close_bar(bar: Any, handle: Any) -> None:
    """Close the bar; in a notebook, send its final state to its display once more."""
    if handle is not None:
        bar.refresh()
        bar.close()
        handle.update(bar.container)
    else:
        bar.close()


def journal(out: Path, outcome: SessionOutcome) -> None:
    """Append one attempt to `<out>/runs.jsonl` (one write with O_APPEND: lines never interleave)."""
    entry: dict[str, Any] = {**outcome.model_dump(), "pid": os.getpid(), "host": socket.gethostname(),
                             "time": time.time()}  # `spend` nested: read_journal flattens it
    fd = os.open(out / JOURNAL, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
    try:
        os.write(fd, orjson.dumps(entry) + b"\n")
    finally:
        os.close(fd)


def read_journal(out: Path | str, name: str = JOURNAL) -> pd.DataFrame:
    """Every attempt recorded in `<out>/runs.jsonl` (or journal `name`; empty when nothing ran yet).

    The spend of each attempt is flat, in `spend.<field>` columns (`Spend`'s fields; 0 for
    lines written before they existed, whose `cost` counted replays as paid).
    """
    path = Path(out) / name
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines() if line] if path.is_file() else []
    df = pd.json_normalize(rows) if rows else pd.DataFrame()
    for name in Spend.model_fields:
        column = f"spend.{name}"
        df[column] = df[column].fillna(0) if column in df else 0
    return df


def journal_spend(rows: pd.DataFrame) -> Spend:
    """The sum of the journal rows' spend."""
    if not len(rows):
        return Spend()
    return Spend(**{name: rows[f"spend.{name}"].sum().item() for name in Spend.model_fields})
