"""A person in a seat: the policy, its form, its record, its replay, and the refusals.

The person is driven through the real widget forms (values set and Submit clicked from
Python, as a browser would through the comm); the AI agent and R are scripted models and the
kernel is real. The browser test (`test_browser_seat.py`) plays the same scenario in JupyterLab.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import seat_scenario as sc
from helpers.scripted import use_scripted

from colabkit.analysis.trajectory import load_trajectory, render_event
from colabkit.errors import ColabkitError
from colabkit.evaluation.metrics.work import work
from colabkit.llm import ModelConfig
from colabkit.runner import arecord_session, load_experiment, record_session
from colabkit.seat import replay_session, seat_spec
from colabkit.seat.desk import WidgetDesk
from colabkit.seat.form import StepForm
from colabkit.session import Event
from colabkit.session.actions import valid_actions
from colabkit.session.prompting.observation import Observation
from colabkit.session.seats.person import SeatTerms
from colabkit.session.seats.policy import NoPerson, PersonSeat, Presentation, Question
from colabkit.store import load_events, load_sessions
from colabkit.tasks import load_tasks

TASK = load_tasks().get(sc.TASK_ID)


def observation(valid: tuple[str, ...], requests: tuple[str, ...] = (), team=("ai", "D", "R")) -> Observation:
    from colabkit.session.prompting.views import RequestView

    views = tuple(RequestView(request_id=r, proposer="ai", signatory="D", action="edit_result: H", condition="",
                              status="pending", reason="") for r in requests)
    return Observation(participant="D", team=team, names=tuple(team), round=1, actions_left=3, budget_holder="you",
                       query="q", briefing="b", memory=None, gate_rules=None, editor="", messages=(), older_messages=0,
                       cells=(), older_cells=0, activity=(), older_activity=0, requests_for_me=views, my_requests=(),
                       older_requests=0, scratchpad=(), older_thoughts=0, timeline=False, feedback="",
                       valid_actions=valid, standing_actions=valid)


def test_a_shortened_briefing_says_plainly_that_the_person_sees_the_models_cut():
    from colabkit.seat.view import BRIEFING_CUT_NOTE, observation_html
    from colabkit.session.prompting.views import clip
    from colabkit.team.briefing import SHORTENED_NOTE, private_briefing

    note = "This briefing is shortened exactly as the model in this seat gets it"
    assert BRIEFING_CUT_NOTE.startswith(note)
    whole = private_briefing("D", TASK, max_chars=None)
    shortened = private_briefing("D", TASK, max_chars=400)  # as the compact profile cuts it
    assert shortened.endswith(SHORTENED_NOTE)
    for cut in (shortened, clip(whole, 300)):
        assert note in observation_html(observation(("wait",)).model_copy(update={"briefing": cut}))
    assert note not in observation_html(observation(("wait",)).model_copy(update={"briefing": whole}))


def test_the_page_shows_the_gate_rules_section_with_the_held_drafts_of_the_result():
    from colabkit.seat.view import observation_html

    rules = "Gate rules\n- edit_result -> D\nHeld edits of the result, not yet in effect: ...\n- req-1, ai's edit"
    page = observation_html(observation(("approve", "reject"), ("req-1",)).model_copy(update={"gate_rules": rules}))
    assert '<div class="ck-gates"><h4>Gate rules</h4><pre>- edit_result -&gt; D\nHeld edits' in page
    assert page.index("ck-gates") < page.index("ck-editor")


def step_form(obs: Observation, schema: type | None = None) -> tuple[StepForm, Presentation]:
    from colabkit.session.actions import StepSchema

    loop = asyncio.new_event_loop()
    question = Question("D", "step", ModelConfig(model="person/x"), [], schema or StepSchema, 0, obs.team, obs)
    presentation: Presentation = Presentation(future=loop.create_future(), rendered_hash="h")
    return StepForm(question, presentation, loop), presentation


@pytest.mark.parametrize(("team", "has_requests", "decisions_only"), [
    (("ai", "D", "R"), False, False), (("ai", "D", "R"), True, False), (("ai", "D", "R"), True, True),
    (("ai", "D"), False, True), (("ai", "D"), True, False)])
def test_the_form_offers_exactly_the_valid_actions_of_the_observation(team, has_requests, decisions_only):
    valid = valid_actions("D", team, has_requests=has_requests, decisions_only=decisions_only)
    form, _ = step_form(observation(valid, ("req-2",) if has_requests else (), team))
    assert tuple(value for _, value in form.action.options) == valid
    assert form.request.options == (("req-2",) if has_requests else ())
    assert form.to.options == ("all", *(p for p in team if p != "D"))


def test_invalid_input_is_shown_and_recorded_never_sent():
    valid = valid_actions("D", ("ai", "D", "R"), has_requests=True)
    form, presentation = step_form(observation(valid, ("req-2",)))
    form.action.value = "send_message"  # no text
    form.submit.click()
    form.action.value = "execute_code"
    form.code.value = "x" * 600  # past the schema's bound
    form.submit.click()
    assert not presentation.future.done()
    assert [a.fields["action"] for a in presentation.invalid_attempts] == ["send_message", "execute_code"]
    assert "needs the message text" in presentation.invalid_attempts[0].error
    assert "Not sent" in form.error.value
    form.action.value = "approve"
    form.text.value = "fine"
    assert form.try_submit()
    presentation.future.get_loop().run_until_complete(asyncio.sleep(0))
    assert presentation.future.result().action == "approve" and presentation.future.result().to == "req-2"
    assert presentation.first_interaction is not None and len(presentation.invalid_attempts) == 2


def test_hiding_a_field_for_the_chosen_action_hides_only_that_field():
    valid = valid_actions("D", ("ai", "D", "R"), has_requests=False)
    form, _ = step_form(observation(valid, ()))
    form.action.value = "wait"  # no text field for a wait: the note and the error line stay
    assert form.text.layout.display == "none"
    assert form.note.layout.display != "none" and form.error.layout.display != "none"
    widths = [form.text.layout, form.note.layout, form.error.layout]
    assert len({id(layout) for layout in widths}) == 3  # no layout model shared between widgets


def test_a_submit_handler_that_fails_says_so_on_the_form_and_sends_nothing(monkeypatch):
    valid = valid_actions("D", ("ai", "D", "R"), has_requests=False)
    form, presentation = step_form(observation(valid, ()))

    def broken(fields):
        raise RuntimeError("the schema went missing")

    monkeypatch.setattr(form, "validate", broken)
    form.action.value = "wait"
    form.submit.click()  # ipywidgets would log the error where no person sees it
    assert "ck-invalid" in form.error.value and "RuntimeError: the schema went missing" in form.error.value
    assert not presentation.future.done() and not form.submit.disabled


def test_in_a_dynamic_team_the_form_proposes_and_decides_memory_updates():
    from colabkit.session.seats.react import step_schema

    valid = valid_actions("D", ("ai", "D", "R"), has_requests=True, added=("propose_memory_update",))
    obs = observation(valid, ("req-2",)).model_copy(
        update={"updates_for_me": ("upd-1 from ai: plan: 'x' -- waiting for D, R",)})
    form, presentation = step_form(obs, step_schema(200, 500, valid))
    assert "propose_memory_update" in [value for _, value in form.action.options]
    assert form.request.options == ("req-2", "upd-1")  # both kinds of decision in one menu
    form.action.value = "propose_memory_update"
    assert form.slot.layout.display == "" and form.to.layout.display == "none"
    form.slot.value, form.text.value = "evidence_standards", "cite a table"
    assert form.try_submit()
    presentation.future.get_loop().run_until_complete(asyncio.sleep(0))
    step = presentation.future.result()
    assert (step.action, step.to, step.content) == ("propose_memory_update", "evidence_standards", "cite a table")


# --- a whole session with a person in D --------------------------------------------------------


def play(form) -> None:
    """The person's side of the scenario (`seat_scenario.PLAN`), through the form's widgets."""
    stage = form.question.stage
    if stage == "propose":
        form.submit.click()  # nothing written: refused and recorded
        for name, box in form.slots.items():
            box.value = f"D says: {name}"
    elif stage == "step":
        obs = form.question.observation
        done = {a for a, _ in play.log}  # type: ignore[attr-defined]
        if obs.deciding:  # a decision step: approve what is open, or leave it open
            form.action.value = "approve" if obs.requests_for_me else "wait"
            if obs.requests_for_me:
                form.text.value = sc.APPROVAL
        elif "send_message" not in done:
            form.action.value = "send_message"
            form.submit.click()  # no text yet: refused and recorded
            form.text.value = sc.MESSAGE
        elif "execute_code" not in done:
            form.action.value = "execute_code"
            form.code.value = sc.CODE
        else:
            form.action.value = "wait"
        play.log.append((form.action.value, obs.round))  # type: ignore[attr-defined]
    form.submit.click()


async def drive(desk: WidgetDesk, session: asyncio.Task) -> None:
    seen = None
    while not session.done():
        form = desk.current
        if form is not None and form is not seen and not form.presentation.future.done():
            seen = form
            play(form)
        await asyncio.sleep(0.01)


@pytest.fixture(scope="module")
def person_session(tmp_path_factory):
    use_scripted(sc.scripts(), default=sc.DEFAULT)
    out = tmp_path_factory.mktemp("seat") / "results"
    spec = seat_spec(sc.TASK_ID, sc.VARIANT, sc.SEAT, sc.seed(), participant_id=sc.PARTICIPANT, models=sc.models())
    terms = SeatTerms.model_validate(spec.model_for(sc.SEAT).extra["seat"])
    desk = WidgetDesk()
    play.log = []  # type: ignore[attr-defined]

    async def main():
        session = asyncio.ensure_future(arecord_session(spec, TASK, out=out, seats={sc.SEAT: PersonSeat(terms, desk)}))
        await drive(desk, session)
        return await session

    folder = asyncio.run(main())
    return folder, spec


def test_a_person_plays_d_through_the_build_and_the_task_and_the_session_finishes(person_session):
    folder, spec = person_session
    record = json.loads((folder / "session.json").read_text())
    assert record["ended_by"] == "finish" and record["final_hypothesis"] == sc.HYPOTHESIS
    events = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    person = [e for e in events if e.person is not None]
    assert {e.participant for e in person} == {"D"}
    assert [e.action for e in person if e.action != "wait"] == list(sc.PLAN)
    assert all(e.actor_kind == "person" for e in person)
    assert all(e.actor_kind == "model" for e in events if e.participant in ("ai", "R"))
    message = next(e for e in person if e.action == "send_message")
    assert message.args == {"text": sc.MESSAGE, "to": None} and message.status == "ok"
    cell = next(e for e in person if e.action == "execute_code")
    assert cell.status == "ok" and "PERSON-CELL 42" in cell.result
    approval = next(e for e in person if e.action == "approve")
    assert approval.decision == "approved" and approval.decision_reason == sc.APPROVAL
    applied = next(e for e in events if e.action == "edit_result" and e.status == "ok")
    assert applied.participant == "ai" and applied.request_id == approval.request_id
    propose = next(e for e in person if e.action == "propose_memory")
    assert propose.args["plan"] == "D says: plan" and propose.phase == "build"
    for event in person:
        step = event.person
        assert step.participant_id == sc.PARTICIPANT and step.rendered_hash and len(step.observation_hash) == 64
        assert step.shown.monotonic <= step.first_interaction.monotonic <= step.submitted.monotonic
        assert step.shown.wall <= step.submitted.wall and not step.timed_out and step.fallback is None
    assert len({e.person.observation_hash for e in person}) == len(person)  # each acted on its own view
    refused = {e.action: len(e.person.invalid_attempts) for e in person}
    assert refused["propose_memory"] == 1 and refused["send_message"] == 1 and refused["execute_code"] == 0
    assert not any(e.action == "send_message" and not e.args.get("text") for e in events)  # never sent


def test_downstream_tables_mark_persons(person_session):
    folder, _ = person_session
    sessions, events = load_sessions(folder.parent), load_events(folder.parent)
    assert sessions["person_seats"].tolist() == ["D"]
    kinds = events.groupby("participant")["actor_kind"].agg(set).to_dict()
    assert kinds == {"D": {"person"}, "ai": {"model"}, "R": {"model"}, "system": {"system"}}
    stored = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    counted = work(stored, ("ai", "D", "R"))  # the person's cell is human work
    assert counted.by_member["D"] == 1 and counted.w_human == counted.by_member["D"] + counted.by_member["R"]
    traj = load_trajectory(folder.parent, folder.name)
    marked = [render_event(traj, i) for i in traj.events.index]
    assert sum("👤 person" in card for card in marked) == int((events["actor_kind"] == "person").sum()) > 0
    assert all(("👤 person" in card) == (kind == "person") for card, kind in zip(marked, traj.events["actor_kind"]))


def test_replaying_the_session_offline_gives_identical_events(person_session, socket_guard):
    folder, _ = person_session
    replay = asyncio.run(replay_session(folder, task=TASK))
    assert replay.identical and len(replay.replayed) == len(replay.stored)
    assert not socket_guard


# --- timeouts, refusals ------------------------------------------------------------------------


@pytest.mark.parametrize("fallback", ["wait", "model"])
def test_a_timeout_takes_the_logged_fallback_and_replays_without_waiting(tmp_path, fallback):
    from helpers.stored_session import say

    use_scripted({"ai": [say("execute_code", "print(1)"), say("wait"), say("finish", "done")],
                  "persona": [say("send_message", "FALLBACK-MSG", "ai")]}, default=sc.DEFAULT)
    spec = seat_spec(sc.TASK_ID, "default-d", "D", 0, participant_id="p-slow",
                     models={"ai": "scripted/ai", "D": "scripted/persona"}, timeout_s=0.3, fallback=fallback)
    terms = SeatTerms.model_validate(spec.model_for("D").extra["seat"])
    desk = WidgetDesk()  # nobody answers
    folder = asyncio.run(arecord_session(spec, TASK, out=tmp_path, seats={"D": PersonSeat(terms, desk)}))
    events = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    first = next(e for e in events if e.participant == "D")
    assert first.person.timed_out and first.person.fallback == fallback and first.person.submitted is None
    if fallback == "wait":
        assert first.action == "wait" and not first.llm_calls
    else:
        assert first.action == "send_message" and first.args["text"] == "FALLBACK-MSG"
        assert first.llm_calls and first.llm_calls[0].model == "scripted/persona"
    assert "no answer within 0.3 s" in desk.status.value or "ended" in desk.status.value
    replay = asyncio.run(replay_session(folder, task=TASK))
    assert replay.identical


def test_a_spec_with_a_person_seat_and_nobody_at_it_is_refused_in_one_line(tmp_path):
    spec = seat_spec(sc.TASK_ID, "default-d", "D", 0, participant_id="p-1")
    with pytest.raises(NoPerson, match=r"seat D is a person \(person/p-1\): a batch never waits for a person"):
        record_session(spec, TASK, out=tmp_path)
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_a_headless_batch_with_a_person_seat_is_refused_with_one_clear_line(tmp_path):
    config = tmp_path / "exp.yaml"
    config.write_text("name: people\nvariants: [default-d]\nseeds: [0]\nmodels: {D: person/p-017}\n")
    with pytest.raises(ColabkitError, match="person seats: a batch never waits for a person"):
        load_experiment(config)
    done = subprocess.run([sys.executable, "-m", "colabkit", "batch", str(config)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120, env=_env())
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "a batch never waits for a person" in lines[0]


def test_the_seat_must_be_a_seat_of_the_variant():
    with pytest.raises(ColabkitError, match="seat 'R' is not a seat of default-d: a person plays one of ai, D"):
        seat_spec(sc.TASK_ID, "default-d", "R", 0, participant_id="p-1")
    with pytest.raises(ColabkitError, match="not a seat of single"):
        seat_spec(sc.TASK_ID, "single", "D", 0, participant_id="p-1")
    assert seat_spec(sc.TASK_ID, "single", "ai", 0, participant_id="p-1").model_for("ai").model == "person/p-1"
    with pytest.raises(ColabkitError, match=r"seat participant_id: String should match pattern .*'Jane Doe'"):
        seat_spec(sc.TASK_ID, "default-d", "D", 0, participant_id="Jane Doe")


def test_colabkit_seat_prints_how_to_start_jupyterlab_and_voila(tmp_path):
    done = subprocess.run([sys.executable, "-m", "colabkit", "seat", "--task", sc.TASK_ID, "--variant", "scaffolded-dr",
                           "--seat", "D", "--participant", "p-9", "--folder", str(tmp_path), "--out",
                           str(tmp_path / "res")], capture_output=True, text=True, timeout=120, env=_env())
    assert done.returncode == 0, done.stderr
    assert "-m voila" in done.stdout and "jupyter lab" in done.stdout and "JUPYTER_CONFIG_PATH=" in done.stdout
    copy = tmp_path / "seat-p-9.ipynb"
    assert copy.is_file() and "p-9" in copy.read_text()


def test_colabkit_seat_takes_a_data_root_the_run_settings_and_two_persons_and_writes_under_out(tmp_path):
    import nbformat
    from helpers.env import shared_data

    from colabkit.seat import SeatPlan

    root = shared_data()
    task = "archaeology/3/0"
    done = subprocess.run([sys.executable, "-m", "colabkit", "seat", "--task", task, "--data-root", str(root),
                           "--variant", "scaffolded-dr", "--seat", "D", "--participant", "p-1", "--seat", "R",
                           "--participant", "p-2", "--action-budget", "12", "--max-rounds", "20",
                           "--out", str(tmp_path / "res")], capture_output=True, text=True, timeout=120, env=_env(),
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    pages = sorted((tmp_path / "res" / "pages").iterdir())
    assert [p.name for p in pages] == ["seat-p-1.ipynb", "seat-p-2.ipynb"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]  # nothing written where it was run
    assert "--port=8866" in done.stdout and "--port=8867" in done.stdout  # one page (and link) per person
    plans = []
    for page in pages:
        nb = nbformat.read(page, as_version=4)
        text = "\n".join(c.source for c in nb.cells)
        assert "Run all cells" not in text and "Voil" not in text and "colabkit.store" not in text  # no researcher text
        injected = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
        params: dict = {}
        exec(injected.source, {}, params)
        plans.append(SeatPlan(task=params["task"], variant=params["variant"], seed=params["seed"],
                              persons=params["persons"], out=params["out"], data_root=params["data_root"],
                              settings={"action_budget": params["action_budget"], "max_rounds": params["max_rounds"]}))
        assert params["data_root"] == str(root.resolve())
    assert plans[0].spec().session_id == plans[1].spec().session_id  # both pages join one session
    assert plans[0].spec().settings.action_budget == 12 and plans[0].spec().settings.max_rounds == 20
    assert plans[0].spec().session_id in done.stdout


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}


def test_the_seat_notebook_executed_headless_by_papermill_is_refused(tmp_path):
    import papermill

    with pytest.raises(papermill.PapermillExecutionError) as refused:
        papermill.execute_notebook(str(Path(__file__).resolve().parents[1] / "notebooks" / "take_a_seat.ipynb"),
                                   str(tmp_path / "out.ipynb"), parameters={"out": str(tmp_path / "res")},
                                   kernel_name="python3", progress_bar=False, cwd=str(tmp_path))
    assert refused.value.ename == "ColabkitError"
    assert "executed headless (papermill/nbclient): a batch never waits for a person" in refused.value.evalue
    assert not (tmp_path / "res").exists()


def test_a_timed_out_memory_build_answer_is_missing_and_logged_as_the_persons(tmp_path):
    from helpers.stored_session import SLOTS, say

    use_scripted({"ai": [SLOTS, SLOTS, say("finish", "done")]}, default=sc.DEFAULT)
    spec = seat_spec(sc.TASK_ID, "memory-d", "D", 0, participant_id="p-away", models={"ai": "scripted/ai"},
                     timeout_s=0.2)
    terms = SeatTerms.model_validate(spec.model_for("D").extra["seat"])
    folder = asyncio.run(arecord_session(spec, TASK, out=tmp_path, seats={"D": PersonSeat(terms, WidgetDesk())}))
    events = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    build = [e for e in events if e.participant == "D" and e.phase == "build"]
    assert [(e.action, e.status) for e in build] == [("propose_memory", "failed_step"), ("ratify_memory", "failed_step")]
    assert all(e.person.timed_out and e.person.fallback == "wait" and "no answer within 0.2 s" in e.result
               for e in build)
    frozen = next(e for e in events if e.action == "memory_frozen")
    assert frozen.args["ratification"] == {"D": "failed"}


def test_the_questionnaire_answers_are_stored_with_the_session(person_session):
    from colabkit.seat import QUESTIONS, person_file
    from colabkit.seat.pages import questionnaire

    folder, spec = person_session
    form = questionnaire(folder, spec, "D")
    scales = [w for w in form.children if hasattr(w, "options") and tuple(w.options) == (1, 2, 3, 4, 5)]
    assert len(scales) == len(QUESTIONS)
    for value, scale in enumerate(scales, start=2):
        scale.value = value
    next(w for w in form.children if getattr(w, "description", "") == "Send answers").click()
    stored = json.loads((folder / person_file("D")).read_text())
    assert stored["session_id"] == spec.session_id and stored["terms"]["participant_id"] == sc.PARTICIPANT
    assert stored["questionnaire"]["ratings"] == dict(zip(QUESTIONS, range(2, 2 + len(QUESTIONS))))


def test_the_seat_notebook_is_thin_parameterised_and_committed_clean():
    import nbformat

    nb = nbformat.read(Path(__file__).resolve().parents[1] / "notebooks" / "take_a_seat.ipynb", as_version=4)
    nbformat.validate(nb)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in cells[0].metadata.get("tags", []) and len(cells) == 2
    assert len(cells[1].source.splitlines()) <= 8 and "take_seat(" in cells[1].source and "await" not in cells[1].source
    assert all(not c.outputs and c.execution_count is None for c in cells)


def test_a_build_question_shows_proposals_slot_by_slot_and_gates_in_words_with_full_labels():
    """The build's prompt line carries a proposal's gates as a Python list of dicts; the page
    lays the proposal out as a table and the gates in words. The form's labels are not cut."""
    from helpers.stored_session import SLOTS

    from colabkit.seat.form import ProposeForm
    from colabkit.seat.view import build_html, proposal_html
    from colabkit.session.structure.build_phase import _render_proposal
    from colabkit.team.memory import memory_schema

    schema = memory_schema(True, 300, 3, 80)
    gate = {"action": "edit_result", "signatory": "D", "scope": "all", "note": "D checks"}
    line = _render_proposal("ai", schema(**SLOTS, gates=[gate]), None)  # the prompt's line, as the engine writes it
    assert "{'action'" in line  # what the page used to show
    shown = proposal_html(line)
    assert "{" not in shown and "[" not in shown
    assert "<th>evidence standards</th><td>counts by century</td>" in shown
    assert "edit_result signed by D (scope all): D checks" in shown
    assert proposal_html("not a proposal {'a': 1}") == "<pre>not a proposal {&#x27;a&#x27;: 1}</pre>"  # as it stands
    user = f"# Memory build\nrules\n\n# Proposals so far\n{line}\n\n# Your part now\nPropose."
    question = Question("D", "propose", ModelConfig(model="person/x"), [{"role": "user", "content": user}], schema, 0,
                        ("ai", "D", "R"))
    page = build_html(question)
    assert "ck-proposal" in page and "{&#x27;action" not in page and "Your part now" in page
    loop = asyncio.new_event_loop()
    form = ProposeForm(question, Presentation(future=loop.create_future(), rendered_hash="h"), loop)
    labelled = [w for w in form.inputs if getattr(w, "description", "")]
    assert {w.description for w in labelled} >= {"evidence standards", "signed by", "gate", "scope", "note"}
    assert all(w.style.description_width == "initial" for w in labelled)  # as wide as the label: never cut
    loop.close()
