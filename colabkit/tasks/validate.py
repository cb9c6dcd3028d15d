"""Check a data root before a study spends model budget on it.

Reports, one line each: files that do not parse or have malformed fields, listed data files
that are missing or cannot be read as the table their metadata says they are (every data
file is read, see `datacheck`), broken answer keys, tasks without gold (they could never be
scored), and duplicated questions. Duplicates are warnings, not errors: DiscoveryBench itself ships
archaeology metadata_2 and metadata_26 as the same task (upstream issue #21) and a study may
keep both, but its analysis should know they are one question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from colabkit.tasks.datacheck import check_data
from colabkit.tasks.layout import ANSWER_KEYS, demo_root
from colabkit.tasks.model import Problem
from colabkit.tasks.plain import TASK_FILE, scan_tasks
from colabkit.tasks.scan import Entry, Scan


@dataclass(frozen=True)
class ValidationReport:
    root: Path
    task_count: int
    problems: tuple[Problem, ...]

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "warning")

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        return (f"{self.task_count} tasks in {self.root}: "
                f"{len(self.errors)} errors, {len(self.warnings)} warnings")


def validate_tasks(root: Path | str | None = None) -> ValidationReport:
    """Every problem under `root` (the demo tasks when None); raises only for an unusable root."""
    result = scan_tasks(demo_root() if root is None else root)
    problems = list(result.problems)
    problems += check_data(result.entries)
    problems += _missing_gold(result)
    problems += _duplicates(result.entries)
    return ValidationReport(result.layout.scope, len(result.entries), tuple(problems))


def _missing_gold(result: Scan) -> list[Problem]:
    found = []
    for entry in result.entries:
        if entry.gold is not None:
            continue
        schema = entry.source.schema
        if entry.source.path.name == TASK_FILE:
            found.append(Problem(kind="missing-gold", message=f"no gold answer for task {entry.task.id}: no `answer` "
                                 f"in {entry.source.path}", split=entry.task.split, scope=entry.task.id))
            continue
        key = result.layout.answer_key(schema)
        looked = f"not in {key}" if key else f"no eval/{ANSWER_KEYS[schema]} found"
        found.append(Problem(
            kind="missing-gold",
            message=f"no gold answer for task {entry.task.id}: {looked} and no true_hypothesis in "
            f"{entry.source.path}",
            split=entry.task.split, scope=entry.task.id))
    return found


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.casefold()).strip().rstrip("?.! ")


def _duplicates(entries: list[Entry]) -> list[Problem]:
    """Same question in one dataset folder; or, across metadata files, the same gold answer
    (a near-duplicate question such as archaeology 3 and 12). Queries of one metadata file
    share their gold by design (one hypothesis asked from several angles), so those are fine."""
    found = []
    first_question: dict[tuple[str, str, str], Entry] = {}
    first_gold: dict[tuple[str, str, str], Entry] = {}
    for entry in entries:
        task, src = entry.task, entry.source
        qkey = (task.split, src.folder, _norm(task.query))
        original = first_question.setdefault(qkey, entry)
        if original is not entry:
            found.append(Problem(
                kind="duplicate-question",
                message=f"task {task.id} asks the same question as {original.task.id} "
                f"({src.path.name} and {original.source.path.name})",
                split=task.split, scope=task.id))
            continue
        if entry.gold is None:
            continue
        gkey = (task.split, src.folder, _norm(entry.gold.hypothesis))
        original = first_gold.setdefault(gkey, entry)
        if original is not entry and original.source.path != src.path:
            found.append(Problem(
                kind="same-gold",
                message=f"task {task.id} has the same gold answer as {original.task.id} "
                f"(near-duplicate question; {src.path.name} and {original.source.path.name})",
                split=task.split, scope=task.id))
    return found
