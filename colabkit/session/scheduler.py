"""Who may act when, and when the session is over.

Rounds, not strict turn-taking: in each round every participant with something new in view
(or that has not acted yet, or whose last step was not a wait) gets one step, in an order
drawn from the session's seed for that round, so nobody holds a privileged first or last
turn. "New in view" is a change of the participant's `Observation.view_key` (the shared
world it can see) since its last step; a participant that waited and sees nothing new is
skipped without a model call, which is also what makes a quiet session end.

End conditions (checked by the engine in this order): a finish takes effect; the action
budget (task-phase steps other than wait, failed steps included) is spent; K consecutive
idle rounds (every participant waited or was skipped); `max_rounds` rounds have run.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from colabkit.session.settings import SessionSettings


def round_order(participants: Sequence[str], seed: int, round: int) -> list[str]:
    """This round's order: a permutation drawn from the seed and the round number only."""
    order = list(participants)
    random.Random(f"{seed}:task:{round}").shuffle(order)
    return order


class Scheduler:
    """Tracks eligibility, the action budget and idleness across task-phase rounds."""

    def __init__(self, settings: SessionSettings, participants: Sequence[str]) -> None:
        self.settings = settings
        self.participants = tuple(participants)
        self.actions = 0
        self.waits = 0
        self.idle_streak = 0
        self._seen: dict[str, str] = {}
        self._waited: dict[str, bool] = {}
        self._active_this_round = False

    @property
    def actions_left(self) -> int:
        return max(self.settings.action_budget - self.actions, 0)

    @property
    def budget_spent(self) -> bool:
        return self.actions >= self.settings.action_budget

    def eligible(self, participant: str, view_key: str) -> bool:
        """Whether `participant` gets a step now (see the module docstring)."""
        if participant not in self._seen or not self._waited[participant]:
            return True
        return self._seen[participant] != view_key

    def record_step(self, participant: str, view_key: str, *, waited: bool) -> None:
        """Note a step taken on the view with `view_key`; non-waits spend the budget."""
        self._seen[participant] = view_key
        self._waited[participant] = waited
        if waited:
            self.waits += 1
        else:
            self.actions += 1
            self._active_this_round = True

    def end_round(self) -> bool:
        """Close a round; True when K consecutive rounds passed with nobody acting."""
        self.idle_streak = 0 if self._active_this_round else self.idle_streak + 1
        self._active_this_round = False
        return self.idle_streak >= self.settings.idle_rounds
