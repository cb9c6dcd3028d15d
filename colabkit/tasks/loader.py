"""`load_tasks`: the one entry point through which every layer gets DiscoveryBench tasks.

Filtering happens before problems are judged, so one broken file elsewhere in a large
checkout does not stop a study that never uses it; but a problem in a task that *was*
asked for (malformed metadata, a listed file missing) stops the load with one line naming
the file, because running a session on such a task would waste a model budget.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from pathlib import Path

from colabkit.errors import ColabkitError
from colabkit.tasks.layout import demo_root
from colabkit.tasks.model import TaskSuite
from colabkit.tasks.scan import BLOCKING, Entry, Problem, scan


def load_tasks(
    root: Path | str | None = None,
    *,
    split: str | None = None,
    domains: Sequence[str] | None = None,
    ids: Sequence[str] | None = None,
) -> TaskSuite:
    """Load the tasks under `root` (the shipped demo tasks when None), optionally filtered.

    - `split`: "real/test", or one part of it ("real", "test") to match several splits.
    - `domains`: a metadata `domain` ("humanities"), a dataset folder ("archaeology"), or a
      synth domain without its `_<n>_<n>` suffix ("ancient-languages"); case-insensitive.
    - `ids`: task ids ("archaeology/3/0") or metadata prefixes ("archaeology/3"); every id
      given must match a task, so a typo is an error rather than a silently smaller study.
    """
    result = scan(demo_root() if root is None else root)
    where = result.layout.scope
    entries = [e for e in result.entries if _split_matches(e.task.split, split)]
    for problem in result.problems:  # files that did not parse: their domain is unknown
        if problem.kind in BLOCKING and _file_concerned(problem, split, ids):
            raise ColabkitError(problem.message)
    if domains:
        wanted = {_norm(d) for d in domains}
        entries = [e for e in entries if wanted & _domain_names(e)]
    if ids:
        entries = _select_ids(entries, ids, where, result.entries)
    selected = {e.task.id for e in entries}
    for problem in result.problems:
        if problem.kind in BLOCKING and problem.scope in selected:
            raise ColabkitError(problem.message)
    if not entries:
        asked = ", ".join(f"{k}={v!r}" for k, v in (("split", split), ("domains", domains))
                          if v) or "no filter"
        raise ColabkitError(f"no task matches {asked} in {where} ({len(result.entries)} tasks there)")
    return TaskSuite(
        root=result.layout.data_root,
        tasks=tuple(e.task for e in entries),
        gold={e.task.id: e.gold for e in entries if e.gold is not None},
    )


def _split_matches(task_split: str, wanted: str | None) -> bool:
    if not wanted:
        return True
    wanted = wanted.strip("/")
    return task_split == wanted or wanted in task_split.split("/")


def _norm(name: str) -> str:
    return re.sub(r"[\s_-]+", " ", name.casefold()).strip()


def _domain_names(entry: Entry) -> set[str]:
    folder = entry.source.folder
    return {_norm(entry.task.domain), _norm(folder), _norm(re.sub(r"_\d+_\d+$", "", folder))}


def _id_matches(task_id: str, wanted: str) -> bool:
    wanted = wanted.strip().strip("/")
    return task_id == wanted or task_id.startswith(wanted + "/")


def _select_ids(entries: list[Entry], ids: Sequence[str], where: Path,
                every: list[Entry]) -> list[Entry]:
    for wanted in ids:
        if not any(_id_matches(e.task.id, wanted) for e in entries):
            near = difflib.get_close_matches(wanted, [e.task.id for e in every], n=5, cutoff=0.5)
            hint = f"; near: {', '.join(near)}" if near else ""
            raise ColabkitError(f"no task matches id {wanted!r} in {where}{hint}")
    return [e for e in entries if any(_id_matches(e.task.id, w) for w in ids)]


def _file_concerned(problem: Problem, split: str | None, ids: Sequence[str] | None) -> bool:
    """Whether a root- or file-level problem touches the request. A metadata file that did not
    parse has no known domain, so it counts unless the split or the ids exclude it."""
    if problem.scope is None:
        return True
    if problem.kind != "bad-metadata" or not _split_matches(problem.split or "", split):
        return False
    return not ids or any(_id_matches(w, problem.scope) or _id_matches(problem.scope, w)
                          for w in ids)
