"""Metrics as plugins: a researcher's own `Scorer`, found without editing the package.

Two ways to name one, both ending as a scorer class (or a factory returning a `Scorer`):

- an entry point in the group `colabkit.metrics` of an installed distribution
  (`[project.entry-points."colabkit.metrics"] tone = "mylab.metrics:ToneScorer"`): found by
  name, listed by `available_metrics`, scored by `colabkit score --metrics tone`;
- an import path, `package.module:Class` or `path/to/file.py:Class` (a file path resolves
  against the experiment file's folder when it comes from one), in an experiment's
  `metrics:` or in `--metrics`.

A plugin scorer is scored exactly like a built-in one: its files are keyed by its scorer id
(name, version, prompts, judge), so it is cached and resumed the same way, and a crash
in it is an incomplete, flagged, all-missing result. Its values join `scores.parquet` as
extra columns. Fail-closed rules at load: a plugin must say which columns it fills, and none
may be a built-in metric's or a table key (it could silently overwrite a study score); a
plugin named like a built-in, or one that cannot be imported, is refused with one line when
it is asked for (and otherwise never loaded), so one broken plugin never stops the others.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from colabkit.errors import ColabkitError, one_line
from colabkit.evaluation.scorer import Scorer
from colabkit.evaluation.tables import JUDGE_COLUMNS, RUN_COLUMNS, SESSION_KEYS

ENTRY_POINT_GROUP = "colabkit.metrics"
_RESERVED = {*SESSION_KEYS, *RUN_COLUMNS, *JUDGE_COLUMNS}
Factory = Callable[[], Scorer]


def is_import_path(name: str) -> bool:
    """Whether a metric name is an import path (`module:Class`, `file.py:Class`), not a name."""
    return ":" in name


def entry_point_names() -> tuple[str, ...]:
    """The metric names installed distributions declare in `colabkit.metrics` (not loaded)."""
    return tuple(sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}))


def entry_point_metric(name: str, builtin: dict[str, Factory]) -> Factory:
    """Load the `colabkit.metrics` entry point `name` and check it (module docstring)."""
    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not found:
        raise ColabkitError(f"no metric {name!r}: not built in and no {ENTRY_POINT_GROUP} entry point names it")
    ep = found[0]
    where = f"metric plugin {name!r} (entry point {ep.value})"
    if name in builtin:
        raise ColabkitError(f"{where}: a built-in metric has that name")
    try:
        target = ep.load()
    except Exception as exc:  # any import failure of foreign code: one line, never a traceback
        raise ColabkitError(f"{where}: cannot load: {type(exc).__name__}: {one_line(exc)}") from None
    return _checked(target, where, builtin, expected_name=name)


def import_path_metric(path: str, builtin: dict[str, Factory], base: Path | None = None) -> Factory:
    """Load `module:Class` or `file.py:Class` (relative to `base`, else the current folder)."""
    where = f"metric plugin {path!r}"
    module_part, _, attr = path.rpartition(":")
    if not module_part or not attr:
        raise ColabkitError(f"{where}: expected module:Class or path/to/file.py:Class")
    try:
        if module_part.endswith(".py"):
            file = Path(module_part).expanduser()
            file = file if file.is_absolute() else (base or Path.cwd()) / file
            module = _module_from_file(file.resolve())
        else:
            module = importlib.import_module(module_part)
        target = getattr(module, attr)
    except ColabkitError:
        raise
    except Exception as exc:
        raise ColabkitError(f"{where}: cannot load: {type(exc).__name__}: {one_line(exc)}") from None
    return _checked(target, where, builtin, expected_name=None)


def _module_from_file(file: Path) -> Any:
    if not file.is_file():
        raise ColabkitError(f"metric plugin file not found: {file}")
    name = f"colabkit_metric_plugin_{abs(hash(str(file)))}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ColabkitError(f"metric plugin file cannot be imported: {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _checked(target: Any, where: str, builtin: dict[str, Factory], *, expected_name: str | None) -> Factory:
    """`target` as a scorer factory, after the fail-closed checks of the module docstring."""
    if not callable(target):
        raise ColabkitError(f"{where}: {type(target).__name__} is not a Scorer class or factory")
    try:
        scorer = target()
    except Exception as exc:
        raise ColabkitError(f"{where}: cannot make a scorer: {type(exc).__name__}: {one_line(exc)}") from None
    if not isinstance(scorer, Scorer):
        raise ColabkitError(f"{where}: makes a {type(scorer).__name__}, not a colabkit.evaluation.Scorer")
    name = getattr(scorer, "name", None)
    if not isinstance(name, str) or not name or not isinstance(getattr(scorer, "version", None), str):
        raise ColabkitError(f"{where}: a scorer sets `name` and `version` (strings)")
    if expected_name is not None and name != expected_name:
        raise ColabkitError(f"{where}: its scorer is named {name!r}, not {expected_name!r}")
    if name in builtin and builtin[name] is not target:
        raise ColabkitError(f"{where}: a built-in metric is named {name!r}")
    if not scorer.columns:
        raise ColabkitError(f"{where}: set `columns`, the score-table columns it fills")
    taken = {c for factory in builtin.values() if factory is not target for c in factory().columns} | _RESERVED
    clash = sorted(set(scorer.columns) & taken)
    if clash:
        raise ColabkitError(f"{where}: column(s) {', '.join(clash)} belong to a built-in metric or the table")
    return target
