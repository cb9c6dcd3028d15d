"""Who may act when, and when the session is over.

Rounds, not strict turn-taking: in each round every participant with something new in view
(or that has not acted yet, or whose last step was not a wait) gets one step, in an order
drawn from the session's seed for that round, so nobody holds a privileged first or last
turn. "New in view" is a change of the participant's `Observation.view_key` (the shared
world it can see) since its last step; a participant that waited and sees nothing new is
skipped without a model call, which is also what makes a quiet session end.

Budgets (`SessionSettings.budget_for`): the AI agent's steps are counted apart from the
simulated humans', so a talkative teammate never spends the AI agent's steps and the single
agent has exactly the AI agent's budget of a team. An approve/reject is the signatory's step.

When spent budgets end the session is `SessionSettings.termination` (`budget_end` below is
the one place it is decided):
- "ai_budget" (default): the AI agent's budget is the session's clock. The session ends when
  the AI has spent its budget, never because the humans have: each simulated human has a
  budget of its own (`human_action_budget`, default the AI's), and a human who has spent it
  is skipped (without a model call). So every variant gives the AI the same number of steps
  unless a finish or idleness ends the session first.
- "either_side" (Co-Gym's rule, `collaborative_gym/nodes/task_env.py`, kept as a setting):
  the humans share one budget and the session ends as soon as the AI or the humans together
  have spent theirs. Written for one human: with two, a DR team's humans can end the
  session after half of the AI's steps.
- "all_sides" (a setting, for sensitivity analyses): the humans share one budget, a spent
  side takes no more steps and the session ends when every side is spent.
Under every rule a member whose budget is spent may still approve or reject a request
addressed to it (nothing else), counted past the budget so `Totals` shows it. The engine
records the rule and the side whose step spent the budget that ended the session
(`session_end` args `termination` and `budget_side`); requests still open at the end are
offered to their signatories once in the engine's closing pass, then expired.

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


def closing_order(participants: Sequence[str], seed: int) -> list[str]:
    """The closing pass's order (`colabkit.session.engine`): drawn from the seed only."""
    order = list(participants)
    random.Random(f"{seed}:closing").shuffle(order)
    return order


class Scheduler:
    """Tracks eligibility, the budgets and idleness across task-phase rounds.

    Steps are counted per budget holder (`holder`): "ai", and either each human by its id
    (under "ai_budget") or "human" for the humans together.
    """

    def __init__(self, settings: SessionSettings, sides: Mapping[str, Side]) -> None:
        self.settings = settings
        self.sides = dict(sides)
        self.participants = tuple(sides)
        self.used: dict[str, int] = {self.holder(pid): 0 for pid in self.participants}
        self.waits = 0
        self.idle_streak = 0
        self._seen: dict[str, str] = {}
        self._waited: dict[str, bool] = {}
        self._active_this_round = False

    def holder(self, participant: str) -> str:
        """Whose budget `participant`'s steps spend."""
        side = self.sides[participant]
        return participant if side == "human" and self.settings.per_member else side

    def _budget(self, holder: str) -> int:
        return self.settings.budget_for("ai" if holder == "ai" else "human")

    @property
    def actions(self) -> int:
        """Task-phase steps other than waits, all sides together."""
        return sum(self.used.values())

    def actions_left(self, participant: str) -> int:
        """Steps `participant` may still take (within the team cap, if any)."""
        holder = self.holder(participant)
        left = self._budget(holder) - self.used[holder]
        if self.settings.team_action_budget is not None:
            left = min(left, self.settings.team_action_budget - self.actions)
        return max(left, 0)

    def ai_actions_left(self) -> int | None:
        """The AI agent's steps left (None when it is not on the team)."""
        return self.actions_left("ai") if "ai" in self.sides else None

    def spent(self, holder: str) -> bool:
        return self.used[holder] >= self._budget(holder)

    def budget_end(self, last: str) -> str | None:
        """Whether budgets end the session after a step of participant `last`, under the termination rule.

        Returns what ended it: the side whose step spent the deciding budget ("ai" or
        "human"; under "all_sides" the last side to run out), "team" for the team-wide cap,
        or None while the session goes on.
        """
        cap = self.settings.team_action_budget
        if cap is not None and self.actions >= cap:
            return "team"
        holder, side = self.holder(last), self.sides[last]
        if not self.spent(holder):
            return None
        rule = self.settings.termination
        if rule == "ai_budget":
            return "ai" if side == "ai" else None
        if rule == "either_side" or all(self.spent(h) for h in self.used):
            return side
        return None

    def eligible(self, participant: str, view_key: str, *, has_requests: bool = False) -> bool:
        """Whether `participant` gets a step now (see the module docstring)."""
        if self.actions_left(participant) == 0 and not has_requests:
            return False
        if participant not in self._seen or not self._waited[participant]:
            return True
        return self._seen[participant] != view_key

    def record_step(self, participant: str, view_key: str, *, waited: bool) -> None:
        """Note a step taken on the view with `view_key`; non-waits spend the holder's budget."""
        self._seen[participant] = view_key
        self._waited[participant] = waited
        if waited:
            self.waits += 1
        else:
            self.used[self.holder(participant)] += 1
            self._active_this_round = True

    def end_round(self) -> bool:
        """Close a round; True when K consecutive rounds passed with nobody acting."""
        self.idle_streak = 0 if self._active_this_round else self.idle_streak + 1
        self._active_this_round = False
        return self.idle_streak >= self.settings.idle_rounds
