"""One pass over a data root that reads every task and collects every problem it meets.

`load_tasks` and `colabkit tasks validate` need the same reading of the files but react
differently: the loader leaves out the tasks a problem concerns and reports it with the
suite, while validate reports every problem. So the scan never raises for per-file problems; it
records each as a `Problem` (one self-contained line naming the file or value) tagged with
the split and task id (or `<folder>/<metadata id>` prefix) it concerns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from colabkit.errors import ColabkitError
from colabkit.tasks.answer_keys import AnswerKey, read_answer_key
from colabkit.tasks.layout import SCHEMAS, Layout, MetadataFile, locate
from colabkit.tasks.metadata import MetadataError, parse_metadata
from colabkit.tasks.model import Gold, Problem, Task

# Kinds that keep the tasks they concern out of a load (the rest of the root still loads);
# validate reports all kinds.
BLOCKING = frozenset({"bad-metadata", "missing-file", "duplicate-id", "bad-answer-key"})


@dataclass(frozen=True)
class Entry:
    """A task as read from disk, with the file it came from and its gold (if any)."""

    task: Task
    gold: Gold | None
    source: MetadataFile


@dataclass
class Scan:
    layout: Layout
    entries: list[Entry] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def scan(root: Path | str) -> Scan:
    """Read every metadata file under `root`; only an unusable root itself raises."""
    layout = locate(root)
    result = Scan(layout)
    keys = {schema: _answer_key(layout, schema, result) for schema in SCHEMAS}
    seen: dict[str, Path] = {}
    for meta in layout.metadata_files():
        try:
            parsed, warnings = parse_metadata(meta)
        except MetadataError as exc:
            result.problems.append(Problem(kind="bad-metadata", message=str(exc), split=meta.split,
                                           scope=meta.id_prefix))
            continue
        result.problems.extend(Problem(kind="odd-metadata", message=w, split=meta.split, scope=meta.id_prefix)
                               for w in warnings)
        for item in parsed:
            task = item.task
            if task.id in seen:
                result.problems.append(Problem(
                    kind="duplicate-id",
                    message=f"task id {task.id} is defined twice: in {seen[task.id]} and in {meta.path}",
                    split=meta.split, scope=task.id))
                continue
            seen[task.id] = meta.path
            for dataset in task.datasets:
                if not dataset.path.is_file():
                    result.problems.append(Problem(
                        kind="missing-file",
                        message=f"dataset file listed in {meta.path} is missing: {dataset.path}",
                        split=meta.split, scope=task.id))
            qid = int(task.id.rsplit("/", 1)[1])
            hypothesis = keys[meta.schema].get((meta.folder, meta.metadata_id, qid))
            hypothesis = hypothesis or item.inline_hypothesis
            gold = Gold(task_id=task.id, hypothesis=hypothesis, workflow=item.workflow) if hypothesis else None
            result.entries.append(Entry(task, gold, meta))
    return result


def _answer_key(layout: Layout, schema: str, result: Scan) -> AnswerKey:
    path = layout.answer_key(schema)
    if path is None:
        return {}
    try:
        return read_answer_key(path)
    except ColabkitError as exc:
        result.problems.append(Problem(kind="bad-answer-key", message=str(exc)))
        return {}
