"""Initiative entropy and controlled autonomy on constructed chats, computed by hand."""

import math

import pytest

from colabkit.evaluation.metrics.initiative import (
    INITIATIVE_PROMPT,
    REPLY_PROMPT,
    InitiativeVerdict,
    ReplyVerdict,
    initiative,
    initiative_entropy,
    initiative_fields,
    reply_items,
)
from colabkit.evaluation.metrics.process import chat_turns
from tests.helpers.trajectories import Trajectory

TEAM = ("ai", "D", "R")


def label(kind):
    return InitiativeVerdict(reason="r", initiative=kind)


def reply(confirms, halts):
    return ReplyVerdict(reason="r", confirms=confirms, halts=halts)


def chat():
    t = Trajectory(TEAM)
    t.start()
    t.build_step("R")  # build phase: no message of the task phase
    msgs = [
        ("ai", "Can you load capital.csv?", "task", None),
        ("D", "Yes, note it uses decimal commas.", "dialogue", (True, False)),
        ("ai", "ok", "none", None),
        ("R", "The Younger Bronze Age is 1100-500 BCE.", "dialogue", (False, False)),
        ("ai", "Should I drop the group column?", "task", None),
        ("R", "Stop, do not drop anything yet.", "task", (True, True)),
        ("ai", "Is the peak at 1700 BCE?", "dialogue", None),
        ("ai", "Anyone?", "none", None),
        ("D", "Stop plotting.", "task", (False, True)),
    ]
    labels, replies = {}, {}
    for sender, text, kind, rep in msgs:
        event = t.say(sender, text)
        labels[f"event-{event.seq}"] = label(kind)
        if rep is not None:
            replies[f"event-{event.seq}"] = reply(*rep)
    t.request("ai", "send_message", "D", text="held, never sent")  # never reached the chat
    t.end()
    return t, labels, replies


def test_hand_computed_entropy_and_controlled_autonomy():
    t, labels, replies = chat()
    turns = chat_turns(t.events)
    assert len(turns) == 9
    result = initiative(turns, TEAM, labels, replies)
    # initiative events: ai 3 (two task, one dialogue; "ok" and "Anyone?" are none), D 2, R 2; total 7
    assert result.initiative_counts == {"ai": 3, "D": 2, "R": 2}
    p = [3 / 7, 2 / 7, 2 / 7]
    # H = -(3/7 ln 3/7 + 2 * 2/7 ln 2/7) / ln 3 = (0.363128 + 0.715864) / 1.098612 = 0.982141
    expected = -sum(x * math.log(x) for x in p) / math.log(3)
    assert result.h_init_norm == pytest.approx(expected) == pytest.approx(0.982141, abs=1e-6)
    assert result.h_init_zero_rule == pytest.approx(expected)  # every share > 0
    # CA+: (ai "?" -> D confirms) + (ai "?" -> R confirms) = 2; "Is the peak...?" is followed by
    # the AI itself, and "Anyone?" by D who does not confirm. CA-: R's and D's "Stop" = 2.
    assert result.ca_plus == 2
    assert result.ca_minus == 2
    assert result.flags == ()


def test_silent_member_still_counts_in_team_size_and_zero_rule_gives_zero():
    # ai 3, R 1, D 0: p = 3/4, 1/4, 0 over |U| = 3
    # H = -(0.75 ln 0.75 + 0.25 ln 0.25) / ln 3 = (0.215762 + 0.346574) / 1.098612 = 0.511860
    h, zero = initiative_entropy({"ai": 3, "R": 1}, TEAM)
    assert h == pytest.approx(0.511860, abs=1e-6)
    assert zero == 0.0
    # two equal members in a team of three: ln 2 / ln 3 = 0.630930, not 1
    h, _ = initiative_entropy({"ai": 1, "D": 1}, TEAM)
    assert h == pytest.approx(math.log(2) / math.log(3))
    # a perfectly even team is 1; one member alone is 0
    assert initiative_entropy({"ai": 2, "D": 2, "R": 2}, TEAM) == (pytest.approx(1.0), pytest.approx(1.0))
    assert initiative_entropy({"ai": 5}, TEAM) == (0.0, 0.0)
    # the log's "system" or a stranger is not a member and is ignored
    assert initiative_entropy({"ai": 1, "D": 1, "system": 9}, ("ai", "D")) == (pytest.approx(1.0), pytest.approx(1.0))


