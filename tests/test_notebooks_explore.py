"""The `explore_trajectory` notebook on a session recorded with scripted participants and a real
kernel, and the two analysis notebooks (`ablations`, `explore_trajectory`) under nbval (lax).

Apart from tests/test_notebooks_analysis.py so the test workers (a file each) share the
notebook kernels' time evenly.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.notebooks import code_cells, execute, nbval_lax
from helpers.score_tables import score_table
from helpers.stored_session import record_scaffolded_session

# Notebook kernels and nbval processes: started early (tests/conftest.py orders slow files first).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def scores_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("scores") / "scores.parquet"
    score_table(n_tasks=6, seeds=3).to_parquet(path)
    return path


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
