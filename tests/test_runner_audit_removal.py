"""A counterfactual removal passes the audit as a declared change (issue 47): a Default-DR
session continued without R from N, against its control from the same N and seed, differs only
in what the removal declares; a removal that changes anything else is caught."""

from __future__ import annotations

import pytest

from colabkit.runner import build_spec
from colabkit.runner.audit import Policy, Scenario
from colabkit.runner.audit.player import scenario_spec
from colabkit.runner.audit.removal import removal_pair, removal_violations
from colabkit.session.fork import ForkReplay, replay_view
from colabkit.tasks import load_tasks

TASK = load_tasks().get("demo_archaeology/0/0")
# Everyone acts every turn (a waiting member is skipped while it has nothing new in view, so
# R's silence would move its turns: see `removal`'s docstring). R messages, runs cells and edits.
BUSY = Scenario(TASK.id, "dr", seed=1, budget=5, profile="full", gates="none", policies={
    "ai": Policy(("code:0", "edit:0", "msg:0", "code:1", "code:3")),
    "D": Policy(("code:0", "code:1", "code:3", "code:0", "code:1")),
    "R": Policy(("msg:0", "code:1", "msg:1", "edit:1", "code:3"))})


def play_pair(variant: str = "default-dr"):
    spec = scenario_spec(build_spec(TASK.id, variant, 0), BUSY)
    parent, _, _ = removal_pair(spec, TASK, BUSY, "R", 1)  # a first pass only to find R's turn in round 2
    at = next(e.seq for e in parent.events if e.participant == "R" and e.round == 2)
    parent, control, removed = removal_pair(spec, TASK, BUSY, "R", at)
    return parent, control, removed, at


def test_a_removal_differs_from_its_control_only_where_it_declares():
    parent, control, removed, at = play_pair()
    assert [replay_view(e) for e in control.events] == [replay_view(e) for e in parent.events]  # the parent
    r_after = [e.action for e in control.events[at:] if e.participant == "R"]
    assert {"send_message", "execute_code", "edit_result"} <= set(r_after)  # R had things to do after N
    assert not any(e.participant == "R" for e in removed.events[at:])
    assert removed.result.final_hypothesis != control.result.final_hypothesis  # a consequence, declared
    assert removal_violations(control, removed, "R", at) == []


def _also_silences(other: str):
    seated = ForkReplay.seated

    def mutant(self, participant: str) -> bool:
        return seated(self, participant) and not (self.reached and self.point.change.kind == "remove_member"
                                                  and participant == other)
    return mutant


def _announces(mp: pytest.MonkeyPatch) -> None:
    apply = ForkReplay._apply

    def mutant(self, session) -> None:
        apply(self, session)
        if self.point.change.kind == "remove_member":
            session.ws.chat.post("ai", "R has left the team", to=None)
    mp.setattr(ForkReplay, "_apply", mutant)


@pytest.mark.parametrize("mutation, caught", [
    (lambda mp: mp.setattr(ForkReplay, "seated", _also_silences("D")), "turns D"),
    (lambda mp: mp.setattr(ForkReplay, "seated", lambda self, participant: True), "R took a step"),
    (_announces, "requests D"),
], ids=["silences-another-member", "keeps-asking-the-member", "tells-the-team"])
def test_an_undeclared_difference_is_caught(monkeypatch, mutation, caught):
    mutation(monkeypatch)
    _, control, removed, at = play_pair()
    found = [v.render() for v in removal_violations(control, removed, "R", at)]
    assert any(caught in line for line in found), found
