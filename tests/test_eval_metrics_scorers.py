"""The process-metric scorers in the evaluation framework, on scripted judge answers.

Each test scores a constructed trajectory through the real judge and gateway (a judge double
answers by prompt id) and checks the stored columns equal the values worked out by hand in
the metric's own test; then that a judge that errors or answers garbage leaves the column
missing (None) and flagged, never 0 or 1.
"""

import asyncio
from pathlib import Path

import pytest

from colabkit.evaluation.builtin import scorers_for
from colabkit.evaluation.judge import Judge, judge_config
from colabkit.evaluation.scorer import SessionContext
from colabkit.llm import Gateway, RetryPolicy
from colabkit.store import SessionRecord
from colabkit.tasks import load_tasks
from tests.helpers.judges import use_judge_double
from tests.helpers.stored import store_session
from tests.helpers.trajectories import Trajectory

TEAM = ("ai", "D", "R")


def context(tmp_path: Path, traj: Trajectory, *, variant_name: str = "default-dr", judge: bool = True,
            task_id: str = "demo_archaeology/0/0") -> SessionContext:
    folder = store_session(tmp_path, task_id, traj.hypothesis, variant_name=variant_name)
    record = SessionRecord.model_validate_json((folder / "session.json").read_text())
    suite = load_tasks()
    gateway = Gateway(retry=RetryPolicy(max_attempts=1, base_delay_s=0))
    return SessionContext(folder=folder, record=record, events=tuple(traj.events), snapshot_source=traj.snapshot,
                          task=suite.get(task_id), gold=None,
                          judge=Judge(gateway, judge_config("judgedouble/scripted")) if judge else None)


def score(name: str, ctx: SessionContext, repeats: int = 1):
    scorer = scorers_for([name])[0]
    results = [asyncio.run(scorer.score(ctx.for_repeat(k))) for k in range(repeats)]
    return scorer.combine(results)


INITIATIVE = {"Can you load capital.csv?": "task", "Yes, note it uses decimal commas.": "dialogue", "ok": "none",
              "The Younger Bronze Age is 1100-500 BCE.": "dialogue", "Stop, do not drop anything yet.": "task"}


def chat_session() -> Trajectory:
    t = Trajectory(TEAM)
    t.start()
    for sender, text in [("ai", "Can you load capital.csv?"), ("D", "Yes, note it uses decimal commas."),
                         ("ai", "ok"), ("R", "The Younger Bronze Age is 1100-500 BCE."),
                         ("R", "Stop, do not drop anything yet.")]:
        t.say(sender, text)
    t.end()
    return t


def initiative_answer(payload):
    return {"reason": "r", "initiative": INITIATIVE[payload["message"]["text"]]}


def reply_answer(payload):
    text = payload["message"]["text"]
    return {"reason": "r", "confirms": text.startswith("Yes"), "halts": text.startswith("Stop")}


def test_initiative_scorer_matches_the_hand_computed_values(tmp_path):
    use_judge_double({"initiative": [initiative_answer] * 5, "reply": [reply_answer] * 3}, fallback=None)
    result = score("initiative", context(tmp_path, chat_session()))
    # initiative: ai 1 (the "ok" is none), D 1, R 2 of 4; H = -(2 * 0.25 ln 0.25 + 0.5 ln 0.5) / ln 3
    #   = (0.693147 + 0.346574) / 1.098612 = 0.946395; every share > 0 so the zero rule agrees.
    # CA+: "Can you load capital.csv?" -> D "Yes, ..." = 1. CA-: R's "Stop, ..." = 1.
    assert result.values["h_init_norm"] == pytest.approx(0.946395, abs=1e-6)
    assert result.values["h_init_zero_rule"] == pytest.approx(0.946395, abs=1e-6)
    assert (result.values["ca_plus"], result.values["ca_minus"]) == (1, 1)
    assert result.flags == [] and result.complete
    assert sorted(j.label for j in result.judgements if j.metric == "h_init_norm") == \
        ["dialogue", "dialogue", "none", "task", "task"]


# garbage gets one repair request (which gets the second garbage: one message missing); an
# error is not repaired, so the two errors cost two messages
@pytest.mark.parametrize("bad, transient, lost", [("this is not json", False, 1), (RuntimeError("judge down"), True, 2)])
def test_initiative_judge_failure_is_missing_and_flagged(tmp_path, bad, transient, lost):
    use_judge_double({"initiative": [initiative_answer, bad, bad, initiative_answer, initiative_answer, initiative_answer],
                      "reply": [reply_answer] * 3}, fallback=None)
    result = score("initiative", context(tmp_path, chat_session()))
    assert result.values["h_init_norm"] is None and result.values["h_init_zero_rule"] is None
    assert f"initiative:judge_missing({lost})" in result.flags
    assert any(f.startswith("initiative: judge_") for f in result.flags)
    assert result.complete is (not transient)


