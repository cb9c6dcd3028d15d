"""Your own tasks: a plain folder per task, a `task.yaml` beside its data files.

A lab's own data set with a question and a reference answer should not need dressing up as
DiscoveryBench metadata. A plain task folder holds its data files and one `task.yaml`:

    query: Across US states, what is the violent crime rate associated with?
    answer: The violent crime rate rises with the share of single-parent households ...
    licence: Public domain (statsmodels' statecrime data set)
    domain: sociology                  # optional (default: the top folder's name)
    domain_knowledge: ...              # optional: what the Researcher privately knows
    workflow_tags: [regression]        # optional
    question_type: relationship        # optional
    workflow: ...                      # optional: the reference workflow (gold, like answer)
    datasets:
      - file: statecrime.csv           # inside the task folder
        description: one row per state
        columns: {violent: "violent crimes per 100,000 people", ...}

A data root is one task folder or a folder of them (found at any depth, by their
`task.yaml`); the task id is the folder's path under the root (`us_state_crime`). It loads
through the same `load_tasks` as DiscoveryBench, into the same participant-safe `Task` and the
scoring-only `Gold`: `answer` and `workflow` reach `TaskSuite.gold` and nothing else, and the
workspace copies only the listed data files, which must lie inside the task folder and never
be the `task.yaml` itself. Problems are the scan's one-line `Problem`s naming the file and
field, so `colabkit tasks validate` reports them like DiscoveryBench's.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from colabkit.hashing import sha256_bytes
from colabkit.tasks.layout import Layout, MetadataFile
from colabkit.tasks.model import Column, DatasetInfo, Gold, Problem, Task
from colabkit.tasks.scan import Entry, Scan, scan
from colabkit.tasks.table import is_table_name

TASK_FILE = "task.yaml"
PLAIN_SPLIT = "plain"


class PlainDataset(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str = Field(min_length=1)
    description: str = ""
    columns: dict[str, str] = Field(default_factory=dict)


class PlainTask(BaseModel):
    """The fields of a `task.yaml` (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str = Field(min_length=1)
    answer: str | None = None
    licence: str = Field(min_length=1)
    domain: str | None = None
    domain_knowledge: str = ""
    workflow_tags: tuple[str, ...] = ()
    question_type: str = ""
    workflow: str | None = None
    split: str = PLAIN_SPLIT
    datasets: tuple[PlainDataset, ...] = Field(min_length=1)


def scan_tasks(root: Path | str) -> Scan:
    """The scan of a data root in either format: plain task folders, else DiscoveryBench."""
    path = Path(root).expanduser()
    return scan_plain(path) if is_plain_root(path) else scan(path)


def is_plain_root(root: Path) -> bool:
    """Whether `root` is a task folder or holds some (and is no DiscoveryBench folder)."""
    if not root.is_dir() or any((root / s).is_dir() for s in ("real", "synth", "discoverybench")):
        return False
    return (root / TASK_FILE).is_file() or any(root.rglob(TASK_FILE))


def scan_plain(root: Path) -> Scan:
    """Read every `task.yaml` under `root` into entries and one-line problems."""
    root = root.resolve()
    single = (root / TASK_FILE).is_file()
    result = Scan(Layout(data_root=root.parent if single else root, scope=root, eval_dir=None))
    for path in sorted([root / TASK_FILE] if single else root.rglob(TASK_FILE)):
        folder = path.parent
        task_id = folder.name if single else folder.relative_to(root).as_posix()
        source = MetadataFile(path, PLAIN_SPLIT, task_id.split("/")[0], 0)
        entry, problems = _read(path, task_id, source)
        result.problems.extend(problems)
        if entry is not None:
            result.entries.append(entry)
    return result


def _read(path: Path, task_id: str, source: MetadataFile) -> tuple[Entry | None, list[Problem]]:
    def problem(kind: str, message: str, split: str = PLAIN_SPLIT) -> Problem:
        return Problem(kind=kind, message=message, split=split, scope=task_id)

    raw_bytes = path.read_bytes()
    try:
        raw = yaml.safe_load(raw_bytes.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        return None, [problem("bad-metadata", f"malformed task file {path}: {' '.join(str(exc).split())}")]
    if not isinstance(raw, dict):
        return None, [problem("bad-metadata", f"malformed task file {path}: expected a mapping of fields")]
    try:
        plain = PlainTask.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(part) for part in err["loc"]) or "(top level)"
        return None, [problem("bad-metadata", f"malformed task file {path}: {where}: {err['msg']}")]
    folder, problems, datasets = path.parent, [], []
    for i, ds in enumerate(plain.datasets):
        file = (folder / ds.file).resolve()
        if folder.resolve() not in file.parents or file.name == TASK_FILE:
            return None, [problem("bad-metadata", f"malformed task file {path}: datasets.{i}.file: {ds.file!r} must be "
                                  f"a data file inside {folder} (never {TASK_FILE}, which holds the answer)",
                                  plain.split)]
        if not file.is_file():
            problems.append(problem("missing-file", f"dataset file listed in {path} is missing: {file}", plain.split))
        datasets.append(DatasetInfo(name=Path(ds.file).name, path=file, description=ds.description,
                                    columns=tuple(Column(name=n, description=d) for n, d in ds.columns.items()),
                                    kind="table" if is_table_name(ds.file) else "file"))
    task = Task(id=task_id, split=plain.split, domain=plain.domain or source.folder, query=plain.query.strip(),
                question_type=plain.question_type, datasets=tuple(datasets),
                domain_knowledge=plain.domain_knowledge.strip(), workflow_tags=plain.workflow_tags,
                task_digest=sha256_bytes(raw_bytes))
    answer = (plain.answer or "").strip()
    gold = Gold(task_id=task_id, hypothesis=answer, workflow=plain.workflow) if answer else None
    return Entry(task, gold, MetadataFile(path, plain.split, source.folder, 0)), problems
