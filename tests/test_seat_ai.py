"""A person in the AI agent's seat (issue 44): `colabkit seat --seat ai` plays the AI's role, the
memory build's consolidation included, shown exactly the observation the AI's model would get;
the session is recorded as the person's and replays offline."""

from __future__ import annotations

import asyncio
from typing import Any

from helpers.scripted import use_scripted
from helpers.stored_session import RATIFY, SLOTS, WAIT

from colabkit.cli import main
from colabkit.runner import arecord_session
from colabkit.seat import replay_session, seat_spec
from colabkit.session import Event
from colabkit.session.seats.person import SeatTerms
from colabkit.session.seats.policy import PersonSeat, Presentation, Question
from colabkit.tasks import load_tasks

TASK_ID = "demo_archaeology/0/0"
HYPOTHESIS = "Axes are most frequent in hoards of the 12th century BCE."


class ScriptedPerson:
    """A desk whose person answers at once, by stage: the memory's slots, then an edit and a finish."""

    def __init__(self) -> None:
        self.questions: list[Question[Any]] = []

    def present(self, question: Question[Any]) -> Presentation[Any]:
        self.questions.append(question)
        future = asyncio.get_running_loop().create_future()
        if question.stage in ("propose", "consolidate", "amend"):
            answer: dict[str, Any] = dict(SLOTS)
        else:
            steps = sum(q.stage == "step" for q in self.questions)
            answer = {"thought": "mine", "action": "edit_result", "content": HYPOTHESIS, "to": ""} if steps == 1 \
                else {"thought": "done", "action": "finish", "content": "it is written", "to": ""}
        future.set_result(question.schema.model_validate(answer))
        return Presentation(future=future, rendered_hash=None)

    def withdraw(self, presentation: Presentation[Any], reason: str) -> None:
        raise AssertionError(f"nothing is withdrawn: {reason}")


def test_a_person_plays_the_ai_seat_through_the_build_to_a_submitted_hypothesis(tmp_path):
    task = load_tasks().get(TASK_ID)
    use_scripted({"D": [SLOTS, *RATIFY]}, default=WAIT)
    spec = seat_spec(TASK_ID, "memory-d", "ai", 0, participant_id="p-ai", models={"D": "scripted/D"})
    desk = ScriptedPerson()
    seat = PersonSeat(SeatTerms.model_validate(spec.model_for("ai").extra["seat"]), desk)
    folder = asyncio.run(arecord_session(spec, task, out=tmp_path, seats={"ai": seat}))
    events = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    end = events[-1]
    assert end.args["ended_by"] == "finish" and end.args["final_hypothesis"] == HYPOTHESIS
    ai = [e for e in events if e.participant == "ai"]
    assert {e.action for e in ai} >= {"propose_memory", "consolidate_memory", "edit_result", "finish"}
    assert all(e.person is not None and e.person.participant_id == "p-ai" and not e.llm_calls for e in ai)
    stages = [q.stage for q in desk.questions]
    assert stages[:2] == ["propose", "consolidate"] and stages[2:] == ["step", "step"]
    step = desk.questions[2]
    assert step.observation is not None and step.messages[-1]["content"] == step.observation.render()
    assert "finish" in step.observation.valid_actions  # the AI's own actions, offered to the person in its seat
    assert asyncio.run(replay_session(folder, task=task)).identical


def test_colabkit_seat_takes_the_ai_seat_and_welcomes_and_asks_the_person_as_the_ai(tmp_path, capsys):
    import json

    import nbformat

    from colabkit.seat.pages import AI_SEAT_QUESTIONS, AI_SEAT_WELCOME, QUESTIONS, person_file, questionnaire

    assert main(["seat", "--task", TASK_ID, "--variant", "default-d", "--seat", "ai", "--participant", "p-ai",
                 "--folder", str(tmp_path), "--out", str(tmp_path / "res")]) == 0
    assert "voila" in capsys.readouterr().out
    page = nbformat.read(tmp_path / "seat-p-ai.ipynb", as_version=4)
    assert page.cells[0].source == AI_SEAT_WELCOME and "You play the team's AI agent" in AI_SEAT_WELCOME
    spec = seat_spec(TASK_ID, "default-d", "ai", 0, participant_id="p-ai")
    form = questionnaire(tmp_path, spec, "ai")
    texts = [w.value for w in form.children if type(w).__name__ == "HTML"]
    assert AI_SEAT_QUESTIONS["collaboration"] in texts and QUESTIONS["collaboration"] not in texts
    next(w for w in form.children if getattr(w, "description", "") == "Send answers").click()
    assert json.loads((tmp_path / person_file("ai")).read_text())["questionnaire"]["questions"] == AI_SEAT_QUESTIONS


