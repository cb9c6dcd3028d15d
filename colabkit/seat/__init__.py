"""A real person takes a seat: D or R (or both) played in JupyterLab or on a Voilà page.

The session layer holds the person as a policy (`colabkit.session.seats.policy.PersonSeat`: the same
questions a model answers, the same log, answers cached like a model's); this layer is its
presentation and its entry points, beside the notebooks: the persona's observation rendered
for a person (`view`), the form generated from the answer's schema (`form`), the page that
holds them (`desk`), the session's request in names (`plan`), the process that runs the
session and serves its pages (`host`, over `channel`), a page's seat in it (`launch`), the
participant's notebook copy and questionnaire (`pages`), and replaying a stored session with
a person offline (`replay`). It sits above the runner because a seat session is stored like
any other.
"""

from colabkit.seat.launch import SeatRun, take_seat
from colabkit.seat.pages import (
    QUESTIONS,
    lab_command,
    participant_notebook,
    person_file,
    save_person_record,
    voila_command,
)
from colabkit.seat.plan import SeatPlan, persons_spec, seat_spec
from colabkit.seat.replay import Replay, replay_session, replay_view

__all__ = [
    "QUESTIONS",
    "Replay",
    "SeatPlan",
    "SeatRun",
    "lab_command",
    "participant_notebook",
    "person_file",
    "persons_spec",
    "replay_session",
    "replay_view",
    "save_person_record",
    "seat_spec",
    "take_seat",
    "voila_command",
]
