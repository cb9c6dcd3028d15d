"""A person plays D in a real JupyterLab, in a real headless browser, and the session replays.

A JupyterLab server is started on a copy of `take_a_seat.ipynb` parameterised for the
scenario in `helpers.seat_scenario` (scaffolded-dr on a demo task; the AI agent and R are
scripted models, served in the notebook's kernel by the scripted provider plugin; the
workspace kernel is real; the session itself runs in the session host the page's kernel
starts). Debian's chromium, driven by playwright through its executable
path (never `playwright install`), runs all cells and then, as the person, writes a memory
proposal, ratifies the draft, sends a message, runs a cell and approves the request addressed
to D, by filling the widget forms and clicking Submit. The stored log must have those person
events with their fields, and replaying the session offline must give identical events.
On Voilà participant pages (served as `colabkit seat` prints): a participant reloads the page
mid-session, closes it and opens it again, and carries on (what it shows holds no Python
dict); once the session has ended and the page is closed, its kernel and the
session host are gone (the culling time set to seconds); and two people play D and R from two
pages to the session's end (the one proposing later sees the earlier proposals laid out).
Setup as in `test_browser_explorer.py` (the `chromium` fixture is in conftest.py, the server in helpers/lab.py).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

import nbformat
import pytest
from helpers import seat_scenario as sc
from helpers.lab import run_all_cells, start_lab
from helpers.scripted import use_scripted
from helpers.scripted_plugin import subprocess_env
from helpers.voila import voila_pages

from colabkit.seat import replay_session
from colabkit.session import Event

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "take_a_seat.ipynb"
# Voilà's culling of a closed page's kernel, seconds here (minutes by default). Voilà counts a
# page's kernel as idle from the end of the notebook's execution until the page's websocket
# connects, which under the whole suite's load took over 10 s: a shorter cull killed a page's
# kernel before its page connected (its clicks then reached nothing). Only the test that
# watches the culling shortens it; the others serve as `colabkit seat` prints.
CULL_S = 30
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
    try:
        with start_lab(workdir, tmp_path / "lab.log", env=env) as base:
            yield base, results
    finally:
        sc.stop_hosts(results)


def _stored_person_steps(results: Path) -> tuple[Path, list[Event]]:
    """The stored session under `results` and its person events."""
    folder = next(p for p in results.iterdir() if (p / "session.json").is_file())
    events = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    return folder, [e for e in events if e.person is not None]


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

            _turn(page, expect, 4, "your step")  # a decision step, before its own step of the round
            expect(page.locator(".ck-view .ck-requests")).to_contain_text("req-1", timeout=30_000)
            form.locator("select").first.select_option("approve")
            _fill(form.locator("textarea[placeholder^='at most']"), sc.APPROVAL, expect)
            submit.click()

            _turn(page, expect, 5, "your step")
            form.locator("select").first.select_option("execute_code")
            _fill(form.get_by_placeholder("Python for the shared kernel"), sc.CODE, expect)
            submit.click()

            expect(page.locator(".ck-ended")).to_contain_text("The session has ended (finish)", timeout=180_000)
            expect(page.locator(".ck-questionnaire")).to_be_visible()
        finally:
            browser.close()

    folder, person = _stored_person_steps(results)
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
def voila(tmp_path):
    """Serve participant pages as `colabkit seat` prints (a notebook copy per person, a Voilà each)."""
    with voila_pages(tmp_path) as (serve, _, results, servers):
        yield serve, results, servers


def _seat_parameters(seat: str, participant: str, **extra) -> dict:
    return {"task": sc.TASK_ID, "variant": sc.VARIANT, "seat": seat, "seed": sc.seed(), "participant_id": participant,
            "action_budget": 10, "max_rounds": 10, **extra}


def _resume(page, expect, number: int, what: str) -> None:
    """After a reload or a reopen: the page is back on question `number`, without asking."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        _turn(page, expect, number, what)
    except PlaywrightTimeout:
        raise AssertionError(f"after the reload the page shows: {page.locator('.ck-status').inner_text()}") from None


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].split()[0] != "Z"
    except OSError:
        return False


