"""The tutorial notebook (notebooks/new_study.ipynb): thin, and under papermill it declares,
runs, scores with the custom metric and reads the contrast its file declares, in a table and
figures (on the scripted model, through the provider plugin the kernel loads; the embedded
model's sessions are the e2e tests')."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pandas as pd
import pytest
from helpers.notebooks import code_cells
from helpers.scripted_plugin import subprocess_env

from colabkit.store import SessionRecord

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOK = NOTEBOOKS / "new_study.ipynb"
SAY = {"thought": "tell", "action": "send_message", "content": "Look at the single column.", "to": "all"}


def test_the_tutorial_is_thin_clean_and_audits_its_variants():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    cells = code_cells(nb)
    assert "parameters" in cells[0].metadata.get("tags", [])
    assert all(len(c.source.splitlines()) <= 8 for c in cells)  # logic lives in the package
    assert all(not c.outputs and c.execution_count is None for c in cells)  # committed clean
    assert sum(c.source.count("audit_experiment(exp, quick=True)") for c in cells) == 1  # every variant, E's too


@pytest.mark.slow  # a notebook kernel and sandboxed workspace kernels
def test_papermill_runs_the_tutorial_end_to_end(tmp_path, monkeypatch):
    import papermill

    for key, value in subprocess_env(default=SAY).items():  # what the notebook's kernel loads
        monkeypatch.setenv(key, value)
    executed = tmp_path / "new_study.ipynb"
    papermill.execute_notebook(str(NOTEBOOK), str(executed), cwd=str(NOTEBOOKS), kernel_name="python3",
                               progress_bar=False, parameters={"results": str(tmp_path), "model": "scripted/everyone"})
    [folder] = [p for p in tmp_path.iterdir() if p.name.startswith("new_study-")]
    records = [SessionRecord.model_validate_json(p.read_bytes()) for p in folder.glob("*/session.json")]
    assert sorted(r.spec.variant.name for r in records) == ["default-dr", "default-dr", "preassigned-dre",
                                                            "preassigned-dre"]
    three = [r for r in records if r.spec.variant.name == "preassigned-dre"]
    assert all(r.persona_versions["E"].startswith("sha256:") for r in three)
    scores = pd.read_parquet(folder / "scores.parquet")
    assert scores["human_messages"].notna().all() and (scores["human_messages"] > 0).all()
    nb = nbformat.read(executed, as_version=4)
    contrast = code_cells(nb)[-2].outputs[-1]["data"]["text/plain"]  # the contrast the file declares
    assert "preassigned-dre" in contrast and "human_messages" in contrast and "no test: 1 task(s) with pairs" in contrast
    drawn = [o for o in code_cells(nb)[-1].outputs if "image/png" in o.get("data", {})]
    assert len(drawn) == 2  # the ablation figure with the variant's column, and the contrast's forest
    audited = "".join(o.get("text", "") for c in code_cells(nb) if "audit_experiment(exp" in c.source for o in c.outputs)
    assert "2 variants" in audited and "14 scenarios" in audited and "every invariant held" in audited  # D, R, E
