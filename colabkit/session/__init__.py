"""Sessions: the AI agent and simulated humans solving one task in a shared workspace.

`run_session(spec, task, gateway=..., sink=...)` plays one session (memory build phase if
the variant has one, then ReAct steps in seeded rounds with visibility rules and approval
gating) and emits every event to `sink` as it happens. Pure simulation: persistence is the
store layer's job. A participant is its model unless a person holds its seat (`seats`).
"""

from colabkit.session.actions import Action, StepSchema
from colabkit.session.events import Event, EventSink, ListSink, comparable
from colabkit.session.prompting.observation import Observation
from colabkit.session.run import SessionResult, run_session
from colabkit.session.settings import SessionSettings, SessionSpec

__all__ = [
    "Action",
    "Event",
    "EventSink",
    "ListSink",
    "Observation",
    "SessionResult",
    "SessionSettings",
    "SessionSpec",
    "StepSchema",
    "comparable",
    "run_session",
]
