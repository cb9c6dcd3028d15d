"""Reading and running the shipped notebooks in tests (papermill, nbval lax)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any


def code_cells(nb: Any) -> list:
    """The notebook's code cells, in order."""
    return [c for c in nb.cells if c.cell_type == "code"]


NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def execute(name: str, tmp: Path, **parameters: Any) -> Any:
    """Run `notebooks/<name>.ipynb` with papermill (`parameters` injected); the executed notebook."""
    import nbformat
    import papermill

    executed = tmp / f"{name}.executed.ipynb"
    papermill.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(executed), cwd=str(NOTEBOOKS),
                               kernel_name="python3", progress_bar=False, parameters=parameters)
    return nbformat.read(executed, as_version=4)


def nbval_lax(name: str, tmp: Path, **parameters: Any) -> None:
    """Run nbval (lax) on a copy of the notebook with `parameters` injected as papermill does."""
    import nbformat
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    nb = parameterize_notebook(load_notebook_node(str(NOTEBOOKS / f"{name}.ipynb")), parameters)
    copy = tmp / "nbval" / f"{name}.ipynb"
    copy.parent.mkdir(exist_ok=True)
    nbformat.write(nb, copy)
    run = subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "-q", "-p", "no:cacheprovider",
                          "--rootdir", str(copy.parent), str(copy)],
                         cwd=copy.parent, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, f"{name}:\n{run.stdout[-4000:]}\n{run.stderr[-2000:]}"
    assert " passed" in run.stdout and "failed" not in run.stdout
