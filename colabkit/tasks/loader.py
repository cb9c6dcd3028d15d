"""`load_tasks`: the one entry point through which every layer gets DiscoveryBench tasks.

One odd file must never block the others: a DiscoveryBench checkout has a thousand tasks
over many domains, and a researcher filtering for one domain, or listing them all, needs
every task that loads. So a problem in a task (malformed metadata, a listed file missing,
an id defined twice) leaves that task out and travels with the suite as a one-line
`Problem` naming the file (`TaskSuite.problems`); `TaskSuite.get` on that task raises the
same line, so a session is never started on it. Only three things stop a load: a
request that names a task explicitly (`ids`) whose task did not load, since a silently
smaller study is worse than an error; a request none of whose tasks loads (the first
problem is raised); and a broken answer key, which concerns every task.
Filtering happens before problems are judged, so problems outside the request are not
reported at all.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from pathlib import Path

from colabkit.errors import ColabkitError
from colabkit.tasks.layout import demo_root
from colabkit.tasks.model import Problem, TaskSuite
from colabkit.tasks.plain import scan_tasks
from colabkit.tasks.scan import BLOCKING, Entry


def load_tasks(
    root: Path | str | None = None,
    *,
    split: str | None = None,
    domains: Sequence[str] | None = None,
    ids: Sequence[str] | None = None,
) -> TaskSuite:
    """Load the tasks under `root` (the shipped demo tasks when None), optionally filtered.

    `root` is a DiscoveryBench folder or plain task folders (`task.yaml`, `colabkit.tasks.plain`).

    - `split`: "real/test", or one part of it ("real", "test") to match several splits.
    - `domains`: a metadata `domain` ("humanities"), a dataset folder ("archaeology"), or a
      synth domain without its `_<n>_<n>` suffix ("ancient-languages"); case-insensitive.
    - `ids`: task ids ("archaeology/3/0") or metadata prefixes ("archaeology/3"); every id
      given must match a task that loads, so a typo is an error rather than a silently
      smaller study.
    Tasks with problems are left out and reported in `TaskSuite.problems`.
    """
    result = scan_tasks(demo_root() if root is None else root)
    where = result.layout.scope
    for problem in result.problems:
        if problem.scope is None and problem.kind in BLOCKING:  # an answer key: every task
            raise ColabkitError(problem.message)
    wanted = {_norm(d) for d in domains} if domains else set()
    entries = [e for e in result.entries if _split_matches(e.task.split, split)]
    if wanted:
        entries = [e for e in entries if wanted & _domain_names(e.task.domain, e.source.folder)]
    if ids:
        entries = [e for e in entries if any(_id_matches(e.task.id, w) for w in ids)]
    problems = [p for p in result.problems if _in_request(p, entries, split, wanted, ids)]
    blocked = [p for p in problems if p.kind in BLOCKING]
    good = [e for e in entries if not any(p.concerns(e.task.id) for p in blocked)]
    if ids:
        _refuse_broken_ids(ids, good, blocked, where, result.entries)
    if not good:
        if blocked:
            more = f" (and {len(blocked) - 1} more problems)" if len(blocked) > 1 else ""
            raise ColabkitError(blocked[0].message + more)
        asked = ", ".join(f"{k}={v!r}" for k, v in (("split", split), ("domains", domains))
                          if v) or "no filter"
        raise ColabkitError(f"no task matches {asked} in {where} ({len(result.entries)} tasks there)")
    return TaskSuite(
        root=result.layout.data_root,
        tasks=tuple(e.task for e in good),
        gold={e.task.id: e.gold for e in good if e.gold is not None},
        problems=tuple(problems),
    )


def _split_matches(task_split: str, wanted: str | None) -> bool:
    if not wanted:
        return True
    wanted = wanted.strip("/")
    return task_split == wanted or wanted in task_split.split("/")


def _norm(name: str) -> str:
    return re.sub(r"[\s_-]+", " ", name.casefold()).strip()


def _domain_names(domain: str | None, folder: str) -> set[str]:
    names = {_norm(folder), _norm(re.sub(r"_\d+_\d+$", "", folder))}
    return names | {_norm(domain)} if domain else names


def _id_matches(task_id: str, wanted: str) -> bool:
    wanted = wanted.strip().strip("/")
    return task_id == wanted or task_id.startswith(wanted + "/")


def _refuse_broken_ids(ids: Sequence[str], good: list[Entry], blocked: list[Problem], where: Path,
                       every: list[Entry]) -> None:
    """An id asked for by name must match a task that loaded: else its problem, or near ids."""
    for wanted in ids:
        if any(_id_matches(e.task.id, wanted) for e in good):
            continue
        for problem in blocked:
            scope = problem.scope or ""
            if _id_matches(wanted, scope) or _id_matches(scope, wanted):
                raise ColabkitError(problem.message)
        near = difflib.get_close_matches(wanted, [e.task.id for e in every], n=5, cutoff=0.5)
        hint = f"; near: {', '.join(near)}" if near else ""
        raise ColabkitError(f"no task matches id {wanted!r} in {where}{hint}")


def _in_request(problem: Problem, entries: list[Entry], split: str | None, domains: set[str],
                ids: Sequence[str] | None) -> bool:
    """Whether a problem touches the request: a selected task, or a metadata file that did not
    parse (its tasks are unknown) in the requested split, folder and ids."""
    if problem.scope is None:
        return False
    if any(problem.concerns(e.task.id) for e in entries):
        return True
    if problem.kind != "bad-metadata" or not _split_matches(problem.split or "", split):
        return False
    folder = problem.scope.split("/", 1)[0]
    if domains and not domains & _domain_names(None, folder):
        return False
    return not ids or any(_id_matches(w, problem.scope) or _id_matches(problem.scope, w) for w in ids)
