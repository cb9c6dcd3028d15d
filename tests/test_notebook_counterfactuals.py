"""notebooks/counterfactuals.ipynb: thin, and it runs forks of a stored session end to end in
its own kernel (scripted participants through the provider plugin: the notebook's plumbing
is under test; tests/test_fork_real_model.py forks with the embedded model)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from helpers.notebooks import code_cells
from helpers.scripted_plugin import subprocess_env
from helpers.stored_session import WAIT, record_scaffolded_session

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "counterfactuals.ipynb"
PARAMETERS = {"results", "session_id", "at", "change", "seeds", "verify", "metrics", "judge"}



def test_the_notebook_is_thin_and_parameterised():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    cells = code_cells(nb)
    assert "parameters" in cells[0].metadata.get("tags", [])
    assigned = {line.split(":")[0].strip() for line in cells[0].source.splitlines() if "=" in line}
    assert assigned == PARAMETERS
    body = "\n".join(c.source for c in cells[1:])
    assert "fork(" in body and "counterfactual_table(" in body and "counterfactual_figure(" in body
    assert all(len(c.source.splitlines()) <= 8 for c in cells)
    assert all(not c.outputs and c.execution_count is None for c in cells)


@pytest.mark.slow  # a notebook kernel, and six continuations each with a sandboxed kernel
def test_papermill_forks_a_stored_session_and_shows_the_table(tmp_path, monkeypatch):
    import papermill

    results = tmp_path / "runs"
    parent = record_scaffolded_session(results)
    for key, value in subprocess_env(default=WAIT).items():
        monkeypatch.setenv(key, value)
    executed = tmp_path / "counterfactuals.ipynb"
    papermill.execute_notebook(str(NOTEBOOK), str(executed), cwd=str(tmp_path), kernel_name="python3",
                               progress_bar=False, parameters={"results": str(results), "seeds": "0,1,2"})
    forks = [f for f in (results / "forks").iterdir() if (f / "session.json").is_file()]
    assert len(forks) == 6
    nb = nbformat.read(executed, as_version=4)
    printed = "".join(o.get("text", "") for c in code_cells(nb) for o in c.outputs)
    assert f"session {parent.name}, fork point 9" in printed
    assert "3 continuation(s) with the change, 3 control(s)" in printed
    table = next(o["data"]["text/plain"] for c in code_cells(nb) for o in c.outputs
                 if "text/plain" in o.get("data", {}) and "k_control" in o["data"]["text/plain"])
    assert "w_total" in table and "replace_message to ai" in table
    assert any("image/png" in o.get("data", {}) for o in code_cells(nb)[-1].outputs)
