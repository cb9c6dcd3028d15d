"""Who may act when, and when the session is over.

Rounds, not strict turn-taking: in each round every participant with something new in view
(or that has not acted yet, or whose last step was not a wait) gets one step, in an order
drawn from the session's seed for that round, so nobody holds a privileged first or last
turn. "New in view" is a change of the participant's `Observation.view_key` (the shared
world it can see) since its last step; a participant that waited and sees nothing new is
skipped without a model call, which is also what makes a quiet session end.

Budgets are per side (`SessionSettings.budget_for`): the AI agent's steps and the simulated
humans' steps (together) are counted apart, so a talkative teammate never spends the AI
agent's steps and the single agent has exactly the AI agent's budget of a team. An
approve/reject is the signatory's step.

When spent budgets end the session is `SessionSettings.termination` (`budget_end` below is
the one place it is decided):
- "either_side" (default; the substrate's rule, Co-Gym `collaborative_gym/nodes/task_env.py`):
  the session ends as soon as one side has spent its budget. A team then runs at most as
  many AI steps as the single agent, and nobody edits or finishes after the AI has stopped.
- "all_sides" (a setting, for sensitivity analyses): a side that has spent its budget takes
  no more steps (its members are skipped, without a model call); the others go on, and the
  session ends when every side is spent. One exception keeps every gate decidable: a member
  of a spent side to whom a request is addressed may still approve or reject it (nothing
  else), counted past the budget so `Totals` shows it.
Either way the engine records the rule and the side whose step spent the budget that ended
the session (`session_end` args `termination` and `budget_side`), and requests still open at
the end are recorded as undecided.

Idleness: a round in which nobody acted (everyone waited or was skipped) is idle. A failed
step counts as acting (it spent budget). A lone participant is never offered `wait` and its
wait is a failed step (`colabkit.session.actions.valid_actions`), because nobody else can
change its view: a wait could only lead to the idle end.

End conditions (checked by the engine in this order): a finish takes effect; a budget ends
the session (`budget_end`), or the optional team-wide cap is reached; K consecutive idle
rounds; `max_rounds` rounds have run.
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

    def spent(self, side: Side) -> bool:
        return self.used[side] >= self.settings.budget_for(side)

    def budget_end(self, last_side: Side) -> str | None:
        """Whether budgets end the session after a step of `last_side`, under the termination rule.

        Returns what ended it: the side whose step spent the deciding budget ("ai" or
        "human"; under "all_sides" the last side to run out), "team" for the team-wide cap,
        or None while the session goes on.
        """
        cap = self.settings.team_action_budget
        if cap is not None and self.actions >= cap:
            return "team"
        if not self.spent(last_side):
            return None
        if self.settings.termination == "either_side" or all(self.spent(side) for side in self.used):
            return last_side
        return None

    def eligible(self, participant: str, view_key: str, *, has_requests: bool = False) -> bool:
        """Whether `participant` gets a step now (see the module docstring)."""
        if self.actions_left(participant) == 0 and not has_requests:
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
