"""`make demo`'s path on a tiny config: `colabkit batch` over the study's own notebooks, on the
embedded model, leaves the rendered notebooks, the main table and the ablation figure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from colabkit.runner import load_experiment

REPO = Path(__file__).resolve().parents[1]
STEPS = ("run_variant", "score", "annotate_gates", "ablations")
pytestmark = pytest.mark.slow


def test_make_demo_runs_the_demo_config_through_batch():
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "colabkit batch experiments/demo.yaml" in recipe


@pytest.mark.skipif(not all((REPO / "notebooks" / f"{n}.ipynb").is_file() for n in STEPS),
                    reason="the study notebooks are not in this tree yet")
def test_batch_on_a_tiny_demo_config_renders_notebooks_table_and_figure(tmp_path):
    demo = yaml.safe_load((REPO / "experiments" / "demo.yaml").read_text())
    tiny = {**demo, "variants": ["single", "preassigned-dr"], "settings": {"action_budget": 1, "max_rounds": 1},
            "results": str(tmp_path / "results")}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny))
    run = subprocess.run([sys.executable, "-m", "colabkit", "batch", str(path), "--quiet"], cwd=REPO,
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    folder = load_experiment(path).folder()
    rendered = {p.stem for p in (folder / "notebooks").glob("*.ipynb")}
    assert rendered == {"run_variant-single", "run_variant-preassigned-dr", "score", "annotate_gates", "ablations"}
    tables = list(folder.rglob("*.csv"))
    figures = list(folder.rglob("*.png")) + list(folder.rglob("*.svg"))
    assert tables and figures
    assert str(folder / "notebooks") in run.stdout and str(figures[0]) in run.stdout
    assert "plumbing-grade" in run.stdout
