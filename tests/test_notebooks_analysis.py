"""The experiment notebooks: thin and parameterised; `ablations` run by papermill, with
assertions on what it stored.

`ablations` runs here on a constructed score table in the evaluation format;
`explore_trajectory` and both notebooks under nbval (lax) are tests/test_notebooks_explore.py's,
the four experiment notebooks end to end tests/test_notebooks_experiment.py's (the files are
apart so the test workers, a file each, share the notebook kernels' time evenly).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from helpers.contribution_replays import record_answer_parent, record_replays
from helpers.notebooks import NOTEBOOKS, code_cells, execute
from helpers.score_tables import score_table

from colabkit.analysis.inference.decisions.contrasts import CONTRAST_COLUMNS, DECOMPOSITION
from colabkit.analysis.inference.estimation.stats import STUDY_COLUMNS

PARAMETERS = {
    "run_variant": ["experiment", "results", "variant"],
    "score": ["experiment", "results"],
    "annotate_gates": ["experiment", "results"],
    "ablations": ["experiment", "results", "scores_file", "out", "forks"],
    "explore_trajectory": ["results", "experiment_dir", "session_id"],
    "realism": ["experiment", "results", "people", "cogym", "recllmsim", "out"],
}
TABLES = ("replication", "claims", "hypotheses", "plan", "power_of_procedure", "study_table", "study_table_formatted", "decomposition", "contrasts", "power", "termination",
          "termination_interaction", "living_memory", "simulator_effect", "contrasts_by_simulator", "missing_scores",
          "comparisons", "contributions", "synergy")
FIGURES = ("ablation_quality", "ablation_work", "contrasts")
# Three notebook kernels, about a minute each: started early (tests/conftest.py orders slow files first).
pytestmark = pytest.mark.slow


# One process asks papermill's `--help-notebook` of every notebook in turn (as its command line
# would, stdout and stderr together, unbuffered so they stay in order): one start of Python and
# papermill instead of one per notebook.
HELP_ALL = """
import sys
from papermill.cli import papermill
for path in sys.argv[1:]:
    print(f"=== {path}", flush=True)
    try:
        papermill.main(["--help-notebook", path], standalone_mode=False)
    except SystemExit:
        pass
