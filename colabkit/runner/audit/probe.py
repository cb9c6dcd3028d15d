"""`same-rendering`: for the same history, every section two variants share renders byte-identically.

A history (`history`: who ran which cell, sent which message, wrote which hypothesis, in
which round; a member's steps past its budget left out, the history cut where the budgets
end the session) is made to take effect in each variant's session through the engine's own
effect path (`_Session.apply`, the path an ungated or approved action takes, with the
member's budget spent as a step spends it), restricted to the members both variants have.
Then each member's prompt (system and observation, `_Session.observe` and `messages`) is
rendered at several points, split into sections by heading, and compared: a section shown
by both must be byte-identical, and a section shown by one only must be one of the
structure's own (`OWN_SECTIONS`, and a plugin structure's declared `sections` in the variants
that play it). The lines of "Valid actions" that name a structural action
(`invariants.STRUCTURAL_ACTIONS`, and a plugin's declared `actions`) may differ; under a pooled human budget (the Co-Gym
rules) whose budget "Now" counts may differ by team. Nothing else may: no section is
allowed to differ as a class ("team", "gated"), only by name.

A section shown at a member's first point must still be shown later (but for those that
come and go by what happened: `TRANSIENT`), so a section dropped after round 1 is found even
when every variant drops it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from itertools import combinations
from typing import Any, cast

from colabkit.runner.audit.invariants import STRUCTURAL_ACTIONS
from colabkit.runner.audit.player import InMemoryWorkspace
from colabkit.runner.audit.scenario import CODE, EDITS, MESSAGES, Scenario
from colabkit.runner.audit.violation import Violation
from colabkit.runner.batch import run_sync
from colabkit.session import SessionSpec
from colabkit.session.actions import StepSchema, to_action
from colabkit.session.engine import _Session
from colabkit.session.prompting.preview import prepared
from colabkit.session.prompting.views import Thought
from colabkit.session.scheduler import acts_in_view
from colabkit.session.structure.registry import plugin_structures
from colabkit.tasks import Task

OWN_SECTIONS = {
    "Team": "who is on the team (the composition)",
    "Shared Group Memory": "the memory (memory variants), living or frozen (Dynamic)",
    "Gate rules": "the gate table in force and who set it (gated variants)",
    "Approval requests for you": "requests held for this member (gated variants)",
    "Your requests": "this member's held requests (gated variants)",
    "Requests and decisions": "requests held and decided, in view of this member (gated variants)",
    "Memory updates for you": "memory updates awaiting this member (Dynamic)",
    "Your memory updates": "this member's memory updates (Dynamic)",
}
"""The structure's own sections: shown or worded by variant, each for the reason given."""
TRANSIENT = ("Your last step", "Approval requests for you", "Your requests", "Memory updates for you",
             "Your memory updates", "Your recent thoughts")
"""Sections that come and go with what happened (the rest, once shown, stay)."""
BASE = (("ai", "code:0", 1), ("ai", "msg:1", 1), ("ai", "edit:1", 1), ("ai", "code:3", 2), ("D", "msg:1", 2),
        ("R", "code:2", 2), ("ai", "code:0", 3), ("D", "edit:0", 3), ("ai", "edit:1", 3))
"""A history every probe has: cells, a long message and a long hypothesis, over three rounds."""
_ACTIONS: dict[str, Any] = {"code": "execute_code", "msg": "send_message", "edit": "edit_result"}
_HEADING = re.compile(r"\n\n(?=# )")


def history(scenario: Scenario) -> tuple[tuple[str, str, int], ...]:
    """`BASE`, then each seat's scripted cells, messages and edits, round by round (up to 4 rounds)."""
    moves = [(role, move, 4 + k) for k in range(4) for role in scenario.seats
             for move in scenario.policy(role).moves[k:k + 1] if move.split(":")[0] in ("code", "msg", "edit")]
    return BASE + tuple(moves)


def sections(text: str) -> dict[str, str]:
    """A prompt split by "# " heading into {name: text} (the name without its counts)."""
    out: dict[str, str] = {}
    for part in _HEADING.split(text):
        if not part.startswith("# "):
            out["system" if not out else f"text {len(out)}"] = part
            continue
        title = part.split("\n", 1)[0][2:]
        name = title if title.startswith("Consolidated memory") else re.split(r" \(|:|,", title)[0].strip()
        out[name] = part
    return out


async def _render(spec: SessionSpec, task: Task, members: tuple[str, ...],
                  steps: Sequence[tuple[str, str, int]]) -> dict[tuple[int, str], dict[str, str]]:
    """Each member's prompt sections after each round of `steps` (members outside the team left out)."""
    session: _Session = prepared(spec, task, cast(Any, InMemoryWorkspace((), spec.settings.limits)))[0]
    out: dict[tuple[int, str], dict[str, str]] = {}
    rounds = sorted({r for _, _, r in steps})
    for rnd in rounds:
        session.round = rnd
        for actor, move, _ in [s for s in steps if s[2] == rnd and s[0] in members
                               and (len(members) > 1 or not s[1].startswith("msg"))]:  # alone: nobody to message
            if session.sched.actions_left(actor) == 0:  # a possible history: nobody acts past its budget
                continue
            kind, _, index = move.partition(":")
            i = int(index or 0)
            pool = {"code": CODE, "msg": MESSAGES[:2], "edit": EDITS[:2]}[kind]  # (beyond the schema's bound: no step)
            step = StepSchema(thought=f"audit: {move}", action=_ACTIONS[kind],
                              content=pool[i % len(pool)], to="all" if kind == "msg" else "")
            session.scratch[actor].append(Thought(round=rnd, action=step.action, text=step.thought, time=0.0))
            key = acts_in_view(session.log.events, actor, sees_all=session.sides[actor] == "ai")
            await session.apply(to_action(step, actor, session.team, added=session.structure.actions), actor,
                                thought=step.thought)
            session.sched.record_step(actor, key, waited=False)
            if session.sched.budget_end(actor) is not None:  # the session ends here: no later prompt to compare
                return out
        for pid in members:
            messages = session.messages(pid, session.observe(pid))
            out[(rnd, pid)] = sections("\n\n".join(str(m["content"]) for m in messages))
    return out


