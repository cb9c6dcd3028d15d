"""A person plays the AI agent's seat on the participant page, in a real browser, to a submitted
hypothesis (issue 44).

`colabkit seat --seat ai` writes the participant's notebook and prints the Voilà command; the
test serves that command as printed (the simulated D is the scripted model double) and, as the
person in the AI's seat, runs a cell, writes the hypothesis and finishes through the page's
form. The stored session must end `finish` with that hypothesis and name the person, not a
model, for the AI's seat. And the person must have seen exactly what the AI's model would
have: the same session played with a scripted model in the AI's seat (the twin, the same
steps) sends that model, step by step, the very text the page showed (its folded plain-text
prompt), and each person step's recorded observation hash is that text's.
Setup as in `test_browser_seat.py` (the `chromium` fixture is in conftest.py, Voilà in helpers/voila.py).
"""

from __future__ import annotations

import asyncio
import json

import pytest
from helpers.lab import free_port
from helpers.scripted import use_scripted
from helpers.stored_session import WAIT, say
from helpers.voila import voila_pages

from colabkit.cli import main
from colabkit.hashing import sha256_hex
from colabkit.llm import Gateway
from colabkit.runner import build_spec
from colabkit.session import Event, ListSink, SessionSettings, SessionSpec, run_session
from colabkit.session.seats.react import step_messages
from colabkit.store import load_sessions
from colabkit.tasks import load_tasks
from colabkit.team import variant

pytestmark = pytest.mark.slow
TASK_ID, VARIANT, SEED, PARTICIPANT = "demo_archaeology/0/0", "default-d", 0, "p-ai"
CODE = "print('AI-PERSON-CELL', 6 * 7)"
HYPOTHESIS = "Axes are most frequent in hoards of the 12th century BCE."
REASON = "the counts support it"
D_SCRIPT = [say("send_message", "D-MSG: the hoard counts are in the first file.", "ai")]  # then waits
SETTINGS = {"action_budget": 5, "max_rounds": 10}


def _printed_voila_command(out: str) -> str:
    return next(line.split(": ", 1)[1] for line in out.splitlines() if "participant page (Voila" in line)


def _twin_prompts(tmp_path) -> tuple[list[str], SessionSpec]:
    """The AI's prompts when a scripted model takes the person's steps in the same session."""
    model = use_scripted({"ai": [say("execute_code", CODE, thought=""), say("edit_result", HYPOTHESIS, thought=""),
                                 say("finish", REASON, thought="")], "D": list(D_SCRIPT)}, default=WAIT)
    spec = build_spec(TASK_ID, VARIANT, SEED, models={"ai": "scripted/ai", "D": "scripted/D"},
                      settings=SessionSettings(**SETTINGS))
    asyncio.run(run_session(spec, load_tasks().get(TASK_ID), gateway=Gateway(), sink=ListSink(),
                            workdir_root=tmp_path / "twin"))
    return [c["messages"][-1]["content"] for c in model.calls if c["name"] == "ai"], spec


def test_a_person_plays_the_ai_seat_on_the_participant_page_to_a_submitted_hypothesis(chromium, tmp_path, capsys):
    from playwright.sync_api import expect, sync_playwright

    with voila_pages(tmp_path) as (_, start, results, _servers):
        pages = tmp_path / "pages"
        assert main(["seat", "--task", TASK_ID, "--variant", VARIANT, "--seat", "ai", "--participant", PARTICIPANT,
                     "--model", "scripted/D", "--seed", str(SEED), "--out", str(results), "--folder", str(pages),
                     "--port", str(free_port()), *(f"--{k.replace('_', '-')}={v}" for k, v in SETTINGS.items())]) == 0
        url = start(_printed_voila_command(capsys.readouterr().out), pages, {"D": D_SCRIPT})
        shown: list[str] = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(url, timeout=120_000)
                status, form = page.locator(".ck-status"), page.locator(".ck-form")

                def step(number: int, action: str, box: str, text: str) -> None:
                    expect(status).to_contain_text(f"(question {number})", timeout=180_000)
                    expect(status).to_contain_text("your step")
                    shown.append(page.locator(".ck-view pre.ck-prompt").text_content() or "")
                    form.locator("select").first.select_option(action)
                    field = form.locator(box)
                    expect(field).to_be_visible(timeout=30_000)
                    field.fill(text)
                    form.locator("button", has_text="Submit").click()

                expect(status).to_contain_text("(question 1)", timeout=180_000)
                assert "finish" in form.locator("select").first.inner_text()  # the AI's own action, offered
                step(1, "execute_code", "textarea[placeholder='Python for the shared kernel']", CODE)
                expect(page.locator(".ck-view .ck-notebook")).to_contain_text("AI-PERSON-CELL 42", timeout=180_000)
                step(2, "edit_result", "textarea[placeholder^='at most']", HYPOTHESIS)
                expect(page.locator(".ck-view .ck-editor")).to_contain_text(HYPOTHESIS, timeout=180_000)
                step(3, "finish", "textarea[placeholder^='at most']", REASON)
                expect(page.locator(".ck-ended")).to_contain_text("The session has ended (finish)", timeout=180_000)
            finally:
                browser.close()

    folder = next(p for p in results.iterdir() if (p / "session.json").is_file())
    record = json.loads((folder / "session.json").read_text())
    assert record["ended_by"] == "finish" and record["final_hypothesis"] == HYPOTHESIS
    assert record["spec"]["models"]["ai"]["model"] == f"person/{PARTICIPANT}"  # the person, not a model
    assert load_sessions(results)["person_seats"].tolist() == ["ai"]
    events = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    ai = [e for e in events if e.participant == "ai"]
    assert [e.action for e in ai] == ["execute_code", "edit_result", "finish"]
    assert all(e.person is not None and e.person.participant_id == PARTICIPANT and not e.llm_calls for e in ai)
    assert any(e.participant == "D" and e.action == "send_message" for e in events)  # the simulated D took part

    twin, spec = _twin_prompts(tmp_path)
    assert spec.profile.model_dump(mode="json") == record["spec"]["profile"]  # the same profile: a like-for-like twin
    assert shown == twin  # what the page showed is what the AI's model is sent, step by step
    persona = variant(VARIANT).persona("ai").prompt
    assert [e.person.observation_hash for e in ai] == [sha256_hex(step_messages(persona, text)) for text in shown]