"""


@pytest.fixture(scope="module")
def notebook_help() -> dict[str, str]:
    """What `papermill --help-notebook` shows for each notebook of PARAMETERS."""
    paths = [str(NOTEBOOKS / f"{name}.ipynb") for name in sorted(PARAMETERS)]
    done = subprocess.run([sys.executable, "-u", "-c", HELP_ALL, *paths], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=True)
    parts = done.stdout.split("=== ")[1:]
    assert [part.split("\n", 1)[0] for part in parts] == paths, done.stdout[-2000:]
    return {Path(part.split("\n", 1)[0]).stem: part.split("\n", 1)[1] for part in parts}


@pytest.mark.parametrize("name", sorted(PARAMETERS))
def test_each_notebook_is_thin_parameterised_and_committed_clean(name, notebook_help):
    path = NOTEBOOKS / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    cells = code_cells(nb)
    tagged = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and tagged[0] is cells[0]
    assert [line.split(":")[0] for line in tagged[0].source.splitlines()] == PARAMETERS[name]
    assert all(len(c.source.splitlines()) <= 8 for c in cells)  # the logic lives in the package
    assert all(not c.outputs and c.execution_count is None for c in cells)
    shown = notebook_help[name]
    assert "warn" not in shown.lower() and "Unknown type" not in shown
    for parameter in PARAMETERS[name]:
        assert f"  {parameter}: str (default" in shown, parameter


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
    columns = [*CONTRAST_COLUMNS, "judge_grade", "judge_reliable", "plan_hash", "plan_status", "plan_label"]
    assert list(contrasts.columns) == columns and len(contrasts) == 3 * 7
    assert set(contrasts["a"]) == {"scaffolded-d", "scaffolded-r", "scaffolded-dr"}
    assert contrasts.groupby("family").size().to_dict() == {"structure": 3, "redistribution": 2,
                                                           "exploratory: scaffolded-default": 3 * 6 - 2}
    assert contrasts["p_signflip"].notna().all() and contrasts["plan_hash"].nunique() == 1
    decomposition = pd.read_csv(out / "decomposition.csv")  # per pair (synergy, H3, is one claim over two rows)
    assert len(decomposition) == 3 * (len(DECOMPOSITION) - 1) * 7
    assert set(decomposition["family"]) == {"exploratory: decomposition"}
    replication = pd.read_csv(out / "replication.csv")  # the paper's numbers beside this run's
    assert {"published", "estimate", "ci_low", "ci_high"} <= set(replication.columns)
    assert (replication.query("variant == 'scaffolded-dr' and metric == 'performance'")["published"] == 0.76).all()
    claims = pd.read_csv(out / "claims.csv")  # one row per claim, verdicts from the decisions only
    assert {"H1.dr", "H1.no-gain", "H2.largest", "H3.synergy", "H2.pooled", "H3.memory"} <= set(claims["hypothesis"])
    assert claims["verdict"].str.match(r"^(replicated|contradicted|not decided|declared)").all()
    assert {"published", "estimate", "planned_test", "decision", "missing", "worst_case"} <= set(claims.columns)
    power = pd.read_csv(out / "power.csv")
    assert power["metric"].tolist() == ["performance", "h_init_norm", "s_hyp", "hms"] * 3
    assert (power["tasks_needed"] >= 2).all() and power["answer"].str.contains("tasks x").all()
    html = [o.get("data", {}).get("text/html", "") for c in code_cells(nb) for o in c.outputs]
    assert any("JUDGE NOT RELIABLE" in h for h in html)  # the constructed judge: plumbing-grade, failed
    texts = [o.get("text", "") for c in code_cells(nb) for o in c.outputs if o.get("output_type") == "stream"]
    assert any(t.startswith("no plan") for t in texts)  # no plan written before the data: said so
    tables = [h for h in html if "<table" in h]
    assert "planned_test" in tables[0] and "verdict" in tables[0] and "missing" in tables[0]  # opens with the claims
    assert "initial alpha" in tables[1] and "published" in tables[2]  # then the plan and the replication
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
    assert pd.read_csv(out / "comparisons.csv").empty  # the paper's variants only: no own comparison
    assert pd.read_csv(out / "contributions.csv").empty and pd.read_csv(out / "synergy.csv").empty
    assert any(t.startswith("no contribution replays in") and "colabkit contributions" in t for t in texts)
    assert any("add solo-d and solo-r" in h for h in html)  # no member alone: said why, nothing decided
    closing = code_cells(nb)[-1].outputs[-1]["data"]["text/html"]  # the summary in words, last
    assert "What this run does not show" in closing and "Not declared, and why" in closing
    assert all(h in closing for h in claims["hypothesis"])  # every claim named with its decision


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


def test_ablations_compare_an_own_variant_with_its_default_twin_in_the_tables_and_figures(tmp_path):
    study = score_table(n_tasks=6, seeds=3)
    base = study[study["variant"] == "preassigned-dr"]
    own = pd.concat([base.assign(variant="preassigned-drs", composition="drs", session_id=base["session_id"] + "-s",
                                 performance=(base["performance"] + 0.2).clip(0, 1)),
                     study[study["variant"] == "default-dr"].assign(variant="default-drs", composition="drs",
                                                                    session_id=lambda t: t["session_id"] + "-s")])
    path = tmp_path / "own.parquet"
    pd.concat([study, own]).to_parquet(path)
    out = tmp_path / "analysis"
    nb = execute("ablations", tmp_path, experiment="", results=str(tmp_path), scores_file=str(path), out=str(out))
    compared = pd.read_csv(out / "comparisons.csv", dtype=str, keep_default_na=False)
    assert compared[["a", "b", "reason"]].values.tolist() == [["preassigned-drs", "default-drs", ""]]
    contrasts = pd.read_csv(out / "contrasts.csv")
    mine = contrasts[contrasts["a"] == "preassigned-drs"]
    assert len(contrasts) == 3 * 7 + 7 and len(mine) == 7 and set(mine["b"]) == {"default-drs"}
    assert (mine["decision"] == "not in the plan: estimated, not decided").all()
    assert mine.set_index("metric").loc["performance", "diff"] > 0.1
    assert len(pd.read_csv(out / "study_table_formatted.csv")) == 15  # the study table has both
    closing = code_cells(nb)[-1].outputs[-1]["data"]["text/html"]
    assert "preassigned-drs − default-drs (its Default twin): " in closing


def test_ablations_shows_each_members_contribution_from_the_replays(tmp_path, scores_file):
    """The contributions section on replays of a session whose truth is known by construction
    (`helpers.contribution_replays`): R's bar above 0, D's at 0, the chart stored and shown."""
    forks = record_replays(record_answer_parent(tmp_path / "runs"), tmp_path / "forks", [0, 1])
    out = tmp_path / "analysis"
    nb = execute("ablations", tmp_path, experiment="", results=str(tmp_path), scores_file=str(scores_file),
                 out=str(out), forks=str(forks))
    table = pd.read_csv(out / "contributions.csv").set_index(["member", "metric"])
    assert table.loc[("R", "delivered"), "contribution"] == 1.0 and table.loc[("D", "delivered"), "contribution"] == 0
    assert (out / "contributions.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    texts = [o.get("text", "") for c in code_cells(nb) for o in c.outputs if o.get("output_type") == "stream"]
    assert any("1 session(s), 6 continuation(s)" in t and "the chart shows delivered" in t for t in texts)
