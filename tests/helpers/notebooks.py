"""Reading notebooks in tests."""

from __future__ import annotations

from typing import Any


def code_cells(nb: Any) -> list:
    """The notebook's code cells, in order."""
    return [c for c in nb.cells if c.cell_type == "code"]
