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
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from colabkit.errors import ColabkitError

_VALUE = ConfigDict(frozen=True, extra="forbid")


class Column(BaseModel):
    """One described column of a dataset, as the task's metadata describes it."""

    model_config = _VALUE
    name: str
    description: str


class DatasetInfo(BaseModel):
    """A data file a task may use; `path` is absolute so any layer can open or copy it.

    `kind` is "table" for the formats `read_table` reads (.csv, .tsv, .tab, .dta) and "file"
    for anything else a task ships (a Newick tree as `.txt`, say): such a file is still
    copied into the workspace, and the briefing says it is not a table.
    """

    model_config = _VALUE
    name: str
    path: Path
    description: str
    columns: tuple[Column, ...]
    kind: Literal["table", "file"] = "table"


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


class Problem(BaseModel):
    """One finding about the data, printable as one line naming the file or value.

    `scope` is the task id it concerns, or `<folder>/<metadata id>` for a whole metadata
    file, or None for the whole root (an answer key); `split` is None for the root too.
    """

    model_config = _VALUE
    kind: str
    message: str
    split: str | None = None
    scope: str | None = None

    @property
    def severity(self) -> str:
        return "warning" if self.kind in WARNING_KINDS else "error"

    def line(self) -> str:
        return f"{self.severity}: {self.message}"

    def concerns(self, task_id: str) -> bool:
        """Whether this problem is about `task_id` (its own id or its metadata file)."""
        return self.scope is not None and (task_id == self.scope or task_id.startswith(self.scope + "/"))


# Findings that leave a task usable: it loads, and the line tells the user what was odd.
WARNING_KINDS = frozenset({"duplicate-question", "same-gold", "odd-metadata", "column-mismatch"})


class TaskSuite(BaseModel):
    """The tasks loaded from one data root, with their gold kept on the side for scoring.

    `problems` are what the load met within the request: errors name tasks that did not
    load (every other task did), warnings tasks that loaded although something was odd.
    """

    model_config = _VALUE
    root: Path
    tasks: tuple[Task, ...]
    # repr=False: printing or logging a suite must not spill the answers.
    gold: Mapping[str, Gold] = Field(repr=False)
    problems: tuple[Problem, ...] = ()

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(t.id for t in self.tasks)

    @property
    def errors(self) -> tuple[Problem, ...]:
        """Why some tasks of the request did not load (one line each)."""
        return tuple(p for p in self.problems if p.severity == "error")

    def get(self, task_id: str) -> Task:
        """The task with this id; a task that did not load raises its own one-line problem,
        an unknown id a user error that names the nearest ids."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        for problem in self.errors:
            if problem.concerns(task_id):
                raise ColabkitError(problem.message)
        near = difflib.get_close_matches(task_id, self.ids, n=5, cutoff=0.5)
        hint = f"; near: {', '.join(near)}" if near else f"; {len(self.tasks)} tasks loaded"
        raise ColabkitError(f"unknown task id {task_id!r} in {self.root}{hint}")

    def gold_for(self, task_id: str) -> Gold | None:
        """The gold answer for scoring, or None when the data has none for this task."""
        return self.gold.get(task_id)
