"""The session's rules as the documentation states them, recomputed from one run's event log:
the round order, each member's budget holder and steps left, who sees what, the wake rule.

This is the oracle of `conduct` and `shown` (issue 42). It is written from the rules' words
(docs/fidelity.md, the scheduler's docstring, docs/rules.md) and imports nothing of the engine's
own logic: an oracle that called `scheduler.acts_in_view` or `round_order` would agree with any
change to them. What it reads is the spec (seats, personas, settings, profile) and the events.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from colabkit.runner.audit.player import Run
from colabkit.runner.audit.projection import DECISIONS, declared
from colabkit.session.events import Event
from colabkit.session.structure.gating import HELD_SECTIONS

EVERYONE = ("all", "everyone")
"""What `to` may say for a message to the whole team (docs/rules.md: to = "all" or teammate ids)."""


class DocumentedRules:
    """One run's seats, budgets, clock and round order as the settings and the variant declare
    them, and its task steps (`Event.kind` "step") to count against them."""

    def __init__(self, run: Run) -> None:
        spec = run.spec
        self.settings, self.seed, self.profile = spec.settings, spec.seed, spec.profile
        self.team = tuple(spec.variant.team)
        self.role = {pid: spec.variant.persona(pid).role for pid in self.team}
        self.clock = self.settings.termination == "ai_budget"
        # the clock's keeper: the AI agent, or a human alone in its place (docs/fidelity.md)
        self.keeper = "ai" if "ai" in self.team or len(self.team) != 1 else self.team[0]
        dec = declared(spec.variant)
        # a structure's sections: its declared ones, and the held requests' where it holds actions
        self.added, self.sections = dec.actions, (*dec.sections, *(HELD_SECTIONS if dec.holds else ()))
        self.own_actions = self.added | set(DECISIONS)
        self.steps = [e for e in run.events if e.phase == "task" and e.kind == "step" and e.participant in self.team]
        self._orders: dict[int, list[str]] = {}

    def order(self, round: int) -> list[str]:
        """A round's order: the seats in team order, shuffled by the seed and the round only."""
        if round not in self._orders:
            order = list(self.team)
            random.Random(f"{self.seed}:task:{round}").shuffle(order)
            self._orders[round] = order
        return self._orders[round]

    def at(self, e: Event) -> tuple[int, int]:
        """Where a step came: its round and its seat's place in that round's order."""
        return e.round, self.order(e.round).index(e.participant)

    def holder(self, pid: str) -> str:
        """Whose budget `pid`'s steps spend: its own (a human under the AI's clock) or its side's."""
        return pid if self.role[pid] == "human" and self.settings.per_member else self.role[pid]

    def budget(self, holder: str) -> int:
        return self.settings.budget_for("ai" if holder in ("ai", self.keeper) else "human")

    def spends(self, e: Event) -> bool:
        """Every step but a wait on offer spends its holder's budget; the keeper's waits too."""
        free_wait = e.action == "wait" and e.status == "ok"
        return not free_wait or (self.clock and e.participant == self.keeper)

    def left(self, pid: str, before: tuple[int, int]) -> int:
        """`pid`'s steps left at a point of the task (its holder's budget, within the team cap)."""
        spent = [e for e in self.steps if self.at(e) < before and self.spends(e)]
        holder = self.holder(pid)
        left = self.budget(holder) - sum(self.holder(e.participant) == holder for e in spent)
        cap = self.settings.team_action_budget
        return max(min(left, cap - len(spent)) if cap is not None else left, 0)

    def news(self, pid: str, after: tuple[int, int], before: tuple[int, int]) -> bool:
        """Whether a teammate's act `pid` can see came between two points of the task: a
        teammate's own step that did something (held or not; not a wait, a failed step or a
        structure's own action); a message is news to its addressees and to the AI agent."""
        for e in self.steps:
            if (e.participant == pid or e.status == "failed_step" or e.action == "wait"
                    or e.action in self.own_actions or not after < self.at(e) < before):
                continue
            to = e.args.get("to") if e.action == "send_message" else None
            if self.role[pid] == "ai" or not to or pid in to:
                return True
        return False

    def should_ask(self, pid: str, at: tuple[int, int]) -> bool:
        """The wake rule: asked while it has steps, the keeper every round, any other member
        unless it waited at its last step and nothing new came into its view since."""
        if self.left(pid, at) == 0:
            return False
        if self.clock and pid == self.keeper:
            return True
        last = next((e for e in reversed(self.steps) if e.participant == pid and self.at(e) < at), None)
        if last is None or not (last.action == "wait" and last.status == "ok"):
            return True
        return self.news(pid, self.at(last), at)

    def own_step_actions(self, pid: str) -> set[str]:
        """What a member's own step offers (docs/rules.md, "What a member may do now"): code and
        edits; a message in a team; a wait, but to a lone member under Co-Gym's rules (a free wait
        could only idle the session out); `finish` under the AI's clock to its keeper only, under
        Co-Gym's rules to anyone; a structure's own actions; never a decision."""
        lone = len(self.team) == 1
        return ({"execute_code", "edit_result"} | ({"send_message"} if not lone else set())
                | ({"wait"} if self.clock or not lone else set())
                | ({"finish"} if not self.clock or pid == self.keeper else set()) | set(self.added))

    def sees(self, pid: str, message: Event) -> bool:
        """A message is seen by its sender, its addressees (everyone, when it names none) and the AI agent."""
        to = message.args.get("to")
        return self.role[pid] == "ai" or not to or pid == (message.proposer or message.participant) or pid in to


def named(to: str, sender: str, team: Sequence[str], strict: bool = False) -> tuple[str, ...] | None:
    """The teammates `to` names (None: everyone); with `strict`, () when it names anyone else."""
    ids = {p.lower(): p for p in team if p != sender}
    tokens = [t for t in re.split(r"[\s,;&]+", to.strip()) if t and t.lower() not in EVERYONE]
    if strict and any(t.lower() not in ids for t in tokens):
        return ()
    return tuple(dict.fromkeys(ids[t.lower()] for t in tokens if t.lower() in ids)) or None


def user_prompt(call: dict[str, Any]) -> str:
    """A request's prompt: its last user message (the observation; a repair's asks again)."""
    return str(next((m.get("content", "") for m in reversed(call["messages"]) if m.get("role") == "user"), ""))
