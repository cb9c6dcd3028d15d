"""What the hunting audit plays: a scenario (task, seed, budget, profile, cost cap, the team's
self-chosen gates, its ratification) and one scripted policy per role, drawn by `hypothesis`.

A policy is a script of moves its member plays one per turn, in every variant alike, and a
decider for the requests shown to it. It ignores the structure's own sections (the gate
rules, the memory, the requests it is not deciding), so any difference between two variants'
runs of one scenario comes from the engine, which is what the invariants (`invariants`) test.

Moves (`MOVES`): run a cell (`code:i`, from `CODE`: a print, a listing of the data folder, a
failing cell, a data-changing rebind), send a message to all (`msg:i`) or to one teammate only
(`dm:i`: the i-th of its teammates as the prompt's "Team" line lists them), edit the result (`edit:i`;
a policy full of edits floods a gated variant with requests), wait, finish, propose a memory
update (`update`, valid only where the memory lives), fail (`fail`: a malformed answer
and a malformed repair, a failed step) and slip (`slip`: a malformed answer whose repair is the
next move: a double that fails once, then answers). After its script the AI runs cells (it never
finishes unless its script says so) and a human waits. Deciders approve or reject the
oldest, the newest or a random request shown to them, or ignore requests (`ignore`: the
script goes on, its move perhaps invalid).

Seats: the study's teams are "d", "r" and "dr" (`TEAMS`); a variant that declares other
human seats (a third persona "E") is played by a team given as the tuple of its humans
(`("D", "R", "E")`), every declared seat drawing a policy and a ratification like D and R, and
a self-chosen gate table `NAME@SEAT` putting that seat first as signatory of the table's
actions (`gate_table`). An arm of D and R only draws exactly the study's scenarios.

`hypothesis` is imported only by `scenarios()`: drawing needs it, replaying a scenario not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CODE = ("x = 1\nprint(x)", "import os\nprint(sorted(os.listdir('data'))[:3])",
        "raise ValueError('audit: a failed cell')", "x = 1\nx = x + 1\nprint('audit', x)")
MESSAGES = ("audit: a note", "audit: a long note " + "with words that make it long " * 12,
            "audit: a flood " + "beyond every limit of a message, a prompt and an answer " * 60)
EDITS = ("audit: hypothesis A", "audit: hypothesis B, longer than twelve characters " + "and more " * 40,
         "audit: hypothesis C " + "beyond the editor's share of every profile " * 120)
"""Content at each size: short, longer than the compact profile shows, and beyond the answer
schema's bound (its repair is then the engine's, the same in every variant)."""
MOVES = ("code", "msg", "dm", "edit", "wait", "finish", "update", "fail", "slip")
DECIDERS = ("approve-oldest", "approve-newest", "approve-random", "reject-oldest", "reject-newest",
            "reject-random", "late", "ignore")
"""How a member decides the requests shown to it: `late` ignores them until only decisions are
possible (the closing pass, a spent budget), then approves the oldest; `ignore` never decides."""
GATE_TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "none": (),
    "edits": (("edit_result", "R"), ("edit_result", "D")),
    "edits-and-finish": (("edit_result", "R"), ("edit_result", "D"), ("finish", "R"), ("finish", "D")),
    "messages": (("send_message", "D"), ("send_message", "R")),
    "ai-signs": (("execute_code", "ai"), ("send_message", "ai"), ("edit_result", "R"), ("edit_result", "D")),
}
"""The tables a Scaffolded team may choose in its build (action, signatory): the first rule
whose signatory is on the team and is not the proposer decides (`GateTable.for_team`)."""
TEAMS: dict[str, tuple[str, ...]] = {"d": ("D",), "r": ("R",), "dr": ("D", "R")}
"""The study's teams by code; any other team is the tuple of its human seats."""
STUDY_SEATS = ("ai", "D", "R")
"""The seats every scenario gives a policy to (the others: those of its team)."""
PROFILES = {"compact": 8192, "full": 65536}
"""The context window (tokens) each profile is derived from (`resolve_profile`)."""


def team_humans(team: str | tuple[str, ...]) -> tuple[str, ...]:
    """The human seats of a scenario's team (a study code, or the seats themselves)."""
    return TEAMS[team] if isinstance(team, str) else tuple(team)


def team_code(humans: tuple[str, ...]) -> str | tuple[str, ...]:
    """The team a variant with `humans` is played in: the study's code where there is one."""
    return next((code for code, seats in TEAMS.items() if seats == humans), humans)


def gate_table(gates: str) -> tuple[tuple[str, str], ...]:
    """The self-chosen table `gates` names: one of `GATE_TABLES`, or `NAME@SEAT`: SEAT first as
    signatory of the table's human-signed actions, then the table (so SEAT signs unless it proposes)."""
    name, _, seat = gates.partition("@")
    table = GATE_TABLES[name]
    first = tuple(dict.fromkeys((action, seat) for action, who in table if who != "ai")) if seat else ()
    return first + table