def same_rendering(specs: Sequence[SessionSpec], task: Task, scenario: Scenario) -> list[Violation]:
    """Render `scenario`'s history in every spec's variant and compare (see the module docstring)."""
    steps = history(scenario)
    subsets = sorted({spec.variant.team for spec in specs} | {("ai",)} | {
        ("ai", h) for spec in specs for h in spec.variant.humans})

    out: list[Violation] = []

    async def render_all() -> dict[tuple[str, ...], dict[str, dict[tuple[int, str], dict[str, str]]]]:
        shown: dict[tuple[str, ...], dict[str, dict[tuple[int, str], dict[str, str]]]] = {}
        for members in subsets:
            for spec in specs:
                if set(members) <= set(spec.variant.team):
                    try:
                        shown.setdefault(members, {})[spec.variant.name] = await _render(spec, task, members, steps)
                    except Exception as exc:  # a structure that cannot render (e.g. an undeclared section)
                        out.append(Violation("same-rendering", (spec.variant.name,),
                                             f"rendering failed: {type(exc).__name__}: {exc}"))
        return shown

    pooled = not specs[0].settings.per_member if specs else False
    own = {spec.variant.name: plugin_declared(spec) for spec in specs}
    for members, by_variant in run_sync(render_all).items():
        for name, points in by_variant.items():
            out += _kept(name, points)
        for (a, pa), (b, pb) in combinations(by_variant.items(), 2):
            for point in sorted(set(pa) & set(pb)):
                found = _compare(pa[point], pb[point], pooled, own[a][0] | own[b][0], own[a][1] | own[b][1])
                if found:
                    out.append(Violation("same-rendering", (a, b), f"{point[1]}'s prompt after round {point[0]} "
                                         f"of the same history ({', '.join(members)}): {found}"))
                    break
    return list(dict.fromkeys(out))


def plugin_declared(spec: SessionSpec) -> tuple[set[str], set[str]]:
    """The sections and actions `spec`'s plugin structures declare (the study's are `OWN_SECTIONS`)."""
    plugins = plugin_structures(spec.variant)
    return {t for s in plugins for t in s.sections}, {a for s in plugins for a in s.actions}


def _compare(sa: dict[str, str], sb: dict[str, str], pooled: bool, own: AbstractSet[str] = frozenset(),
             actions: AbstractSet[str] = frozenset()) -> str:
    """What differs between two renderings of the same history, beyond the allowed ('' for nothing);
    `own`/`actions`: the plugin structures' declared sections and actions in either variant."""
    for name in sorted(set(sa) | set(sb)):
        if name in OWN_SECTIONS or name in own:
            continue
        if name not in sa or name not in sb:
            return f"section {name!r} shown in one only"
        ta, tb = sa[name], sb[name]
        if name == "Valid actions":
            ta, tb = _without_structural(ta, actions), _without_structural(tb, actions)
        if name == "Now" and pooled:
            ta, tb = (re.sub(r"\d+ actions? left for [^;)]+", "", t) for t in (ta, tb))
        if ta != tb:
            return f"section {name!r} differs:\n      {_first_diff(ta, tb)}"
    return ""


def _without_structural(text: str, actions: AbstractSet[str]) -> str:
    return "\n".join(line for line in text.splitlines()
                     if line[2:].split(":")[0] not in STRUCTURAL_ACTIONS and line[2:].split(":")[0] not in actions)


def _first_diff(a: str, b: str) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for x, y in zip(la, lb):
        if x != y:
            return f"{x[:100]!r}\n      vs {y[:100]!r}"
    return f"{len(la)} lines vs {len(lb)} lines: {(la[len(lb):] or lb[len(la):])[0][:100]!r}"


def _kept(variant: str, points: dict[tuple[int, str], dict[str, str]]) -> list[Violation]:
    """Sections a member is shown at its first point and no longer later (but the transient ones)."""
    out = []
    for pid in {pid for _, pid in points}:
        mine = sorted((rnd, shown) for (rnd, who), shown in points.items() if who == pid)
        first = set(mine[0][1]) - set(TRANSIENT)
        for rnd, shown in mine[1:]:
            gone = sorted(first - set(shown))
            if gone:
                out.append(Violation("same-rendering", (variant,), f"{pid} is shown {', '.join(gone)} in round "
                                     f"{mine[0][0]} and no longer in round {rnd}"))
                break
    return out
