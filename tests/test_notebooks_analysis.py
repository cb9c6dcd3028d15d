"""The experiment notebooks: thin and parameterised, run by papermill and nbval (lax), with
assertions on what they stored.

`ablations` and `explore_trajectory` run here on constructed inputs (a score table in the
evaluation format; a session recorded with scripted participants and a real kernel).
`run_variant`, `score` and `annotate_gates` call the runner and evaluation layers: their test
runs the four experiment notebooks end to end on scripted participants and a scripted judge
(mechanics). The embedded model's sessions and judge are tests/test_e2e_real_model.py's and
tests/test_eval_real_model.py's; `make demo` runs these notebooks on it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest
import yaml
from helpers.notebooks import code_cells
from helpers.score_tables import score_table
from helpers.scripted_plugin import subprocess_env
from helpers.stored_session import (
    HYPOTHESIS,
    TASK_ID,
    WAIT,
    ai_first_seed,
    record_scaffolded_session,
    say,
    scaffolded_scripts,
)

from colabkit.analysis.inference.decisions.contrasts import CONTRAST_COLUMNS, DECOMPOSITION
from colabkit.analysis.inference.estimation.stats import STUDY_COLUMNS

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
PARAMETERS = {
    "run_variant": ["experiment", "results", "variant"],
    "score": ["experiment", "results"],
    "annotate_gates": ["experiment", "results"],
    "ablations": ["experiment", "results", "scores_file", "out"],
    "explore_trajectory": ["results", "experiment_dir", "session_id"],
    "realism": ["experiment", "results", "people", "cogym", "out"],
}
TABLES = ("replication", "claims", "hypotheses", "plan", "power_of_procedure", "study_table", "study_table_formatted", "decomposition", "contrasts", "power", "termination",
          "termination_interaction", "living_memory", "simulator_effect", "contrasts_by_simulator", "missing_scores")
FIGURES = ("ablation_quality", "ablation_work", "contrasts")



@pytest.mark.parametrize("name", sorted(PARAMETERS))
def test_each_notebook_is_thin_parameterised_and_committed_clean(name):
    path = NOTEBOOKS / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    cells = code_cells(nb)
    tagged = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and tagged[0] is cells[0]
    assert [line.split(":")[0] for line in tagged[0].source.splitlines()] == PARAMETERS[name]
    assert all(len(c.source.splitlines()) <= 8 for c in cells)  # the logic lives in the package
    assert all(not c.outputs and c.execution_count is None for c in cells)
    help_text = subprocess.run([sys.executable, "-m", "papermill", "--help-notebook", str(path)],
                               capture_output=True, text=True, check=True)
    shown = help_text.stdout + help_text.stderr
    assert "warn" not in shown.lower() and "Unknown type" not in shown
    for parameter in PARAMETERS[name]:
        assert f"  {parameter}: str (default" in shown, parameter


def execute(name: str, tmp: Path, **parameters) -> nbformat.NotebookNode:
    import papermill

    executed = tmp / f"{name}.executed.ipynb"
    papermill.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(executed), cwd=str(NOTEBOOKS),
                               kernel_name="python3", progress_bar=False, parameters=parameters)
    return nbformat.read(executed, as_version=4)


def nbval_lax(name: str, tmp: Path, **parameters) -> None:
    """Run nbval (lax) on a copy of the notebook with `parameters` injected as papermill does."""
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


@pytest.fixture(scope="module")
def scores_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("scores") / "scores.parquet"
    score_table(n_tasks=6, seeds=3).to_parquet(path)
    return path


def test_ablations_stores_the_tables_and_figures(tmp_path, scores_file):
    out = tmp_path / "analysis"
    nb = execute("ablations", tmp_path, experiment="", results=str(tmp_path), scores_file=str(scores_file),
                 out=str(out))
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{t}.csv" for t in TABLES] + [f"{f}.{ext}" for f in FIGURES for ext in ("png", "svg")])
    study = pd.read_csv(out / "study_table.csv")
    assert list(study.columns) == list(STUDY_COLUMNS) and len(study) == 13 * 7
    assert (study.loc[study["metric"] == "performance", "n"] == 18).all()
    formatted = pd.read_csv(out / "study_table_formatted.csv")
    assert formatted["variant"].tolist()[:2] == ["single", "default-d"] and len(formatted) == 13
    assert "Performance" in formatted.columns and formatted["Performance"].str.contains(" ± ").all()
    assert formatted["Performance"].str.endswith("(n=18, 6 tasks)").all()  # each cell's own n, and its tasks
    assert {"judge_grade", "judge_reliable"} <= set(study.columns) & set(formatted.columns)
    contrasts = pd.read_csv(out / "contrasts.csv")
    columns = [*CONTRAST_COLUMNS, "judge_grade", "judge_reliable", "plan_hash", "plan_status"]
    assert list(contrasts.columns) == columns and len(contrasts) == 3 * 7
    assert set(contrasts["a"]) == {"scaffolded-d", "scaffolded-r", "scaffolded-dr"}
    assert contrasts.groupby("family").size().to_dict() == {"structure": 3, "redistribution": 2,
                                                           "exploratory: scaffolded-default": 3 * 6 - 2}
    assert contrasts["p_signflip"].notna().all() and contrasts["plan_hash"].nunique() == 1
    decomposition = pd.read_csv(out / "decomposition.csv")  # the synergy claims (H3) and the exploratory rest
    assert len(decomposition) == 3 * (len(DECOMPOSITION) - 1) * 7
    assert set(decomposition["family"]) == {"decomposition", "exploratory: decomposition"}
    replication = pd.read_csv(out / "replication.csv")  # the paper's numbers beside this run's
    assert {"published", "estimate", "ci_low", "ci_high"} <= set(replication.columns)
    assert (replication.query("variant == 'scaffolded-dr' and metric == 'performance'")["published"] == 0.76).all()
    claims = pd.read_csv(out / "claims.csv")
    assert {"H1.dr", "H2.pooled", "H3.memory"} <= set(claims["hypothesis"]) and claims["verdict"].notna().all()
    power = pd.read_csv(out / "power.csv")
    assert power["metric"].tolist() == ["performance", "h_init_norm", "s_hyp", "hms"] * 3
    assert (power["tasks_needed"] >= 2).all() and power["answer"].str.contains("tasks x").all()
    html = [o.get("data", {}).get("text/html", "") for c in code_cells(nb) for o in c.outputs]
    assert any("JUDGE NOT RELIABLE" in h for h in html)  # the constructed judge: plumbing-grade, failed
    texts = [o.get("text", "") for c in code_cells(nb) for o in c.outputs if o.get("output_type") == "stream"]
    assert any(t.startswith("no plan") for t in texts)  # no plan written before the data: said so
    tables = [h for h in html if "<table" in h]
    assert "initial alpha" in tables[0] and "published" in tables[1]  # opens with the plan and the replication
    first = next(h for h in html if "p_signflip" in h)  # the first contrast shown is the primary result
    assert first.count("<tr") == 1 + 3 and "performance" in first and "hms" not in first
    shown = next(h for h in html if "self-chosen vs assigned gates" in h)  # every decomposition row rendered
    assert shown.count("<tr") == 1 + len(decomposition) and "..." not in shown
    for figure in FIGURES:
        assert (out / f"{figure}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert b"<svg" in (out / f"{figure}.svg").read_bytes()[:2000]
    shown = [o for c in code_cells(nb) for o in c.outputs if o.get("output_type") == "display_data"]
    assert sum("image/png" in o.get("data", {}) for o in shown) == len(FIGURES)  # figures displayed too
    assert pd.read_csv(out / "termination.csv").empty  # one rule only: nothing to compare
    assert pd.read_csv(out / "living_memory.csv").empty  # no Dynamic variants: no such family
    assert pd.read_csv(out / "simulator_effect.csv").empty  # no simulator sweep: nothing to compare


def test_ablations_contrasts_dynamic_with_scaffolded_when_the_experiment_has_both(tmp_path):
    study = score_table(n_tasks=6, seeds=3)
    dynamic = study[study["structure"] == "scaffolded"].assign(
        structure="dynamic", variant=lambda t: t["variant"].str.replace("scaffolded", "dynamic"),
        session_id=lambda t: t["session_id"] + "-dyn", performance=lambda t: (t["performance"] + 0.1).clip(0, 1))
    path = tmp_path / "dynamic.parquet"
    pd.concat([study, dynamic]).to_parquet(path)
    out = tmp_path / "analysis"
    execute("ablations", tmp_path, experiment="", results=str(tmp_path), scores_file=str(path), out=str(out))
    living = pd.read_csv(out / "living_memory.csv")
    assert len(living) == 3 * 7 and set(living["family"]) == {"exploratory: living-memory"}
    assert set(zip(living["a"], living["b"], strict=True)) == {(f"dynamic-{c}", f"scaffolded-{c}") for c in ("d", "r", "dr")}
    assert (living.loc[living["metric"] == "performance", "diff"] > 0).all()
    assert len(pd.read_csv(out / "contrasts.csv")) == 3 * 7  # the study's family is unchanged


def test_ablations_compares_the_two_termination_rules_when_both_ran(tmp_path):
    either = score_table(n_tasks=6, seeds=3).assign(termination="either_side")
    longer = either.assign(termination="all_sides", session_id=either["session_id"] + "-all",
                           performance=(either["performance"] + 0.1).clip(upper=1.0))
    path = tmp_path / "both.parquet"
    pd.concat([either, longer]).to_parquet(path)
    out = tmp_path / "analysis"
    execute("ablations", tmp_path, experiment="", results=str(tmp_path), scores_file=str(path), out=str(out))
    study = pd.read_csv(out / "study_table.csv")
    assert (study.loc[study["metric"] == "performance", "n"] == 18).all()  # one rule in the study's tables
    rules = pd.read_csv(out / "termination.csv")
    perf = rules[rules["metric"] == "performance"]
    assert len(perf) == 13 and (perf["n_pairs"] == 18).all() and (perf["diff"] > 0).all()
    interaction = pd.read_csv(out / "termination_interaction.csv")  # every planned contrast, TOST per row
    assert len(interaction) == 3 * len(DECOMPOSITION) * 7 and interaction["margin"].notna().all()


@pytest.fixture(scope="module")
def stored_root(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("stored")
    return root, record_scaffolded_session(root / "exp")


def test_explore_trajectory_renders_the_session_statically_and_as_widgets(tmp_path, stored_root):
    root, folder = stored_root
    nb = execute("explore_trajectory", tmp_path, results=str(root), experiment_dir="exp", session_id=folder.name)
    cells = code_cells(nb)
    widget_outputs = [o for o in cells[-2].outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(widget_outputs) == 1
    static = "".join(o.get("data", {}).get("text/html", "") for o in cells[-1].outputs)
    assert folder.name in static and "AI-THOUGHT: count the hoards first" in static and "signed by" in static
    assert 'class="ck-sessions"' in static  # the session table too, not only in the live widget
    banner = "".join(o.get("data", {}).get("text/html", "") for o in cells[-2].outputs)
    assert "PLUMBING-GRADE RUN" not in banner  # scripted participants: no plumbing-grade line


def test_explore_trajectory_with_its_default_parameters_shows_the_first_session(tmp_path, stored_root):
    from colabkit.analysis.explorer import TrajectoryExplorer

    root, folder = stored_root
    nb = execute("explore_trajectory", tmp_path, results=str(root))  # experiment_dir and session_id empty
    static = "".join(o.get("data", {}).get("text/html", "") for o in code_cells(nb)[-1].outputs)
    assert folder.name in static and "AI-THOUGHT: count the hoards first" in static
    explorer = TrajectoryExplorer(root)  # the widget, as a kernel holds it: its first session selected
    assert explorer.session.value == folder.name and explorer.trajectory is not None
    assert folder.name in explorer.full.value


def test_explore_trajectory_with_no_sessions_says_so(tmp_path):
    nb = execute("explore_trajectory", tmp_path, results=str(tmp_path / "nothing"))
    shown = "".join(o.get("data", {}).get("text/html", "") for o in code_cells(nb)[-1].outputs)
    assert shown.strip() == f"<i>no finished sessions under {tmp_path / 'nothing'}</i>"


def test_nbval_lax_passes_on_the_analysis_notebooks(tmp_path, scores_file, stored_root):
    root, folder = stored_root
    nbval_lax("ablations", tmp_path, experiment="", results=str(tmp_path), scores_file=str(scores_file),
              out=str(tmp_path / "analysis"))
    nbval_lax("explore_trajectory", tmp_path, results=str(root))  # its default session: the first
    assert (tmp_path / "analysis" / "study_table.csv").is_file()


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
