"""Scorers: what a metric needs from a stored session, and how they are found by name.

Inspect AI scores a finished log with `score(log, scorers)`; colabkit does the same with
stored sessions, because prompts and judges change during a study and sessions are the
expensive part. A `Scorer` reads one `SessionContext` (the stored record, events and
workspace snapshot, the task and, for scoring only, its gold) and returns a `ScoreResult`.
It is called once per repeat (`ctx.repeat`; judged questions go through `ctx.verdict`, which
passes the repeat as the sample index) and `combine` folds the repeats into the stored
result. Scorers register under a metric name, which `colabkit score --metrics` selects.
"""

from __future__ import annotations

import statistics
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel

from colabkit.errors import ColabkitError
from colabkit.evaluation.judge import Judge, JudgePrompt, Verdict, prompt_version
from colabkit.evaluation.records import ScoreResult, Value
from colabkit.session import Event
from colabkit.store import SessionRecord
from colabkit.tasks import Gold, Task
from colabkit.workspace import WorkspaceSnapshot

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class SessionContext:
    """Everything a scorer may read about one stored session (read-only)."""

    folder: Path
    record: SessionRecord
    events: tuple[Event, ...]
    snapshot_source: Callable[[], WorkspaceSnapshot]
    """Reads the workspace snapshot on first use of `snapshot`: it is the largest file of a
    session and the rule-based scorers never look at it."""
    task: Task | None
    """None when the session's task is not in the loaded suite (flagged by the runner)."""
    gold: Gold | None
    """The task's gold answer: only scorers ever see it (`TaskSuite.gold_for`)."""
    judge: Judge | None
    repeat: int = 0

    @cached_property
    def snapshot(self) -> WorkspaceSnapshot:
        """The workspace at the end (cells, chat, editor versions), read once."""
        return self.snapshot_source()

    @property
    def session_id(self) -> str:
        return self.record.session_id

    @property
    def hypothesis(self) -> str:
        """The submitted hypothesis (the editor's text at the end)."""
        return self.record.final_hypothesis

    @property
    def delivered(self) -> bool:
        """Co-Gym's delivery: the result editor is not empty at the end."""
        return bool(self.record.final_hypothesis.strip())

    @property
    def task_events(self) -> tuple[Event, ...]:
        """Events of the task phase (the memory build phase excluded, as every metric wants)."""
        return tuple(e for e in self.events if e.phase == "task")

    def for_repeat(self, repeat: int) -> SessionContext:
        return replace(self, repeat=repeat, snapshot_source=lambda: self.snapshot)  # read once for all repeats

    async def verdict(self, prompt: JudgePrompt, fields: Mapping[str, Any], schema: type[T], *,
                      shared: Collection[str] = ()) -> Verdict[T]:
        """Ask the judge for this repeat; a scorer without a judge is a bug, not a missing score."""
        if self.judge is None:
            raise ColabkitError(f"session {self.session_id}: a judged scorer ran without a judge")
        return await self.judge.verdict(prompt, fields, schema, repeat=self.repeat, shared=shared)


class Scorer(ABC):
    """A metric (or a group of columns computed together) over one session.

    Subclasses set `name` (the metric name for `--metrics`), `version` (bump when the
    computation changes), `prompts` (the judge prompts they ask; empty for rule-based
    scorers, which then run once whatever `--repeats` says) and `columns` (the score-table
    columns they fill). The scorer id hashes name, version, prompt versions, judge config,
    repeats and `data_identity` (the content of data files the scorer reads, e.g. C_wf's
    reference graphs), so changing any of them scores again beside the old result, never over it.
    """

    name: ClassVar[str]
    version: ClassVar[str]
    prompts: ClassVar[tuple[JudgePrompt, ...]] = ()
    columns: ClassVar[tuple[str, ...]] = ()
    opt_in: ClassVar[bool] = False
    """Scored only when named (`--metrics`, an experiment's `metrics`), not by default."""
    machinery_columns: ClassVar[tuple[str, ...]] = ()
    """Columns that count a structure's machinery by design (decisions, requests): the variant
    audit leaves them out of a variant's comparison with its Default twin; every other column
    must be equal there."""

    @property
    def uses_judge(self) -> bool:
        return bool(self.prompts)

    @property
    def prompt_version(self) -> str:
        return prompt_version(self.prompts)

    @property
    def data_identity(self) -> str | None:
        """A hash of the data files the scorer's results depend on; None when it reads none."""
        return None

    @abstractmethod
    async def score(self, ctx: SessionContext) -> ScoreResult:
        """Score one session for `ctx.repeat`; judge failures become None values plus flags."""

    def combine(self, results: list[ScoreResult]) -> ScoreResult:
        """Fold repeats into one result: numbers are averaged over the repeats that have
        them, booleans and labels take the majority (a tie is missing), flags and judgements
        are kept from every repeat, gate annotations and details come from repeat 0.
        A value missing in some repeats but not all is flagged."""
        if len(results) == 1:
            return results[0]
        names = list(dict.fromkeys(k for r in results for k in r.values))
        values: dict[str, Value] = {}
        flags = list(dict.fromkeys(f for r in results for f in r.flags))
        for name in names:
            present = [r.values.get(name) for r in results if r.values.get(name) is not None]
            if present and len(present) < len(results):
                flags.append(f"{name}: missing in {len(results) - len(present)} of {len(results)} repeats")
            values[name] = combine_values(present)
        return ScoreResult(values=values, flags=flags,
                           judgements=[j for r in results for j in r.judgements],
                           gate_annotations=results[0].gate_annotations, details=results[0].details,
                           complete=all(r.complete for r in results))


def combine_values(present: list[Value]) -> Value:
    """Mean of numbers, majority of booleans and strings (None on a tie or when empty)."""
    if not present:
        return None
    if all(isinstance(v, bool) for v in present) or all(isinstance(v, str) for v in present):
        ranked = Counter(present).most_common(2)
        return None if len(ranked) > 1 and ranked[0][1] == ranked[1][1] else ranked[0][0]
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return statistics.fmean(float(v) for v in present)  # type: ignore[arg-type]
    return None


_REGISTRY: dict[str, Callable[[], Scorer]] = {}


def register_scorer(factory: Callable[[], Scorer]) -> Callable[[], Scorer]:
    """Class decorator (or call) registering a scorer under its `name`; names are unique."""
    name = factory().name
    if name in _REGISTRY and _REGISTRY[name] is not factory:
        raise ColabkitError(f"scorer {name!r} is registered twice")
    _REGISTRY[name] = factory
    return factory


def registered() -> dict[str, Callable[[], Scorer]]:
    """The scorers registered so far, by name (`evaluation.builtin` loads the shipped ones)."""
    return dict(_REGISTRY)
