"""The trajectory explorer in a real JupyterLab, in a real headless browser.

A JupyterLab server is started on a copy of `explore_trajectory.ipynb` parameterised to a
stored session (scripted participants, real kernel); Debian's `chromium`, driven by playwright
through its executable path (never `playwright install`, which downloads a browser), opens
the notebook, runs all cells, and checks that it opens on the session table with the team
session (not the single-agent sessions that sort first by hash) selected, that the widgets
render and that stepping changes what is shown.

Setup on a fresh machine: the `chromium` fixture (tests/conftest.py) installs Debian's
`chromium` package with apt-get when it is missing and the tests run as root (as the Makefile
does for bubblewrap); elsewhere install it yourself (`apt-get install chromium`, or set
COLABKIT_CHROMIUM to any Chromium binary). Without a browser the test is skipped, except under
CI (`CI` set), where it fails. playwright itself is a test extra (pyproject.toml).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from helpers.lab import run_all_cells, start_lab
from helpers.stored import store_session
from helpers.stored_session import TASK_ID, record_scaffolded_session

from colabkit.store import load_events

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "explore_trajectory.ipynb"
pytestmark = pytest.mark.slow


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server over a folder holding the parameterised explorer notebook."""
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    folder = record_scaffolded_session(tmp_path / "results" / "exp")
    singles: list[str] = []
    while len(singles) < 4 or min(singles) >= folder.name:  # one first by hash: the explorer must still open
        assert len(singles) < 64, "no seed gave a single session whose id sorts first"  # on the team session
        singles.append(store_session(folder.parent, TASK_ID, "single answer", seed=len(singles)).name)
    workdir = tmp_path / "lab"
    workdir.mkdir()
    nb = parameterize_notebook(load_notebook_node(str(NOTEBOOK)),
                               {"results": str(tmp_path / "results")})  # default session_id: its first
    nbformat.write(nb, workdir / "explore.ipynb")
    with start_lab(workdir, tmp_path / "lab.log") as (base, token):
        yield f"{base}/lab/tree/explore.ipynb?token={token}", folder, len(singles)


def test_the_explorer_renders_in_jupyterlab_and_stepping_changes_the_view(chromium, lab):
    from playwright.sync_api import expect, sync_playwright

    url, folder, n_singles = lab
    events = load_events(folder.parent, [folder.name])
    n_all, n_r = len(events), int((events["participant"] == "R").sum())
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            run_all_cells(page, url)

            table = page.locator(".ck-session-table .ck-sessions")  # it opens on the session table
            expect(table).to_be_visible(timeout=120_000)
            expect(table.locator("tbody tr")).to_have_count(1 + n_singles)
            expect(table.locator("tbody tr").first).to_contain_text("scaffolded-dr")  # team sessions first
            expect(table.locator("tr.ck-selected")).to_contain_text(folder.name)  # and the first one selected
            counter = page.locator(".widget-html .ck-step-counter")
            expect(counter).to_have_text(f"step 1 of {n_all}", timeout=120_000)
            step = page.locator(".widget-html .ck-step")
            first = step.inner_text()
            assert "session_start" in first
            expect(page.locator(".widget-dropdown select").first).to_be_visible()
            expect(page.locator(".widget-slider")).to_be_visible()

            page.get_by_role("button", name="next ▶").click()
            expect(counter).to_have_text(f"step 2 of {n_all}", timeout=30_000)
            second = step.inner_text()
            assert second != first and "propose_memory" in second

            page.locator(".widget-dropdown select").nth(2).select_option("R")  # participant filter
            expect(counter).to_have_text(f"step 1 of {n_r}", timeout=30_000)
            assert "R" in step.inner_text() and "propose_memory" in step.inner_text()

            # the kernel-free rendering (the other .ck-session is the widget's "Whole session" tab)
            static = page.locator(".ck-session:not(.widget-html-content .ck-session)")
            expect(static).to_contain_text(folder.name, timeout=60_000)
            expect(static).to_contain_text("AI-THOUGHT: count the hoards first")
        finally:
            browser.close()
