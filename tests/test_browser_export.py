"""Exported sessions in Inspect's own viewer, and the explorer's claim -> cell links, in a real
headless browser (Debian's chromium through the shared `chromium` fixture, tests/conftest.py).

`inspect view` serves an exported folder on a loopback port only (checked on its sockets);
the test opens the log, then the Scaffolded-DR session's sample, and scrolls its transcript
until it has seen the cell (its code and output) and the gate: the request escalated to R
and R's approval with R's reason. The explorer test runs the explorer notebook on the same
scored results and checks its claim list: the supported claim linked to cell 0 and the event
that ran it, the other marked unsupported, and a screenshot of the list showing both marks
in their colours.
"""

from __future__ import annotations

import io
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest
from helpers.env import require
from helpers.lab import free_port, run_all_cells, start_lab, stop
from helpers.scored_results import SUPPORTED, UNSUPPORTED, scored_results

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "explore_trajectory.ipynb"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("browser-export") / "demo"
    scaffolded, _ = scored_results(folder)
    return folder, scaffolded


@contextmanager
def inspect_view(log_dir: Path, log_path: Path):
    """`inspect view` on 127.0.0.1 (a free port) over `log_dir`; its base url."""
    inspect = Path(sys.executable).with_name("inspect")
    require(inspect.is_file(), "inspect_ai not installed: pip install 'colabkit[inspect]'")
    port = free_port()
    with log_path.open("wb") as log:
        server = subprocess.Popen([str(inspect), "view", "start", "--log-dir", str(log_dir), "--host", "127.0.0.1",
                                   "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    with urllib.request.urlopen(base, timeout=2):
                        break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(log_path.read_text(errors="replace")[-3000:]) from None
                    time.sleep(0.5)
            yield base, server.pid
        finally:
            stop(server)


def listening_addresses(pid: int) -> set[str]:
    import psutil

    procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    return {c.laddr.ip for p in procs for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}


def test_inspect_view_shows_an_exported_sample_with_a_cell_and_an_approval(chromium, results, tmp_path):
    from playwright.sync_api import sync_playwright

    from colabkit.export import export_inspect

    folder, scaffolded = results
    export_inspect(folder, tmp_path / "logs")
    with inspect_view(tmp_path / "logs", tmp_path / "view.log") as (base, pid), sync_playwright() as p:
        assert listening_addresses(pid) == {"127.0.0.1"}  # loopback only
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(base, timeout=120_000)
            page.get_by_text("colabkit/demo/scaffolded-dr").click(timeout=60_000)
            page.get_by_text(scaffolded.name).first.click(timeout=60_000)
            page.get_by_text("Transcript", exact=True).first.wait_for(timeout=60_000)
            seen = ""
            for _ in range(80):  # the transcript renders the events in view: scroll through it
                seen += page.inner_text("body")
                if "print(6 * 7)" in seen and "(R)matches the counts" in seen:
                    break
                page.mouse.move(700, 700)
                page.mouse.wheel(0, 700)
                page.wait_for_timeout(250)
            assert "TOOL: EXECUTE_CODE" in seen and "print(6 * 7)" in seen and "\n42" in seen  # the cell, its output
            assert "ESCALATE" in seen  # the edit held for R's signature
            assert "APPROVED\n(R)matches the counts" in seen  # R's approval: approver and reason
        finally:
            browser.close()


@pytest.fixture
def lab(results, tmp_path):
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    folder, scaffolded = results
    workdir = tmp_path / "lab"
    workdir.mkdir()
    nb = parameterize_notebook(load_notebook_node(str(NOTEBOOK)), {"results": str(folder.parent),
                               "experiment_dir": folder.name, "session_id": scaffolded.name})
    nbformat.write(nb, workdir / "explore.ipynb")
    with start_lab(workdir, tmp_path / "lab.log") as (url, token):
        yield f"{url}/lab/tree/explore.ipynb?token={token}", scaffolded


def test_the_explorer_lists_the_claims_linked_to_their_cells(chromium, lab, tmp_path):
    from PIL import Image
    from playwright.sync_api import expect, sync_playwright

    url, scaffolded = lab
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            run_all_cells(page, url)
            claims = page.locator(".ck-session:not(.widget-html-content .ck-session) .ck-claims")
            expect(claims).to_contain_text(scaffolded.name + "-00008", timeout=120_000)
            items = claims.locator(".ck-claim")
            expect(items).to_have_count(2)
            supported = items.filter(has_text=SUPPORTED)
            expect(supported).to_contain_text("✔ supported by cell 0")
            expect(supported).to_contain_text("print(6 * 7)")
            expect(items.filter(has_text=UNSUPPORTED)).to_contain_text("✘ unsupported")
            claims.scroll_into_view_if_needed()
            shot = Image.open(io.BytesIO(claims.screenshot(path=str(tmp_path / "claims.png")))).convert("RGB")
            colours = {rgb for _, rgb in shot.getcolors(maxcolors=1 << 24)}
            near = lambda rgb: any(sum(abs(a - b) for a, b in zip(c, rgb, strict=True)) < 60 for c in colours)  # noqa: E731
            assert near((0x2A, 0x8A, 0x3E)) and near((0xB3, 0x26, 0x1E)), "the ✔ and ✘ marks are not drawn in colour"
        finally:
            browser.close()
