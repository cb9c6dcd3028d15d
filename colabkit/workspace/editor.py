"""The result editor: the team's hypothesis, with every version kept.

Whatever the editor holds when the session ends is the submitted hypothesis, so its
history (who wrote which text, when) is part of the record: it shows how the answer was
reached and who shaped it.  Writes replace the whole text, as in Co-Gym's editor.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from colabkit.errors import ColabkitError


class EditorVersion(BaseModel):
    """One saved text of the editor."""

    model_config = ConfigDict(frozen=True)

    index: int
    author: str
    text: str
    time: float


class Editor:
    """Full-text versions; `text` is the latest ("" before the first write)."""

    def __init__(self, clock: Callable[[], float] = time.time):
        self._clock = clock
        self.versions: list[EditorVersion] = []

    def write(self, author: str, text: str) -> EditorVersion:
        if not author:
            raise ColabkitError("an editor version needs an author")
        version = EditorVersion(index=len(self.versions), author=author, text=text, time=self._clock())
        self.versions.append(version)
        return version

    @property
    def text(self) -> str:
        return self.versions[-1].text if self.versions else ""
