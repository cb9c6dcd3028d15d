"""A_profile on a constructed trajectory, computed by hand."""

import pytest
from pydantic import ValidationError

from colabkit.evaluation.metrics.initiative import InitiativeVerdict
from colabkit.evaluation.metrics.process import chat_turns
from colabkit.evaluation.metrics.profile import (
    PROFILE_PROMPT,
    a_profile,
    contributions,
    persona_cards,
    profile_fields,
    verdict_schema,
)
from colabkit.team import variant
from tests.helpers.trajectories import Trajectory

TEAM = ("ai", "D", "R")


def init(kind):
    return InitiativeVerdict(reason="r", initiative=kind)


def session():
    t = Trajectory(TEAM)
    t.start()
    t.build_step("D")
    m_ai = t.say("ai", "Let us load the data.")                    # AI: never a human contribution
    m_d = t.say("D", "capital.csv uses decimal commas.")           # D initiative -> item
    m_ok = t.say("D", "ok")                                        # D, no initiative -> not an item
    m_r = t.say("R", "Check the period 1100-500 BCE.")             # R initiative -> item
    c_d = t.run("D", "df = pd.read_csv('data/capital.csv', decimal=',')", "loaded")  # D cell -> item
    t.run("D", "1/0", "", status="error")                          # failed cell -> not an item
    e_r = t.edit("R", "Draft")                                     # R edit -> item
    req = t.request("ai", "edit_result", "R", text="Final")
    d_r = t.decide("R", req, approve=True, reason="the peak is in cell 0")  # R decision -> item
    t.end()                                                         # (the applied edit is the AI's)
    initiative = {f"event-{m.seq}": init(k) for m, k in ((m_ai, "task"), (m_d, "dialogue"), (m_ok, "none"),
                                                         (m_r, "task"))}
    return t, initiative, [m_d, m_r, c_d, e_r, d_r]


def test_hand_computed_a_profile():
    t, initiative, items = session()
    found, flags = contributions(t.events, chat_turns(t.events), TEAM, initiative)
    assert flags == []
    assert [c.item_id for c in found] == [f"event-{e.seq}" for e in items]
    assert [c.kind for c in found] == ["message", "message", "execute_code", "edit_result", "decision"]
    # a decision is the signatory's own words: its reason, never the proposal it decided
    assert found[4].content == "approved; reason: the peak is in cell 0" and "Final" not in found[4].content
    m_d, m_r, c_d, e_r, d_r = (f"event-{e.seq}" for e in items)
    labels = {m_d: "D", m_r: "generic", c_d: "R", e_r: "R", d_r: "R"}
    result = a_profile(found, labels, TEAM)
    # own: D's message (D), R's edit (R), R's decision (R) = 3; other: D's cell judged R = 1;
    # generic: R's message = 1. A_profile = 3 / 5 = 0.6
    assert (result.own, result.other, result.generic, result.n_contributions) == (3, 1, 1, 5)
    assert result.a_profile == pytest.approx(0.6)


def test_missing_labels_leave_a_profile_missing_and_flagged():
    t, initiative, items = session()
    turns = chat_turns(t.events)
    found, _ = contributions(t.events, turns, TEAM, initiative)
    labels = {c.item_id: "D" for c in found}
    labels[found[2].item_id] = None
    result = a_profile(found, labels, TEAM)
    assert result.a_profile is None and "a_profile:judge_missing(1)" in result.flags
    # an unknown initiative label of a human message: the set of contributions is unknown
    initiative[f"event-{items[1].seq}"] = None
    found, flags = contributions(t.events, turns, TEAM, initiative)
    assert found is None and flags == ["a_profile:judge_missing(1)"]
    result = a_profile(found, {}, TEAM, flags)
    assert result.a_profile is None and result.flags == ("a_profile:judge_missing(1)",)


def test_not_applicable_without_humans_and_flagged_without_contributions():
    assert a_profile([], {}, ("ai",)).a_profile is None
    assert a_profile([], {}, ("ai",)).flags == ()
    t = Trajectory(TEAM)
    t.say("D", "ok")
    found, _ = contributions(t.events, chat_turns(t.events), TEAM, {"event-0": init("none")})
    result = a_profile(found, {}, TEAM)
    assert result.a_profile is None and result.n_contributions == 0
    assert result.flags == ("a_profile:no_human_contributions",)


def test_cards_schema_and_fields():
    cards = persona_cards(variant("default-r"))
    assert [c.id for c in cards] == ["R", "D"]  # the team's human first, the other expert still shown
    schema = verdict_schema(("R", "D"))
    assert schema.model_validate({"reason": "x", "expertise": "generic"})
    with pytest.raises(ValidationError):  # garbage is refused at parsing (then repaired or missing)
        schema.model_validate({"reason": "x", "expertise": "ai"})
    t, initiative, _ = session()
    found, _ = contributions(t.events, chat_turns(t.events), TEAM, initiative)
    fields = profile_fields(found[0], cards)
    assert fields["answer_with_one_of"] == ["R", "D", "generic"]
    assert set(fields["contribution"]) == {"kind", "content"}  # the contributor is not named
    assert PROFILE_PROMPT.id == "profile"
