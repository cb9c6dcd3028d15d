"""Read every data file a task lists, as the suite would, and compare it with its metadata.

Loading a task reads only its metadata (a DiscoveryBench checkout holds gigabytes of data);
`colabkit tasks validate` is where the data itself is checked, before a study spends its
model budget on it. A file the metadata presents as a table (by its extension) that
`read_table` cannot read (binary garbage named `.csv`, a broken Stata file) is an error:
a session would run on nonsense. Described columns missing from the file are a warning:
the data is still usable and the Data Analyst's briefing already names the difference.
Each data file is read once, however many tasks list it, and each finding is reported
once per metadata file.
"""

from __future__ import annotations

import re
from pathlib import Path

from colabkit.errors import ColabkitError
from colabkit.tasks.model import DatasetInfo, Problem
from colabkit.tasks.scan import Entry
from colabkit.tasks.table import read_table_reported

_MISSING_SHOWN = 5
# How metadata names a saved pandas index (an empty header in the file).
_INDEX_NAME = re.compile(r"^(unnamed(:\s*\d+)?)?$", re.IGNORECASE)


def check_data(entries: list[Entry]) -> list[Problem]:
    """Problems of the listed data files: unreadable tables (errors), undescribed columns (warnings)."""
    headers: dict[Path, tuple[set[str], bool] | str] = {}
    found: list[Problem] = []
    seen: set[tuple[Path, Path]] = set()
    for entry in entries:
        for dataset in entry.task.datasets:
            key = (dataset.path, entry.source.path)
            if dataset.kind != "table" or not dataset.path.is_file() or key in seen:
                continue
            seen.add(key)
            if dataset.path not in headers:
                headers[dataset.path] = _header(dataset)
            header = headers[dataset.path]
            where = {"split": entry.task.split, "scope": entry.source.id_prefix}
            if isinstance(header, str):
                found.append(Problem(kind="bad-data", message=f"data file listed in {entry.source.path} "
                                     f"cannot be read as a table: {header}", **where))
                continue
            missing = _missing(dataset, *header)
            if missing:
                shown = ", ".join(missing[:_MISSING_SHOWN])
                more = f" and {len(missing) - _MISSING_SHOWN} more" if len(missing) > _MISSING_SHOWN else ""
                found.append(Problem(kind="column-mismatch", message=f"{len(missing)} column(s) described in "
                                     f"{entry.source.path} are not in {dataset.path}: {shown}{more}", **where))
    return found


def _header(dataset: DatasetInfo) -> tuple[set[str], bool] | str:
    """(column names, has a saved index) of a readable table, or why it cannot be read."""
    try:
        frame, reading = read_table_reported(dataset.path)
    except ColabkitError as exc:
        return str(exc)
    except (OSError, MemoryError, UnicodeError) as exc:
        return f"{type(exc).__name__}: {exc} ({dataset.path})"
    return {str(c) for c in frame.columns}, reading.saved_index


def _missing(dataset: DatasetInfo, names: set[str], saved_index: bool) -> list[str]:
    return [c.name for c in dataset.columns
            if c.name not in names and not (saved_index and _INDEX_NAME.match(c.name.strip()))]
