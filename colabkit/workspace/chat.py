"""Team chat: who said what to whom, and when.

Messages are values (frozen, numbered in posting order) so a session can log them and
replay views later.  A message goes to everyone (`to is None`) or to named participants;
the sender always sees their own messages.  Visibility is decided here, in one place, so
the session engine and the trajectory analysis cannot disagree about who saw what.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict

from colabkit.errors import ColabkitError


class Message(BaseModel):
    """One chat message; `to=None` means the whole team."""

    model_config = ConfigDict(frozen=True)

    index: int
    sender: str
    to: tuple[str, ...] | None
    text: str
    time: float

    def visible_to(self, participant: str) -> bool:
        return self.to is None or participant == self.sender or participant in self.to


class Chat:
    """Append-only message list with per-participant views."""

    def __init__(self, clock: Callable[[], float] = time.time):
        self._clock = clock
        self.messages: list[Message] = []

    def post(self, sender: str, text: str, to: Sequence[str] | None = None) -> Message:
        if not sender:
            raise ColabkitError("a chat message needs a sender")
        recipients = None if to is None else tuple(dict.fromkeys(to))
        if recipients is not None and (not recipients or not all(recipients)):
            raise ColabkitError(f"chat recipients must be named participants or None for all, got {to!r}")
        message = Message(index=len(self.messages), sender=sender, to=recipients, text=text,
                          time=self._clock())
        self.messages.append(message)
        return message

    def visible_to(self, participant: str) -> list[Message]:
        return [m for m in self.messages if m.visible_to(participant)]
