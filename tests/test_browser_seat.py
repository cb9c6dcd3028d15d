"""A person plays D in a real JupyterLab, in a real headless browser, and the session replays.

A JupyterLab server is started on a copy of `take_a_seat.ipynb` parameterised for the
scenario in `helpers.seat_scenario` (scaffolded-dr on a demo task; the AI agent and R are
scripted models, served in the notebook's kernel by the scripted provider plugin; the
workspace kernel is real). Debian's chromium, driven by playwright through its executable
path (never `playwright install`), runs all cells and then, as the person, writes a memory
proposal, ratifies the draft, sends a message, runs a cell and approves the request addressed
to D, by filling the widget forms and clicking Submit. The stored log must have those person
events with their fields, and replaying the session offline must give identical events.
Setup as in `test_browser_explorer.py` (the `chromium` fixture is in conftest.py, the server in helpers/lab.py).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nbformat
import pytest
from helpers import seat_scenario as sc
from helpers.lab import run_all_cells, start_lab
from helpers.scripted import use_scripted
from helpers.scripted_plugin import subprocess_env

from colabkit.seat import replay_session
from colabkit.session import Event

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "take_a_seat.ipynb"
pytestmark = pytest.mark.slow


@pytest.fixture
def seat_lab(tmp_path):
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    results = tmp_path / "results"
    workdir = tmp_path / "lab"
    workdir.mkdir()
    nb = parameterize_notebook(load_notebook_node(str(NOTEBOOK)), {
        "task": sc.TASK_ID, "variant": sc.VARIANT, "seat": sc.SEAT, "seed": sc.seed(), "models": sc.models(),
        "participant_id": sc.PARTICIPANT, "out": str(results), "action_budget": 10, "max_rounds": 10})
    nbformat.write(nb, workdir / "seat.ipynb")
    env = subprocess_env(default=sc.DEFAULT, scripts=sc.scripts())
    with start_lab(workdir, tmp_path / "lab.log", env=env) as base:
        yield base, results


def _fill(box, text: str, expect) -> None:
    """Fill a field once the kernel has shown it for the chosen action (the form's layout is synced)."""
    expect(box).to_be_visible(timeout=30_000)
    box.fill(text)


def _turn(page, expect, number: int, what: str) -> None:
    """Wait until the desk shows question `number` (counted from 1), and that it is `what`."""
    expect(page.locator(".ck-status")).to_contain_text(f"(question {number})", timeout=180_000)
    expect(page.locator(".ck-status")).to_contain_text(what)


def test_a_person_plays_d_in_jupyterlab_and_the_session_replays(chromium, seat_lab):
    from playwright.sync_api import expect, sync_playwright

    (base, token), results = seat_lab
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            run_all_cells(page, f"{base}/lab/tree/seat.ipynb?token={token}")

            submit = page.locator(".ck-form button", has_text="Submit")
            _turn(page, expect, 1, "your memory proposal")
            expect(page.locator(".ck-view")).to_contain_text("Your private briefing")
            for i, box in enumerate(page.locator(".ck-form textarea").all()):
                box.fill(f"PERSON-SLOT-{i}")
            submit.click()

            _turn(page, expect, 2, "your ratification")
            expect(page.locator(".ck-view")).to_contain_text("Consolidated memory")
            submit.click()

            form = page.locator(".ck-form")
            _turn(page, expect, 3, "your step")
            expect(page.locator(".ck-view")).to_contain_text("AI-CELL")  # the AI's cell and its output
            actions = form.locator("select").first
            assert "approve" not in actions.inner_text()  # nothing addressed to D yet
            actions.select_option("send_message")
            form.locator("button", has_text="Submit").click()  # no text: refused, shown, recorded
            expect(form.locator(".ck-invalid")).to_contain_text("needs the message text", timeout=30_000)
            _fill(form.locator("textarea[placeholder^='at most']"), sc.MESSAGE, expect)
            submit.click()

            _turn(page, expect, 4, "your step")
            expect(page.locator(".ck-view .ck-requests")).to_contain_text("req-1", timeout=30_000)
            form.locator("select").first.select_option("execute_code")
            _fill(form.get_by_placeholder("Python for the shared kernel"), sc.CODE, expect)
            submit.click()

            _turn(page, expect, 5, "your step")
            expect(page.locator(".ck-view")).to_contain_text("PERSON-CELL 42")
            form.locator("select").first.select_option("approve")
            _fill(form.locator("textarea[placeholder^='at most']"), sc.APPROVAL, expect)
            submit.click()

            expect(page.locator(".ck-ended")).to_contain_text("The session has ended (finish)", timeout=180_000)
            expect(page.locator(".ck-questionnaire")).to_be_visible()
        finally:
            browser.close()

    folder = next(p for p in results.iterdir() if (p / "session.json").is_file())
    events = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    person = [e for e in events if e.person is not None]
    assert [e.action for e in person if e.action != "wait"] == list(sc.PLAN)
    assert all(e.participant == "D" and e.person.participant_id == sc.PARTICIPANT for e in person)
    for event in person:
        step = event.person
        assert step.rendered_hash and step.submitted is not None and step.first_interaction is not None
        assert step.shown.monotonic <= step.first_interaction.monotonic <= step.submitted.monotonic
    message = next(e for e in person if e.action == "send_message")
    assert message.args["text"] == sc.MESSAGE and len(message.person.invalid_attempts) == 1
    assert "PERSON-CELL 42" in next(e for e in person if e.action == "execute_code").result
    assert next(e for e in person if e.action == "approve").decision == "approved"
    assert json.loads((folder / "session.json").read_text())["ended_by"] == "finish"

    use_scripted(sc.scripts(), default=sc.DEFAULT)  # registered, never asked: every answer is in the cache
    replay = asyncio.run(replay_session(folder))
    assert replay.identical


@pytest.fixture
def voila_page(tmp_path):
    """The participant page: `colabkit seat`'s notebook copy served by Voilà (its printed command)."""
    import shlex
    import subprocess
    import time
    import urllib.error
    import urllib.request

    from helpers.lab import free_port

    from colabkit.seat import participant_notebook, voila_command

    notebook = participant_notebook(tmp_path / "seats", {
        "task": sc.TASK_ID, "variant": sc.VARIANT, "seat": sc.SEAT, "seed": sc.seed(), "models": sc.models(),
        "participant_id": sc.PARTICIPANT, "out": str(tmp_path / "results")})
    port = free_port()
    log = (tmp_path / "voila.log").open("wb")
    server = subprocess.Popen(shlex.split(voila_command(notebook, port)), cwd=notebook.parent, stdout=log,
                              stderr=subprocess.STDOUT, env=subprocess_env(default=sc.DEFAULT, scripts=sc.scripts()))
    try:
        deadline = time.monotonic() + 120
        while True:
            try:  # any answer means it is serving (the page itself would start a session: not asked here)
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/voila/static/", timeout=2):
                    break
            except urllib.error.HTTPError:
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((tmp_path / "voila.log").read_text(errors="replace")[-3000:]) from None
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def test_the_voila_participant_page_shows_the_seat_without_code_and_takes_answers(chromium, voila_page):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(voila_page, timeout=120_000)
            _turn(page, expect, 1, "your memory proposal")
            for i, box in enumerate(page.locator(".ck-form textarea").all()):
                box.fill(f"PERSON-SLOT-{i}")
            page.locator(".ck-form button", has_text="Submit").click()
            _turn(page, expect, 2, "your ratification")  # the answer reached the session through Voilà
            assert "take_seat(" not in page.content()  # no code on the participant page
        finally:
            browser.close()