@dataclass(frozen=True)
class Policy:
    """One member's script (`moves`, played one per turn) and how it decides requests."""

    moves: tuple[str, ...] = ()
    decider: str = "approve-oldest"

    def move(self, k: int, role: str) -> str:
        """The move of the member's `k`-th scripted turn (0-based)."""
        if k < len(self.moves):
            return self.moves[k]
        return "code:0" if role == "ai" else "wait"


@dataclass(frozen=True)
class Scenario:
    """One draw: everything a run of a variant needs but the variant itself."""

    task_id: str
    team: str | tuple[str, ...] = "dr"  # the composition played: "d", "r", "dr" or its seats (with the single agent)
    seed: int = 0
    budget: int = 4
    profile: str = "compact"
    gates: str = "edits"
    ratify: tuple[str, ...] = ("accept", "accept")  # D's, R's, then the other seats' answer: accept or amend
    policies: dict[str, Policy] = field(default_factory=dict)
    cost_cap: int | None = None  # tokens, standing in for the dollar cap
    real: bool = False  # a real kernel and the task's real data

    def policy(self, role: str) -> Policy:
        return self.policies.get(role, Policy())

    @property
    def humans(self) -> tuple[str, ...]:
        return team_humans(self.team)

    @property
    def seats(self) -> tuple[str, ...]:
        """Every seat with a policy: the AI, D and R, then the team's other seats."""
        return STUDY_SEATS + tuple(h for h in self.humans if h not in STUDY_SEATS)

    def ratification(self, role: str) -> str:
        """`role`'s answer to the build's ratification (accept unless drawn otherwise)."""
        i = self.seats.index(role) - 1 if role in self.seats else len(self.ratify)
        return self.ratify[i] if i < len(self.ratify) else "accept"

    def ai_finish_step(self) -> int | None:
        """The AI's scripted turn (1-based) that finishes, if any within its budget."""
        moves = self.policy("ai").moves[: self.budget]
        return moves.index("finish") + 1 if "finish" in moves else None

    def approving(self) -> bool:
        """Whether every member approves every request shown to it (in any order, or at the end)."""
        return all(self.policy(r).decider.startswith("approve") or self.policy(r).decider == "late"
                   for r in self.seats)

    def describe(self) -> str:
        """The scenario as the audit prints a (shrunk) violating draw."""
        team = self.team if isinstance(self.team, str) else "+".join(self.team)
        lines = [f"team {team}, task {self.task_id}, seed {self.seed}, AI budget {self.budget}, profile {self.profile}, "
                 f"self-chosen gates {self.gates!r}, ratification {', '.join(self.ratify)}"
                 + (f", cost cap {self.cost_cap} tokens" if self.cost_cap else "")
                 + (", real kernel" if self.real else ", in-memory notebook")]
        for role in self.seats:
            p = self.policy(role)
            lines.append(f"  {role}: {' '.join(p.moves) or '(script empty)'}; then "
                         f"{'code:0' if role == 'ai' else 'wait'}; requests: {p.decider}")
        return "\n".join(lines)


def scenarios(task_ids: tuple[str, ...], *, max_budget: int = 30, real: bool = False,
              teams: tuple[tuple[str, ...], ...] = ()) -> Any:
    """A `hypothesis` strategy for scenarios on `task_ids` (budgets 2..`max_budget`, small ones first);
    `teams`: the arm's teams beyond the study's, each drawn beside them, its other seats drawing
    policies, ratifications and gate tables they sign (`NAME@SEAT`) too."""
    from hypothesis import strategies as st

    move = st.one_of(st.sampled_from(("wait", "finish", "update", "fail", "slip")),
                     st.builds(lambda kind, i: f"{kind}:{i}", st.sampled_from(("code", "msg", "dm", "edit")),
                               st.integers(0, 2)),
                     st.builds(lambda i: f"code:{i}", st.integers(2, 3)))
    ai_move = st.one_of(st.builds(lambda i: f"code:{i}", st.integers(0, 3)),
                        st.builds(lambda i: f"edit:{i}", st.integers(0, 2)), move)

    def policy(moves: Any) -> Any:
        return st.builds(Policy, st.lists(moves, max_size=8).map(tuple), st.sampled_from(DECIDERS))

    extra = tuple(dict.fromkeys(h for team in teams for h in team if h not in STUDY_SEATS))
    answer = st.sampled_from(("accept", "amend"))
    return st.builds(
        Scenario,
        task_id=st.sampled_from(task_ids),
        team=st.sampled_from(("dr", "d", "r", *(t for t in teams if t not in TEAMS.values()))),
        seed=st.integers(0, 3),
        budget=st.one_of(st.integers(2, 6), st.integers(2, max_budget)),
        profile=st.sampled_from(tuple(PROFILES)),
        gates=st.sampled_from((*GATE_TABLES, *(f"{name}@{seat}" for seat in extra for name in GATE_TABLES
                                               if name != "none"))),
        ratify=st.tuples(*[answer] * (2 + len(extra))),
        policies=st.fixed_dictionaries({"ai": policy(ai_move), "D": policy(move), "R": policy(move),
                                        **{seat: policy(move) for seat in extra}}),
        cost_cap=st.one_of(st.none(), st.none(), st.integers(600, 3_000), st.integers(3_000, 20_000)),
        real=st.just(real),
    )