def _kernels_of(server_pid: int) -> list[int]:
    """The live kernel processes a Voilà server started (its children running ipykernel)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().split(") ")[-1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == server_pid and fields[0] != "Z" and b"ipykernel" in cmdline:
            found.append(int(stat.parent.name))
    return found


def _host_pids(results: Path) -> list[int]:
    """The session hosts serving `results` (by the pid file beside their plan)."""
    import tempfile

    pids = []
    for plan_file in Path(tempfile.gettempdir()).glob("colabkit-seat-*/plan.json"):
        try:
            if json.loads(plan_file.read_text())["out"] == str(results.resolve()):
                pids.append(int(plan_file.with_name("host.pid").read_text()))
        except (OSError, ValueError, KeyError):
            pass
    return pids


def _gone(pids: list[int], seconds: float) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while any(_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def test_a_participant_reloads_and_reopens_the_voila_page_and_nothing_outlives_the_session(chromium, voila):
    from playwright.sync_api import expect, sync_playwright

    serve, results, servers = voila
    url = serve({**_seat_parameters(sc.SEAT, sc.PARTICIPANT), "models": sc.models()}, sc.scripts(), cull_s=CULL_S)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url, timeout=120_000)
            submit = page.locator(".ck-form button", has_text="Submit")
            _turn(page, expect, 1, "your memory proposal")
            content = page.content()
            assert "take_seat(" not in content and "Run all cells" not in content  # no code, no researcher text
            assert "Welcome" in content
            briefing = page.locator(".ck-view .ck-seat pre").first  # words wrap whole, never "data_chan ging"
            assert briefing.evaluate("e => getComputedStyle(e).wordBreak") == "normal"
            assert "{'" not in page.locator(".ck-view").inner_text()  # no raw Python dict
            hosts = _host_pids(results)
            assert len(hosts) == 1 and _alive(hosts[0]) and _kernels_of(servers[0][0].pid)  # what must stop later
            for i, box in enumerate(page.locator(".ck-form textarea").all()):
                box.fill(f"PERSON-SLOT-{i}")
            submit.click()
            _turn(page, expect, 2, "your ratification")

            page.reload(timeout=120_000)  # mid-session: the same question comes back, not a new session
            _resume(page, expect, 2, "your ratification")
            expect(page.locator(".ck-view")).to_contain_text("Consolidated memory")
            assert "{'" not in page.locator(".ck-view").inner_text()
            submit.click()

            form = page.locator(".ck-form")
            _turn(page, expect, 3, "your step")
            form.locator("select").first.select_option("send_message")
            _fill(form.locator("textarea[placeholder^='at most']"), sc.MESSAGE, expect)
            submit.click()
            _turn(page, expect, 4, "your step")
            page.close()  # closed without its unload handler (its kernel lives on until culled), opened again
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url, timeout=120_000)
            _resume(page, expect, 4, "your step")
            submit = page.locator(".ck-form button", has_text="Submit")
            form = page.locator(".ck-form")
            expect(page.locator(".ck-view .ck-chat")).to_contain_text(sc.MESSAGE)  # the view so far is back
            form.locator("select").first.select_option("approve")  # a decision step
            _fill(form.locator("textarea[placeholder^='at most']"), sc.APPROVAL, expect)
            submit.click()
            _turn(page, expect, 5, "your step")
            form.locator("select").first.select_option("execute_code")
            _fill(form.get_by_placeholder("Python for the shared kernel"), sc.CODE, expect)
            submit.click()
            expect(page.locator(".ck-ended")).to_contain_text("The session has ended (finish)", timeout=180_000)
            expect(page.locator(".ck-questionnaire")).to_be_visible()

            page.reload(timeout=120_000)  # a visit after the end: its end and the questionnaire
            expect(page.locator(".ck-ended")).to_contain_text("The session has ended (finish)", timeout=120_000)
            expect(page.locator(".ck-questionnaire")).to_be_visible()
            page.close()
        finally:
            browser.close()
    server = servers[0][0]
    assert _gone(hosts, 30), "the session host outlived its session"
    assert _gone(_kernels_of(server.pid), CULL_S * 3 + 30), f"page kernels left: {_kernels_of(server.pid)}"

    _, person = _stored_person_steps(results)
    assert [e.action for e in person if e.action != "wait"] == list(sc.PLAN)
    assert sum(1 for p in results.iterdir() if (p / "session.json").is_file()) == 1  # one session, resumed


def _play(page, state: dict) -> bool:
    """Answer the page's question if it shows a new one: slots, accept, approve a request, else wait."""
    status = page.locator(".ck-status").inner_text()
    asked = re.search(r"Your turn .*\(question (\d+)\)", status)
    if asked is None or int(asked.group(1)) <= state["done"]:
        return False
    form = page.locator(".ck-form")
    if "memory proposal" in status:
        view = page.locator(".ck-view")
        assert "{'" not in view.inner_text()  # proposals read as text, never as a Python dict
        for i, box in enumerate(form.locator("textarea").all()):
            box.fill(f"{state['seat']}-SLOT-{i}")
    elif "your step" in status:
        if form.locator("select").first.locator("option", has_text="approve").count():  # a decision step
            form.locator("select").first.select_option("approve")
            box = form.locator("textarea[placeholder^='at most']")
            box.wait_for(state="visible", timeout=30_000)
            box.fill(f"{state['seat']} checked it")
        else:
            form.locator("select").first.select_option("wait")
    form.locator("button", has_text="Submit").click()
    # done only once the page says it was sent (its status leaves this question: "Sent", then the
    # next question): a click the kernel never saw, or a form filled before all of its boxes were
    # drawn (both seen under load), is answered again next time
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if form.locator(".ck-invalid").count():
            state["invalid"] = form.locator(".ck-invalid").first.inner_text()
            return True
        now = re.search(r"Your turn .*\(question (\d+)\)", page.locator(".ck-status").inner_text())
        if now is None or now.group(1) != asked.group(1):
            state["done"] = int(asked.group(1))
            return True
        time.sleep(0.2)
    return True


