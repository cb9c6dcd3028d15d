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


def test_colabkit_seat_takes_the_ai_seat(tmp_path, capsys):
    assert main(["seat", "--task", TASK_ID, "--variant", "default-d", "--seat", "ai", "--participant", "p-ai",
                 "--folder", str(tmp_path), "--out", str(tmp_path / "res")]) == 0
    assert "voila" in capsys.readouterr().out
