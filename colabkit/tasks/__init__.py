"""DiscoveryBench tasks: load them, read their data, validate a data root, ship demo tasks.

The participant-facing `Task` carries no gold; gold answers live only in `TaskSuite.gold`
(see `model.py` for why the types are split that way).
"""

from colabkit.tasks.layout import demo_root
from colabkit.tasks.loader import load_tasks
from colabkit.tasks.model import Column, DatasetInfo, Gold, Problem, Task, TaskSuite
from colabkit.tasks.table import TableReading, read_table, read_table_reported
from colabkit.tasks.validate import ValidationReport, validate_tasks

__all__ = [
    "Column",
    "DatasetInfo",
    "Gold",
    "Problem",
    "TableReading",
    "Task",
    "TaskSuite",
    "ValidationReport",
    "demo_root",
    "load_tasks",
    "read_table",
    "read_table_reported",
    "validate_tasks",
]