def test_single_agent_initiative_asks_nothing(tmp_path):
    double = use_judge_double({}, fallback=None)
    t = Trajectory(("ai",))
    t.edit("ai", "H")
    result = score("initiative", context(tmp_path, t, variant_name="single"))
    assert result.values == dict.fromkeys(("h_init_norm", "h_init_zero_rule", "ca_plus", "ca_minus"))
    assert double.calls == []


def test_work_scorer_runs_without_a_judge(tmp_path):
    t = Trajectory(TEAM)
    t.run("ai", "x = 1")
    r = t.request("ai", "edit_result", "R", text="H")
    t.decide("R", r, approve=True, reason="ok")
    t.run("D", "y = 2")
    result = score("work", context(tmp_path, t, judge=False))
    # ai: cell + approved edit = 2; D: cell = 1 -> W_total 3, W_human 1
    assert result.values == {"w_total": 3, "w_human": 1}


def profile_session() -> Trajectory:
    t = Trajectory(TEAM)
    t.say("D", "capital.csv uses decimal commas.")
    t.say("R", "ok")
    t.run("D", "df = pd.read_csv('data/capital.csv', decimal=',')", "loaded")
    t.edit("R", "Axes peak in the 36th century BCE.")
    return t


def test_profile_scorer_matches_the_hand_computed_value(tmp_path):
    expertise = {"capital.csv uses decimal commas.": "D", "Axes peak in the 36th century BCE.": "D"}
    double = use_judge_double({
        "initiative": [lambda p: {"reason": "r", "initiative": "none" if p["message"]["text"] == "ok" else "dialogue"}] * 2,
        "profile": [lambda p: {"reason": "r", "expertise": expertise.get(p["contribution"]["content"], "generic")}] * 3,
    }, fallback=None)
    result = score("a_profile", context(tmp_path, profile_session()))
    # contributions: D's message (D: own), D's cell (generic), R's edit (D: other); R's "ok" is none.
    # A_profile = 1 own / 3 = 0.333333
    assert result.values["a_profile"] == pytest.approx(1 / 3)
    assert sorted(j.label for j in result.judgements) == ["generic", "other", "own"]
    assert [c["payload"]["answer_with_one_of"] for c in double.asked("profile")][0] == ["D", "R", "generic"]


def test_profile_garbage_label_is_missing(tmp_path):
    use_judge_double({
        "initiative": [{"reason": "r", "initiative": "dialogue"}] * 2,
        "profile": [{"reason": "r", "expertise": "ai"}, {"reason": "r", "expertise": "ai"}] + [
            {"reason": "r", "expertise": "D"}] * 3,
    }, fallback=None)
    result = score("a_profile", context(tmp_path, profile_session()))
    assert result.values["a_profile"] is None
    assert "a_profile:judge_missing(1)" in result.flags


def workflow_session() -> Trajectory:
    t = Trajectory(TEAM)
    t.run("D", "import pandas as pd\nh = pd.read_csv('data/hoard_finds.csv')", "loaded")
    t.run("ai", "h.groupby('BCE')['axes'].sum().idxmax()", "2300")
    t.run("ai", "h.plot(x='BCE', y='axes')", "", status="error")
    return t


def test_workflow_scorer_on_a_demo_task(tmp_path):
    implemented = {"series": 1, "locate_event": 1}
    double = use_judge_double({"workflow_node": [
        lambda p: {"reason": "r", "implemented": any(k in p["step"] for k in ("Compute or print", "Locate")),
                   "cell": 1 if any(k in p["step"] for k in ("Compute or print", "Locate")) else None}] * 5},
        fallback=None)
    result = score("c_wf", context(tmp_path, workflow_session()))
    # time_series graph, 7 nodes: load (rule, cell 0), series (1), locate_event (1) = 3; the plot
    # failed (cell 2) and clean, map_terms, bin_window were judged not implemented -> 3/7
    assert result.values["c_wf"] == pytest.approx(3 / 7)
    assert result.details["family"] == "time_series"
    assert {k: v for k, v in result.details["matched"].items() if v is not None} == {"load": 0, **implemented}
    assert len(double.asked("workflow_node")) == 5
    assert all(len(c["payload"]["cells"]) == 2 for c in double.asked("workflow_node"))


