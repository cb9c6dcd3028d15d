"""Who may act when, and when the session is over.

Rounds, not strict turn-taking: in each round the participants take one step each, in an
order drawn from the session's seed for that round, so nobody holds a privileged first or
last turn. A simulated human who waited and has nothing new in view (no teammate's act it can
see since its last step, `acts_in_view`) is skipped without a model call. Decisions on requests are not steps: a member decides them in
decision steps of its own (`colabkit.session.engine`), which this scheduler never sees.

Budgets (`SessionSettings.budget_for`): the AI agent's steps are counted apart from the
simulated humans', so a talkative teammate never spends the AI agent's steps and the single
agent has exactly the AI agent's budget of a team. A decision spends no budget under any rule
(machinery, `Event.kind`: it is never a step).

When the session ends is `SessionSettings.termination` (`budget_end` below is the one place
spent budgets are decided):
- "ai_budget" (default): one session clock, owned by the AI agent (`clock`). Every turn of
  the AI is a step of its budget, whatever it does (a wait included, in a team and alone),
  and the AI is asked every round while it has steps left, so it takes exactly its budget
  unless its finish takes effect first. The session ends at the AI's last step (no human
  acts after it) or when its finish takes effect, and for no other reason but an
  infrastructure end: no idle end, no `max_rounds` end (the AI's budget bounds the rounds).
  Each simulated human has a cap of its own (`human_action_budget`, default the AI's), the
  same number in every composition; a human who has spent it is skipped (without a model
  call). Humans cannot end the session (`finish` is the AI's action under this rule).
- "either_side" (Co-Gym's rule, `collaborative_gym/nodes/task_env.py`, kept as a setting):
  the humans share one budget and the session ends as soon as the AI or the humans together
  have spent theirs. Written for one human: with two, a DR team's humans can end the
  session after half of the AI's steps.
- "all_sides" (a setting, for sensitivity analyses): the humans share one budget, a spent
  side takes no more steps and the session ends when every side is spent.
Under the two Co-Gym rules waits are free, anybody may finish, and idleness and
`max_rounds` end a session (below). Under every rule a member whose budget is spent still
decides the requests addressed to it, in its decision steps (issue 42: they are machinery,
spend no budget and are not activity). The engine records the rule and the side whose step spent the budget
that ended the session (`session_end` args `termination` and `budget_side`); before any end
but a crash or a provider refusal the engine's closing pass has every open request decided.

Idleness (the Co-Gym rules only): a round in which nobody acted (everyone waited or was
skipped) is idle. A failed step counts as acting (it spent budget). Under these rules a lone
participant is never offered `wait` (`colabkit.session.actions.valid_actions`): a free wait
could only lead to the idle end.

End conditions (checked by the engine in this order): a finish takes effect; a budget ends
the session (`budget_end`), or the optional team-wide cap is reached; under the Co-Gym
rules, K consecutive idle rounds or `max_rounds` rounds.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from colabkit.session.actions import STRUCTURE_ACTIONS
from colabkit.session.events import Event
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


def acts_in_view(events: Sequence[Event], participant: str, *, sees_all: bool) -> str:
    """The teammates' acts `participant` can see, as the key `Scheduler.eligible` compares: what
    wakes a member who waited. An act is a teammate's own step that did something (not a wait,
    not a failed step, not a structure's own action), counted when it is taken, held or not: a
    hold delays an act's effect, never the news of it, and machinery (a decision, the closing
    pass, a structure's bookkeeping) is never news. So a variant wakes its members at exactly
    the turns its Default twin does (issue 42). A message is news to its addressees (and to a
    member who sees everything, the AI agent), every other act to everyone."""
    seen = 0
    for e in events:
        if (e.phase != "task" or e.kind != "step" or e.participant == participant or e.status == "failed_step"
                or e.action in ("wait", *STRUCTURE_ACTIONS)):
            continue
        to = e.args.get("to") if e.action == "send_message" else None
        if sees_all or not to or participant in to:
            seen += 1
    return str(seen)


class Scheduler:
    """Tracks eligibility, the budgets and idleness across task-phase rounds.

    Steps are counted per budget holder (`holder`): "ai", and either each human by its id
    (under "ai_budget") or "human" for the humans together.
    """

    def __init__(self, settings: SessionSettings, sides: Mapping[str, Side]) -> None:
        self.settings = settings
        self.clock = settings.termination == "ai_budget"  # the AI's budget is the session's clock
        self.sides = dict(sides)
        self.participants = tuple(sides)
        # Who holds the clock: the AI agent; a human alone (a solo variant) holds it in its place.
        self.keeper = "ai" if "ai" in sides or len(sides) != 1 else self.participants[0]
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
        return self.settings.budget_for("ai" if holder in ("ai", self.keeper) else "human")

    @property
    def actions(self) -> int:
        """Task-phase steps other than waits, all sides together."""
        return sum(self.used.values())

    @property
    def round_limit(self) -> int:
        """Rounds a session may run: `max_rounds` under the Co-Gym rules; under the clock the AI
        takes a step every round, so its budget ends the session by then."""
        return self.settings.action_budget if self.clock else self.settings.max_rounds

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
            return side if last == self.keeper else None
        if rule == "either_side" or all(self.spent(h) for h in self.used):
            return side
        return None

    def eligible(self, participant: str, acts: str) -> bool:
        """Whether `participant` gets a step now (see the module docstring)."""
        if self.actions_left(participant) == 0:
            return False
        if self.clock and participant == self.keeper:
            return self.actions_left(participant) > 0  # the clock: asked every round while it has steps
        if participant not in self._seen or not self._waited[participant]:
            return True
        return self._seen[participant] != acts

    def clocked(self, participant: str) -> bool:
        """Whether every step of `participant` is one of its budget, a wait included: the clock's
        keeper's (the AI's, or a solo persona's), under the clock (its turns are the session's rounds)."""
        return self.clock and participant == self.keeper

    def record_step(self, participant: str, acts: str, *, waited: bool) -> None:
        """Note a step taken having seen `acts` (`acts_in_view`); non-waits (and the AI's waits under the
        clock) spend the holder's budget."""
        self._seen[participant] = acts
        self._waited[participant] = waited
        if waited:
            self.waits += 1
        if waited and self.clocked(participant):
            self.used[self.holder(participant)] += 1
        elif not waited:
            self.used[self.holder(participant)] += 1
            self._active_this_round = True

    def end_round(self) -> bool:
        """Close a round; True when K consecutive rounds passed with nobody acting (never under the clock)."""
        if self.clock:
            return False
        self.idle_streak = 0 if self._active_this_round else self.idle_streak + 1
        self._active_this_round = False
        return self.idle_streak >= self.settings.idle_rounds
