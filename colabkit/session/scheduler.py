"""Who may act when, and when the session is over.

Rounds, not strict turn-taking: in each round every participant with something new in view
(or that has not acted yet, or whose last step was not a wait) gets one step, in an order
drawn from the session's seed for that round, so nobody holds a privileged first or last
turn. "New in view" is a change of the participant's `Observation.view_key` (the shared
world it can see) since its last step; a participant that waited and sees nothing new is
skipped without a model call, which is also what makes a quiet session end.

Budgets are per side (`SessionSettings.budget_for`): the AI agent's steps and the simulated
humans' steps (together) are counted apart, so a talkative teammate never spends the AI
agent's steps and the single agent has exactly the AI agent's budget of a team. A side that
has spent its budget takes no more steps (its members are skipped, without a model call);
the others go on with theirs. Co-Gym's environment ends the whole session when either side
reaches `max_steps`; here that would let one side's activity cut the other's work short,
which is the confound per-side budgets remove. An approve/reject is the signatory's step.

End conditions (checked by the engine in this order): a finish takes effect; every side has
spent its budget, or the optional team-wide cap is reached; K consecutive idle rounds
(every participant waited or was skipped); `max_rounds` rounds have run.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from colabkit.session.settings import SessionSettings, Side


def round_order(participants: Sequence[str], seed: int, round: int) -> list[str]:
    """This round's order: a permutation drawn from the seed and the round number only."""
    order = list(participants)
    random.Random(f"{seed}:task:{round}").shuffle(order)
    return order


class Scheduler:
    """Tracks eligibility, the per-side budgets and idleness across task-phase rounds."""

    def __init__(self, settings: SessionSettings, sides: Mapping[str, Side]) -> None:
        self.settings = settings
        self.sides = dict(sides)
        self.participants = tuple(sides)
        self.used: dict[Side, int] = {side: 0 for side in self.sides.values()}
        self.waits = 0
        self.idle_streak = 0
        self._seen: dict[str, str] = {}
        self._waited: dict[str, bool] = {}
        self._active_this_round = False

    @property
    def actions(self) -> int:
        """Task-phase steps other than waits, all sides together."""
        return sum(self.used.values())

    def actions_left(self, participant: str) -> int:
        """Steps `participant`'s side may still take (within the team cap, if any)."""
        side = self.sides[participant]
        left = self.settings.budget_for(side) - self.used[side]
        if self.settings.team_action_budget is not None:
            left = min(left, self.settings.team_action_budget - self.actions)
        return max(left, 0)

    @property
    def budget_spent(self) -> bool:
        """Every side has spent its budget, or the team-wide cap is reached."""
        cap = self.settings.team_action_budget
        return (cap is not None and self.actions >= cap) or all(
            self.used[side] >= self.settings.budget_for(side) for side in self.used)

    def eligible(self, participant: str, view_key: str) -> bool:
        """Whether `participant` gets a step now (see the module docstring)."""
        if self.actions_left(participant) == 0:
            return False
        if participant not in self._seen or not self._waited[participant]:
            return True
        return self._seen[participant] != view_key

    def record_step(self, participant: str, view_key: str, *, waited: bool) -> None:
        """Note a step taken on the view with `view_key`; non-waits spend the side's budget."""
        self._seen[participant] = view_key
        self._waited[participant] = waited
        if waited:
            self.waits += 1
        else:
            self.used[self.sides[participant]] += 1
            self._active_this_round = True

    def end_round(self) -> bool:
        """Close a round; True when K consecutive rounds passed with nobody acting."""
        self.idle_streak = 0 if self._active_this_round else self.idle_streak + 1
        self._active_this_round = False
        return self.idle_streak >= self.settings.idle_rounds
