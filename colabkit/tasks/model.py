"""Task types: what a participant may see, kept apart from what only scoring may see.

The gold hypothesis of a DiscoveryBench task must never reach a participant's prompt. Rather
than trusting every prompt builder to drop a field, the types make the leak impossible: a
`Task` has no gold field at all, and the gold lives in `Gold` objects that only a `TaskSuite`
holds (`TaskSuite.gold_for`). Code that is handed a `Task` cannot reach its answer.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from colabkit.errors import ColabkitError

_VALUE = ConfigDict(frozen=True, extra="forbid")


class Column(BaseModel):
    """One described column of a dataset, as the task's metadata describes it."""

    model_config = _VALUE
    name: str
    description: str


class DatasetInfo(BaseModel):
    """A data file a task may use; `path` is absolute so any layer can open or copy it."""

    model_config = _VALUE
    name: str
    path: Path
    description: str
    columns: tuple[Column, ...]


class Task(BaseModel):
    """The participant-safe view of one (metadata file, query) pair: no gold anywhere in it."""

    model_config = _VALUE
    id: str
    split: str
    domain: str
    query: str
    question_type: str
    datasets: tuple[DatasetInfo, ...]
    domain_knowledge: str
    workflow_tags: tuple[str, ...]
    task_digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    """sha256 of the metadata file's bytes: the task's provenance. The session record keeps
    it so a scorer can check it scores the task the session ran (a data root edited or
    swapped between running and scoring changes it)."""

    @property
    def data_files(self) -> tuple[Path, ...]:
        """The absolute paths of the task's files, in metadata order (what a workspace copies)."""
        return tuple(d.path for d in self.datasets)


class Gold(BaseModel):
    """The answer a task is scored against; only scoring code should ever hold one."""

    model_config = _VALUE
    task_id: str
    hypothesis: str
    workflow: str | None = None


class TaskSuite(BaseModel):
    """The tasks loaded from one data root, with their gold kept on the side for scoring."""

    model_config = _VALUE
    root: Path
    tasks: tuple[Task, ...]
    # repr=False: printing or logging a suite must not spill the answers.
    gold: Mapping[str, Gold] = Field(repr=False)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(t.id for t in self.tasks)

    def get(self, task_id: str) -> Task:
        """The task with this id; an unknown id is a user error that names the nearest ids."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        near = difflib.get_close_matches(task_id, self.ids, n=5, cutoff=0.5)
        hint = f"; near: {', '.join(near)}" if near else f"; {len(self.tasks)} tasks loaded"
        raise ColabkitError(f"unknown task id {task_id!r} in {self.root}{hint}")

    def gold_for(self, task_id: str) -> Gold | None:
        """The gold answer for scoring, or None when the data has none for this task."""
        return self.gold.get(task_id)
