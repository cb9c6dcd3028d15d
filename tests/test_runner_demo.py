"""`make demo`'s path on a tiny config: `colabkit batch` over the study's own notebooks leaves
the rendered notebooks, the main table and the ablation figure.

The batch's mechanics are under test, so its participants and judge are scripted (through the
provider plugin every notebook kernel loads); the embedded model runs sessions end to end in
tests/test_e2e_real_model.py and judges one in tests/test_eval_real_model.py.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers.scripted_plugin import subprocess_env
from helpers.stored_session import HYPOTHESIS, WAIT, ai_first_seed, say

from colabkit.evaluation import load_gate_annotations, load_scores
from colabkit.runner import load_experiment
from colabkit.store import load_sessions

REPO = Path(__file__).resolve().parents[1]
STEPS = ("run_variant", "score", "annotate_gates", "ablations")
# single: the edit and the finish go through; preassigned-dr: R signs both (its gates).
SCRIPTS = {"ai": [say("edit_result", HYPOTHESIS), say("finish", "done")],
           "R": [say("approve", "the counts support it", "req-1"), say("approve", "ready to submit", "req-2")]}


def test_make_demo_runs_the_demo_config_through_batch():
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "colabkit batch experiments/demo.yaml" in recipe


@pytest.mark.slow  # five notebook kernels
def test_batch_on_a_tiny_demo_config_renders_notebooks_table_and_figure(tmp_path):
    missing = [n for n in STEPS if not (REPO / "notebooks" / f"{n}.ipynb").is_file()]
    assert not missing, f"study notebooks missing: {missing}"  # a missing notebook fails, never skips
    demo = yaml.safe_load((REPO / "experiments" / "demo.yaml").read_text())
    tiny = {**demo, "variants": ["single", "preassigned-dr"], "seeds": [ai_first_seed()],
            "models": {"default": "scripted/everyone", "ai": "scripted/ai", "R": "scripted/R"},
            "judge": "judgedouble/demo", "settings": {"action_budget": 3, "max_rounds": 3},
            "results": str(tmp_path / "results")}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny))
    env = subprocess_env(default=WAIT, scripts=SCRIPTS)  # every kernel pops its own copy
    run = subprocess.run([sys.executable, "-m", "colabkit", "batch", str(path), "--quiet"], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    folder = load_experiment(path).folder()
    rendered = {p.stem for p in (folder / "notebooks").glob("*.ipynb")}
    assert rendered == {"run_variant-single", "run_variant-preassigned-dr", "score", "annotate_gates", "ablations"}
    sessions = load_sessions(folder)
    assert sorted(sessions["variant"]) == ["preassigned-dr", "single"]
    assert set(sessions["ended_by"]) == {"finish"} and set(sessions["final_hypothesis"]) == {HYPOTHESIS}
    assert sorted(load_scores(folder)["session_id"]) == sorted(sessions["session_id"])
    gates = load_gate_annotations(folder)
    assert sorted(gates["action"]) == ["edit_result", "finish"] and set(gates["decision"]) == {"approved"}
    analysis = folder / "analysis"
    study = pd.read_csv(analysis / "study_table.csv")  # the main table, of this grid's sessions
    assert sorted(study["variant"].unique()) == ["preassigned-dr", "single"]
    performance = study[study["metric"] == "performance"].set_index("variant")["n"]
    assert performance.to_dict() == {"single": 1, "preassigned-dr": 1}
    assert {"judge_grade", "judge_reliable"} <= set(study.columns)
    figure = analysis / "ablation_quality.png"  # the ablation figure, rendered
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (analysis / "ablation_quality.svg").is_file()
    assert str(folder / "notebooks") in run.stdout
    assert str(analysis / "study_table.csv") in run.stdout and str(figure) in run.stdout
    assert "plumbing-grade" not in run.stdout  # said only of the embedded model (tests/test_runner_cli.py)
    assert "score + annotate_gates: finished in" in run.stdout and "ablations: finished in" in run.stdout

    executed = {p.name: p.stat().st_mtime_ns for p in (folder / "notebooks").glob("*.ipynb")}
    started = time.monotonic()
    again = subprocess.run([sys.executable, "-m", "colabkit", "batch", str(path), "--quiet"], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=600)
    took = time.monotonic() - started
    assert again.returncode == 0, again.stdout + again.stderr
    skipped = {line.split(":")[0] for line in again.stdout.splitlines() if "skipped (its inputs are unchanged" in line}
    assert skipped == {p.removesuffix(".ipynb") for p in executed}  # every notebook, and said so
    assert {p.name: p.stat().st_mtime_ns for p in (folder / "notebooks").glob("*.ipynb")} == executed
    assert took < 30, f"a rerun with nothing new took {took:.0f} s"
