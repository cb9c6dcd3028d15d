"""What a scoring job's judge paid, appended as it goes to `<results>/judge-runs.jsonl`.

`colabkit batch` runs the judge in other processes (the score and annotate_gates notebooks)
and reports its spend apart from the sessions', live and at the end, so the job leaves its
spend where the batch can read it: one JSON line per stretch of new judge calls (`Spend`
of the gateway's records since the last line), written with one O_APPEND write so lines of
concurrent jobs never interleave. The lines of one job add up to `ScoringReport.spend`.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import orjson

from colabkit.llm import Gateway, Spend

JUDGE_JOURNAL = "judge-runs.jsonl"


class JudgeSpendLog:
    """Appends the spend of `gateway`'s calls made since this log was created."""

    def __init__(self, results: Path, gateway: Gateway, job: str) -> None:
        self.path = results / JUDGE_JOURNAL
        self.gateway = gateway
        self.job = job
        self.start = self.seen = len(gateway.records)

    def flush(self) -> None:
        """Write one line for the calls since the last flush (none: nothing written)."""
        new = self.gateway.records[self.seen:]
        if not new:
            return
        self.seen += len(new)
        entry = {"time": time.time(), "pid": os.getpid(), "host": socket.gethostname(), "job": self.job,
                 "spend": Spend.of(new).model_dump()}
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        try:
            os.write(fd, orjson.dumps(entry) + b"\n")
        finally:
            os.close(fd)

    def total(self) -> Spend:
        """Everything this job's judge used, flushed or not."""
        return Spend.of(self.gateway.records[self.start:])
