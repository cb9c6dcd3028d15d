"""Gated events: facts, latencies and rates from a constructed log, worked out by hand."""

import pytest

from colabkit.evaluation.metrics.gates import (
    GATE_PROMPT,
    GateVerdict,
    following_events,
    gate_annotations,
    gate_fields,
    gate_rates,
    gate_requests,
)
from colabkit.team import variant
from tests.helpers.trajectories import Trajectory

TEAM = ("ai", "D", "R")


def session():
    t = Trajectory(TEAM)
    t.start()                                                             # seq 0
    r1 = t.request("ai", "edit_result", "R", note="check the period", text="Axes peak c. 3500 BCE")  # seq 1
    t.wait("D")                                                           # seq 2
    t.next_round()
    t.decide("R", r1, approve=True, reason="cell 2 shows the maximum")   # seq 3 (+ seq 4 applied edit)
    r2 = t.request("D", "execute_code", "ai", code="df = df.dropna()")   # seq 5, round 2
    t.decide("ai", r2, approve=False, reason="drops half the rows")      # seq 6, round 2
    t.run("ai", "df.fillna(0)", "filled")                                # seq 7
    r3 = t.request("ai", "finish", "R", reason="done")                   # seq 8: never decided
    t.end()                                                               # seq 9 expired, 10 end
    return t, (r1, r2, r3)


def test_requests_decisions_and_latencies():
    t, (r1, r2, r3) = session()
    reqs = gate_requests(t.events)
    assert [r.request_id for r in reqs] == [r1, r2, r3]
    a, b, c = reqs
    assert (a.action, a.proposer, a.signatory, a.decision, a.reason) == \
        ("edit_result", "ai", "R", "approved", "cell 2 shows the maximum")
    # r1: requested at seq 1 in round 1, approved at seq 3 in round 2 -> 2 events, 1 round
    assert (a.request_seq, a.decision_seq, a.latency_events, a.latency_rounds) == (1, 3, 2, 1)
    # r2: requested at seq 5, rejected at seq 6, both in round 2 -> 1 event, 0 rounds
    assert (b.decision, b.latency_events, b.latency_rounds, b.payload) == ("rejected", 1, 0, "df = df.dropna()")
    # r3: expired -> no decision, no latency
    assert (c.decision, c.latency_events, c.latency_rounds) == ("expired", None, None)
    assert c.flags == ("gates:expired",)
    # 3 requests: 1 approved, 1 rejected (the expired third is neither)
    rates = gate_rates(reqs)
    assert rates.n_gated == 3
    assert rates.approval_rate == pytest.approx(1 / 3) and rates.rejection_rate == pytest.approx(1 / 3)


def test_no_requests_gives_missing_rates_not_zero():
    t = Trajectory(TEAM)
    t.run("ai", "x = 1")
    rates = gate_rates(gate_requests(t.events))
    assert (rates.n_gated, rates.approval_rate, rates.rejection_rate) == (0, None, None)


def test_annotations_keep_missing_judge_labels_missing():
    t, (r1, r2, r3) = session()
    reqs = gate_requests(t.events)
    verdicts = {r1: GateVerdict(reason="x", expertise_fit=True, grounded=True, correct_in_hindsight=False,
                                changed_course=False), r2: None}
    rows = gate_annotations(reqs, verdicts)
    assert (rows[0].expertise_fit, rows[0].grounded, rows[0].correct_in_hindsight, rows[0].changed_course) == \
        (True, True, False, False)
    assert rows[0].flags == []
    assert rows[1].decision == "rejected" and rows[1].grounded is None
    assert rows[1].flags == ["gates:judge_missing(1)"]
    assert rows[2].decision is None and rows[2].expertise_fit is None and "gates:expired" in rows[2].flags


def test_judge_sees_what_followed_the_decision():
    t, (r1, _, _) = session()
    req = gate_requests(t.events)[0]
    after = following_events(t.events, req)
    assert after[0].action == "edit_result" and after[0].participant == "ai"  # the approved edit took effect
    assert all(e.action != "wait" for e in after)
    fields = gate_fields(req, (variant("default-dr").persona("D"), variant("default-dr").persona("R")),
                         after, t.hypothesis)
    assert fields["decision"] == {"signatory": "R", "decision": "approved", "reason": "cell 2 shows the maximum"}
    assert fields["submitted_hypothesis"] == "Axes peak c. 3500 BCE"
    assert fields["request"]["gate_note"] == "check the period" and req.flags == ()
    assert GATE_PROMPT.id == "gate"