def test_d_and_r_played_by_two_people_from_two_pages_finish_a_session(chromium, voila):
    from playwright.sync_api import expect, sync_playwright

    serve, results, _ = voila
    persons = {"D": "p-d", "R": "p-r"}
    models = {"ai": "scripted/ai"}
    scripts = {"ai": sc.scripts()["ai"]}
    urls = {seat: serve({**_seat_parameters(seat, who, persons=persons), "models": models}, scripts)
            for seat, who in persons.items()}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            pages = {seat: browser.new_page(viewport={"width": 1400, "height": 1000}) for seat in persons}
            for seat, page in pages.items():
                page.goto(urls[seat], timeout=120_000)
            states = {seat: {"seat": seat, "done": 0} for seat in persons}
            deadline = time.monotonic() + 300  # a passing run takes under a minute, under load too
            while not all(page.locator(".ck-ended").count() for page in pages.values()):
                assert time.monotonic() < deadline, (states, {s: (pg.locator(".ck-status").inner_text(),
                                                                  pg.locator(".ck-form").all_inner_texts())
                                                              for s, pg in pages.items()})
                if not any(_play(pages[seat], states[seat]) for seat in persons):
                    time.sleep(0.5)
            for page in pages.values():
                expect(page.locator(".ck-ended")).to_contain_text("The session has ended")
                expect(page.locator(".ck-questionnaire")).to_be_visible()
        finally:
            browser.close()
    # whether a person is shown another member's proposal depends on the seed's build order; the
    # layout of a shown one is tests/test_seat.py's (`_render_proposal`), no raw dict is checked above

    _, person = _stored_person_steps(results)
    assert {(e.participant, e.person.participant_id) for e in person} == {("D", "p-d"), ("R", "p-r")}
    assert sorted((e.participant, e.action) for e in person if e.phase == "build") == [
        ("D", "propose_memory"), ("D", "ratify_memory"), ("R", "propose_memory"), ("R", "ratify_memory")]
    assert any(e.participant in persons for e in person if e.phase == "task")