def _decide_as_the_ai(form, offered: list[tuple[str, ...]]) -> None:
    """The person in the AI's seat, through the real form's widgets: slots, a gate it signs on D's
    edits, a cell; at its decision steps approve D's first edit (and leave the second open); its own
    steps wait for D's second edit, then finish; in the closing pass, reject."""
    if form.question.stage != "step":
        for name, box in form.slots.items():
            box.value = f"ai says: {name}"
        if form.gates:  # the consolidation: the AI signs D's edits of the result
            form.gates[0][0].value, form.gates[0][1].value = "edit_result", "ai"
        form.submit.click()
        return
    obs = form.question.observation
    offered.append(tuple(value for _, value in form.action.options))
    if obs.closing:
        form.action.value, form.request.value, form.text.value = "reject", obs.requests_for_me[0].request_id, "too late"
    elif obs.deciding:  # a decision step at its turn: approve D's first edit, leave the second open
        if "req-1" in obs.open_ids:
            form.action.value, form.request.value, form.text.value = "approve", "req-1", "fits"
        else:
            form.action.value = "wait"
    elif not obs.cells:
        form.action.value, form.code.value = "execute_code", "print('AI-PERSON', 6 * 7)"
    elif "req-2" not in obs.open_ids:  # its own step: wait for D's second edit, then finish
        form.action.value = "wait"
    else:
        form.action.value, form.text.value = "finish", "D's hypothesis is in"
    assert form.try_submit(), form.error.value


def test_the_person_in_the_ai_seat_decides_requests_in_its_turn_and_in_the_closing_pass(tmp_path):
    """Scaffolded-D: the person consolidates a gate it signs (D's edits), approves D's first edit at
    its turn, finishes with D's second open, and rejects it in the closing pass, where the form
    offers decisions only. The session ends `finish` with the approved edit, applied as D's."""
    from helpers.stored_session import ai_first_seed

    from colabkit.seat.desk import WidgetDesk
    from colabkit.session.events import CLOSING_PASS

    task = load_tasks().get(TASK_ID)
    say = lambda action, content: {"thought": "", "action": action, "content": content, "to": ""}  # noqa: E731
    use_scripted({"D": [{**SLOTS, "gates": []}, *RATIFY, say("edit_result", "D-H1"), say("edit_result", "D-H2")]},
                 default=WAIT)
    spec = seat_spec(TASK_ID, "scaffolded-d", "ai", ai_first_seed(("ai", "D")), participant_id="p-ai",
                     models={"D": "scripted/D"})
    desk, offered = WidgetDesk(), []

    async def run():
        seat = PersonSeat(SeatTerms.model_validate(spec.model_for("ai").extra["seat"]), desk)
        session = asyncio.ensure_future(arecord_session(spec, task, out=tmp_path, seats={"ai": seat}))
        answered = None
        while not session.done():
            if desk.current is not None and desk.current is not answered:
                answered = desk.current
                _decide_as_the_ai(answered, offered)
            await asyncio.sleep(0.01)
        return await session

    folder = asyncio.run(run())
    events = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    decisions = [(e.action, e.request_id, bool(e.args.get(CLOSING_PASS))) for e in events
                 if e.participant == "ai" and e.action in ("approve", "reject")]
    assert decisions == [("approve", "req-1", False), ("reject", "req-2", True)]
    assert offered[-1] == ("approve", "reject")  # the closing pass: decisions only
    assert "finish" in offered[0] and "approve" not in offered[0]
    applied = next(e for e in events if e.action == "edit_result" and e.status == "ok")
    assert (applied.participant, applied.request_id) == ("D", "req-1")
    end = events[-1]
    assert end.args["ended_by"] == "finish" and end.args["final_hypothesis"] == "D-H1"
    assert all(e.person is not None for e in events if e.participant == "ai")
    assert asyncio.run(replay_session(folder, task=task)).identical