def test_workflow_unmatched_family_is_na_and_flagged(tmp_path):
    double = use_judge_double({}, fallback=None)
    result = score("c_wf", context(tmp_path, workflow_session(), task_id="demo_archaeology/1/0"))
    assert result.values["c_wf"] is None and result.flags == ["c_wf:no_workflow_family"]
    assert double.calls == []


def support_session(hypothesis: str = "Axes peak around 2300 BCE. The peak count is 41.") -> Trajectory:
    t = Trajectory(TEAM)
    t.run("ai", "s.idxmax()", "2300")
    t.run("ai", "s.max()", "41", status="error")
    if hypothesis:
        t.edit("ai", hypothesis)
    return t


def test_support_scorer_matches_the_hand_computed_value(tmp_path):
    double = use_judge_double({
        "hypothesis_claims": [{"claims": ["Axes peak around 2300 BCE.", "The peak count is 41."]}],
        "claim_support": [lambda p: {"reason": "r", "supported": "2300" in p["claim"],
                                     "cell": 0 if "2300" in p["claim"] else None}] * 2,
    }, fallback=None)
    result = score("s_hyp", context(tmp_path, support_session()))
    # 1 of 2 claims supported (41 was only in a failed cell, not shown as evidence): S_hyp = 0.5
    assert result.values == {"s_hyp": 0.5, "s_hyp_all": False}
    assert all(len(c["payload"]["cells"]) == 1 for c in double.asked("claim_support"))


def test_support_undelivered_is_zero_without_asking_and_garbage_is_missing(tmp_path):
    double = use_judge_double({}, fallback=None)
    result = score("s_hyp", context(tmp_path / "a", support_session("")))
    assert result.values == {"s_hyp": 0.0, "s_hyp_all": False} and double.calls == []
    use_judge_double({"hypothesis_claims": ["garbage", "still garbage"]}, fallback=None)
    result = score("s_hyp", context(tmp_path / "b", support_session()))
    assert result.values == {"s_hyp": None, "s_hyp_all": None}
    assert "s_hyp:claims_missing" in result.flags and any("judge_invalid" in f for f in result.flags)


def gate_session() -> Trajectory:
    t = Trajectory(TEAM)
    r1 = t.request("ai", "edit_result", "R", text="Axes peak around 2300 BCE.")
    t.next_round()
    t.decide("R", r1, approve=True, reason="cell 0 shows it")
    r2 = t.request("ai", "execute_code", "D", code="df = df.dropna()")
    t.decide("D", r2, approve=False, reason="no")
    t.request("ai", "finish", "R", reason="done")
    t.end()
    return t


def gate_answer(grounded):
    return {"reason": "r", "expertise_fit": True, "grounded": grounded, "correct_in_hindsight": True,
            "changed_course": False}


def test_gates_scorer_rates_annotations_and_majority_over_repeats(tmp_path):
    # three repeats; two decided requests each: req-1 grounded T, F, T; req-2 grounded F, F, garbage
    use_judge_double({"gate": [gate_answer(True), gate_answer(False), gate_answer(False), gate_answer(False),
                               gate_answer(True), "garbage", "garbage"]}, fallback=None)
    result = score("gates", context(tmp_path, gate_session()), repeats=3)
    # 3 requests: 1 approved, 1 rejected, 1 expired -> rates 1/3 and 1/3
    assert result.values["n_gated"] == 3
    assert result.values["approval_rate"] == pytest.approx(1 / 3)
    assert result.values["rejection_rate"] == pytest.approx(1 / 3)
    rows = {a.request_id: a for a in result.gate_annotations}
    assert (rows["req-1"].decision, rows["req-1"].latency_events, rows["req-1"].latency_rounds) == ("approved", 1, 1)
    assert rows["req-1"].grounded is True      # majority of T, F, T
    assert rows["req-2"].grounded is False     # F, F and one missing
    assert rows["req-3"].decision is None and rows["req-3"].grounded is None
    assert any("judge_invalid" in f for f in result.flags)


def test_workflow_judge_error_is_missing_flagged_and_incomplete(tmp_path):
    no = {"reason": "r", "implemented": False, "cell": None}
    use_judge_double({"workflow_node": [no, no, RuntimeError("judge down"), no, no]}, fallback=None)
    result = score("c_wf", context(tmp_path, workflow_session()))
    assert result.values["c_wf"] is None
    assert "c_wf:judge_missing(1)" in result.flags and not result.complete