def test_single_agent_is_not_applicable():
    t = Trajectory(("ai",))
    t.edit("ai", "H")
    result = initiative(chat_turns(t.events), ("ai",), {}, {})
    assert (result.h_init_norm, result.h_init_zero_rule, result.ca_plus, result.ca_minus) == (None,) * 4
    assert result.flags == ()


def test_no_initiative_event_is_missing_and_flagged_not_zero():
    t = Trajectory(TEAM)
    a = t.say("ai", "ok")
    d = t.say("D", "thanks")
    result = initiative(chat_turns(t.events), TEAM, {f"event-{a.seq}": label("none"), f"event-{d.seq}": label("none")},
                        {f"event-{d.seq}": reply(False, False)})
    assert result.h_init_norm is None and result.h_init_zero_rule is None
    assert "initiative:no_initiative_events" in result.flags
    assert (result.ca_plus, result.ca_minus) == (0, 0)


def test_a_failed_judgement_leaves_values_missing_and_flagged():
    t, labels, replies = chat()
    turns = chat_turns(t.events)
    labels[turns[4].item_id] = None    # the judge errored on one message
    result = initiative(turns, TEAM, labels, replies)
    assert result.h_init_norm is None and result.h_init_zero_rule is None
    assert "initiative:judge_missing(1)" in result.flags
    assert result.ca_plus == 2  # controlled autonomy has all its labels
    del replies[turns[8].item_id]     # never answered
    result = initiative(turns, TEAM, labels, replies)
    assert result.ca_plus is None and result.ca_minus is None
    assert "controlled_autonomy:judge_missing(1)" in result.flags


def test_items_and_prompt_fields():
    t, _, _ = chat()
    turns = chat_turns(t.events)
    assert [turns[i].sender for i in reply_items(turns, TEAM)] == ["D", "R", "R", "D"]
    fields = initiative_fields(turns, 4)
    assert fields["message"] == {"sender": "ai", "text": "Should I drop the group column?"}
    assert [m["sender"] for m in fields["earlier_messages"]] == ["D", "ai", "R"]
    assert INITIATIVE_PROMPT.version >= 1 and REPLY_PROMPT.version >= 1
    assert "dialogue" in INITIATIVE_PROMPT.instructions


def test_h_init_events_counts_every_event_a_member_initiated_not_only_its_messages():
    from collections import Counter

    from colabkit.evaluation.metrics.initiative import initiated_events

    t = Trajectory()
    t.start()
    t.say("ai", "plan")  # ai: message
    t.run("ai", "x = 1")  # ai: cell
    t.run("D", "x +", status="error")  # D: a failed cell is still D's initiative
    req = t.request("ai", "edit_result", "R", text="H1")  # ai: proposal
    t.decide("R", req, approve=True)  # R: a decision is machinery (issue 42); the edit applied is the ai's proposal
    t.wait("D")
    t.failed("R", "send_message")
    t.end()
    counts = initiated_events(t.events)
    assert counts == Counter({"ai": 3, "D": 1})
    # the messages-only figure would see one member (ai) only: entropy 0; over events, two of three
    h_events, _ = initiative_entropy(counts, t.team)
    expected = -sum(p * math.log(p) for p in (3 / 4, 1 / 4)) / math.log(3)
    assert math.isclose(h_events, expected)


def test_h_init_events_leaves_every_decision_out_and_h_init_events_all_counts_them():
    """Decisions exist only where requests can be open (gated variants): machinery, in the task and
    in the closing pass alike (issue 42)."""
    from collections import Counter

    from colabkit.evaluation.metrics.initiative import initiated_events

    t = Trajectory(("ai", "R"))
    t.start()
    t.run("ai", "x = 1")
    t.decide("R", t.request("ai", "edit_result", "R", text="H0"), approve=True)
    t.decide("R", t.request("ai", "edit_result", "R", text="H1"), approve=True, closing=True)
    t.end()
    assert initiated_events(t.events) == Counter({"ai": 3})
    assert initiated_events(t.events, decisions=True) == Counter({"ai": 3, "R": 2})
