"""A real person takes a seat: D or R played in JupyterLab or on a Voilà page.

The session layer holds the person as a policy (`colabkit.session.seats.policy.PersonSeat`: the same
questions a model answers, the same log, answers cached like a model's); this layer is its
presentation and its entry points, beside the notebooks: the persona's observation rendered
for a person (`view`), the form generated from the answer's schema (`form`), the page that
holds them (`desk`), starting a seat session in a kernel and the questionnaire (`launch`),
and replaying a stored session with a person offline (`replay`). It sits above the runner
because a seat session is stored like any other.
"""

from colabkit.seat.launch import (
    PERSON_FILE,
    QUESTIONS,
    SeatRun,
    participant_notebook,
    save_person_record,
    seat_spec,
    take_seat,
    voila_command,
)
from colabkit.seat.replay import Replay, replay_session, replay_view

__all__ = [
    "PERSON_FILE",
    "QUESTIONS",
    "Replay",
    "SeatRun",
    "participant_notebook",
    "replay_session",
    "replay_view",
    "save_person_record",
    "seat_spec",
    "take_seat",
    "voila_command",
]
