"""The papermill notebook: thin (parameters, one call into the store, a look at the tables),
and it really runs a session end to end in a separate kernel (on the scripted model, through
the provider plugin the kernel loads: the notebook's plumbing is under test; the embedded
model's sessions are tests/test_e2e_real_model.py's)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from helpers.notebooks import code_cells
from helpers.scripted_plugin import subprocess_env

from colabkit.store import SessionRecord, load_sessions

CODE = {"thought": "look", "action": "execute_code", "content": "print(6 * 7)"}
NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "run_session.ipynb"
PARAMETERS = {"task", "variant", "seed", "model", "data_root", "out", "action_budget", "max_rounds"}



def test_the_notebook_is_thin_and_parameterised():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    cells = code_cells(nb)
    tagged = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and tagged[0] is cells[0]
    assigned = {line.split("=")[0].strip() for line in tagged[0].source.splitlines() if "=" in line}
    assert assigned == PARAMETERS
    body = "\n".join(c.source for c in cells[1:])
    assert "record_session(" in body and "load_events(" in body
    assert all(len(c.source.splitlines()) <= 8 for c in cells)  # logic lives in the package
    assert all(not c.outputs and c.execution_count is None for c in cells)  # committed clean


@pytest.mark.slow  # a notebook kernel and a sandboxed workspace kernel
def test_papermill_runs_a_session_in_a_kernel(tmp_path, monkeypatch):
    import papermill

    for key, value in subprocess_env(default=CODE).items():  # what the notebook's kernel loads
        monkeypatch.setenv(key, value)
    out = tmp_path / "results"
    executed = tmp_path / "run.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK), str(executed), cwd=str(tmp_path), kernel_name="python3", progress_bar=False,
        parameters={"variant": "single", "seed": 2, "model": "scripted/everyone", "out": str(out),
                    "action_budget": 2, "max_rounds": 2},
    )
    [row] = load_sessions(out).itertuples()
    folder = out / row.session_id
    record = SessionRecord.model_validate_json((folder / "session.json").read_bytes())
    assert record.seed == 2 and record.spec.settings.action_budget == 2 and record.spec.variant.name == "single"
    assert record.spec.models["default"].model == "scripted/everyone" and record.ended_by == "budget"

    nb = nbformat.read(executed, as_version=4)
    printed = "".join(o.get("text", "") for o in code_cells(nb)[2].outputs)  # [0] params, [1] injected
    assert printed.strip() == str(folder)
    table = code_cells(nb)[-1].outputs[0]["data"]["text/plain"]
    assert "session_start" in table and "execute_code" in table and "session_end" in table
