"""`colabkit batch` after its sessions: a provider stop or an empty grid runs no later stage.

The notebooks are stand-ins (one cell each) executed by the real pipeline (papermill
processes): a run_variant that stops on the batch's circuit breaker, or that finishes no
session, must leave score, annotate_gates and ablations unexecuted (no judge call), and the
terminal gets the provider's one line.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from helpers.experiments import write_experiment

from colabkit.runner import load_experiment
from colabkit.runner.pipeline import run_batch

STOPPED = ("class ProviderRefused(Exception): pass\n"
           "raise ProviderRefused('deepseek/deepseek-chat: provider unavailable after 9 attempt(s) in 300.0 s "
           "(1 session(s) stopped by the provider, 2 not started)')")


def notebooks(folder: Path, run_variant: str) -> Path:
    folder.mkdir()
    for name, code in {"run_variant": run_variant, "score": "1", "annotate_gates": "1", "ablations": "1"}.items():
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(code)]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, folder / f"{name}.ipynb")
    return folder


@pytest.mark.slow  # one notebook kernel each
@pytest.mark.parametrize(("cell", "said"), [
    (STOPPED, "provider down, batch stopped: deepseek/deepseek-chat: provider unavailable after 9 attempt(s)"),
    ("print('no session ran')", "no finished sessions: scoring and analysis skipped (no judge call made)"),
])
def test_no_stage_runs_after_a_provider_stop_or_without_sessions(tmp_path, cell, said):
    exp = load_experiment(write_experiment(tmp_path, "stops", variants=["single"]))
    lines: list[str] = []
    failed = run_batch(exp, notebooks=notebooks(tmp_path / "nb", cell), progress=False, say=lines.append)
    assert failed == (["run_variant-single"] if cell == STOPPED else [])
    assert any(line.startswith(said) for line in lines), lines
    executed = sorted(p.name for p in (exp.folder() / "notebooks").glob("*.ipynb"))
    assert executed == ["run_variant-single.ipynb"]  # score, annotate_gates, ablations never ran


def test_the_scores_bar_counts_the_selected_variants_sessions_only(tmp_path):
    from colabkit.runner.stages import expected_scores

    exp = load_experiment(write_experiment(tmp_path, "bar"))  # single and default-dr, 3 seeds
    chosen = {spec.session_id for spec, _ in exp.sessions(["single"])}
    whole, selected = expected_scores(exp), expected_scores(exp, chosen)
    assert len(whole) == 2 * len(selected) and len(chosen) == 3
    assert {path.parts[-3] for path in selected} == chosen
