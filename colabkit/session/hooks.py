"""The interface between the engine and what may steer a running session from outside.

The engine owns these protocols and knows nothing else of its hooks; a hook (today the
counterfactual fork's replay, `colabkit.session.fork.ForkReplay`) implements `ReplayHook` and
sees the running session only as a `SessionState`. So neither imports the other: the fork
sits beside the engine, not around or under it.
"""

from __future__ import annotations

from typing import Any, Protocol

from colabkit.session.actions import StepSchema
from colabkit.session.events import EventLog, EventSink
from colabkit.session.settings import SessionSpec
from colabkit.session.structure.base import Board, Composition
from colabkit.session.structure.gating import Gatekeeper
from colabkit.team import VariantConfig
from colabkit.workspace import CellResult, Workspace


class SessionState(Protocol):
    """What a hook may read and replace of a running session (at its fork point)."""

    spec: SessionSpec
    variant: VariantConfig
    board: Board  # the structures' records: the frozen memory, the living one, the gates in force
    structure: Composition  # the structures in play (a fork may switch them off: `fork.members`)
    requests: Gatekeeper  # the held requests (a fork switching the structure off expires the open ones)

    @property
    def log(self) -> EventLog: ...

    @property
    def ws(self) -> Workspace: ...

    def emit(self, participant: str, action: str, status: Any, **fields: Any) -> None: ...


class ReplayHook(Protocol):
    """What the engine calls on a fork's replay: its log's identity and sink, a check before
    each turn, whether a participant is seated (a fork may empty a seat from its point), a
    replacement step at the fork point, and a check of each prefix cell."""

    session_id: str

    def verifying(self, sink: EventSink) -> EventSink: ...

    def before_turn(self, session: SessionState) -> None: ...

    def seated(self, participant: str) -> bool: ...

    def step_for(self, participant: str) -> StepSchema | None: ...

    def checked_cell(self, ws: Workspace, cell: CellResult) -> CellResult: ...
