"""The four experiment notebooks end to end (`run_variant`, `score`, `annotate_gates`,
`ablations`), run by papermill and nbval (lax), on scripted participants and a scripted judge
(mechanics). The embedded model's sessions and judge are tests/test_e2e_real_model.py's and
tests/test_eval_real_model.py's; `make demo` runs these notebooks on it.

Apart from tests/test_notebooks_analysis.py so the test workers (a file each) share the
notebook kernels' time evenly.
"""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from helpers.notebooks import code_cells, execute, nbval_lax
from helpers.scripted_plugin import subprocess_env
from helpers.stored_session import HYPOTHESIS, TASK_ID, WAIT, ai_first_seed, say, scaffolded_scripts

# The notebooks' mechanics (papermill parameters, runner, storage, scoring and gate tables,
# analysis) on scripted participants and a scripted judge, through the provider plugin every
# notebook kernel loads.
EXPERIMENT = {
    "name": "nbtest",
    "tasks": {"ids": [TASK_ID]},
    "variants": ["default-dr", "scaffolded-dr"],
    "seeds": [ai_first_seed()],
    "models": {"default": "scripted/everyone", **{pid: f"scripted/{pid}" for pid in ("ai", "D", "R")}},
    "judge": "judgedouble/notebooks",
    "metrics": ["work", "initiative", "gates"],
    "settings": {"action_budget": 6, "max_rounds": 6},
    "concurrency": {"sessions": 2, "kernels": 2},
}
DEFAULT_DR = {"ai": [say("execute_code", "print(6 * 7)"), say("send_message", "D, do the counts look right?", "D"),
                     say("edit_result", HYPOTHESIS), say("finish", "done")],
              "D": [say("send_message", "Yes, they match the data.", "ai")]}
SCRIPTS = {"default-dr": DEFAULT_DR, "scaffolded-dr": scaffolded_scripts()}


def scripted_kernels(monkeypatch: pytest.MonkeyPatch, scripts: dict[str, list]) -> None:
    """Kernels and nbval processes started from now on answer with `scripts` and the judge double."""
    for key, value in subprocess_env(default=WAIT, scripts=scripts).items():
        monkeypatch.setenv(key, value)


@pytest.mark.slow  # seven notebook kernels
def test_the_experiment_notebooks_run_score_annotate_and_analyse(tmp_path, monkeypatch):
    from colabkit import evaluation, runner

    config = tmp_path / "nbtest.yaml"
    config.write_text(yaml.safe_dump(EXPERIMENT))
    root = tmp_path / "results"
    folder = runner.load_experiment(config, results=root).folder()
    for name in ("default-dr", "scaffolded-dr"):
        scripted_kernels(monkeypatch, SCRIPTS[name])  # each run_variant kernel pops its own copy
        nb = execute("run_variant", tmp_path, experiment=str(config), results=str(root), variant=name)
        table = code_cells(nb)[-1].outputs[-1]["data"]["text/plain"]
        assert TASK_ID in table
    from colabkit.store import load_sessions

    sessions = load_sessions(folder)
    assert sorted(sessions["variant"]) == ["default-dr", "scaffolded-dr"]
    assert set(sessions["ended_by"]) == {"finish"} and set(sessions["final_hypothesis"]) == {HYPOTHESIS}
    nbval_lax("score", tmp_path, experiment=str(config), results=str(root))
    scores = evaluation.load_scores(folder)
    assert sorted(scores["session_id"]) == sorted(sessions["session_id"])
    assert (scores["h_init_norm"].notna() & scores["w_total"].gt(0)).all()  # the judge's labels were used
    nbval_lax("annotate_gates", tmp_path, experiment=str(config), results=str(root))
    gates = evaluation.load_gate_annotations(folder)
    scaffolded = sessions.loc[sessions["variant"] == "scaffolded-dr", "session_id"].item()
    assert gates[["session_id", "signatory", "decision", "grounded"]].values.tolist() == [
        [scaffolded, "R", "approved", True]]
    execute("ablations", tmp_path, experiment=str(config), results=str(root))
    study = pd.read_csv(folder / "analysis" / "study_table.csv")
    assert sorted(study["variant"].unique()) == ["default-dr", "scaffolded-dr"]
    assert (folder / "analysis" / "ablation_quality.svg").is_file()
