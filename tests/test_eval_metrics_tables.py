"""Stored constructed sessions scored by `score_results` land in the tables as worked out by hand.

One default-dr session (chat, cells, a gated edit approved, a gated cell rejected, an
expired finish) and one single-agent session, scored end to end through the runner with a
judge double; the scores table must carry the hand-computed values, N/A as NaN (never 0),
and the gated-events table one row per request.
"""

import math

import pandas as pd
import pytest

from colabkit.evaluation import load_gate_annotations, load_scores, score_results
from colabkit.evaluation.judge import judge_config
from colabkit.llm import Gateway, RetryPolicy
from colabkit.store import atomic_write_text
from tests.helpers.judges import perfect_answer, use_judge_double
from tests.helpers.stored import store_session
from tests.helpers.trajectories import Trajectory

TASK = "demo_archaeology/0/0"  # tags: the time_series family (7 nodes)
METRICS = ["initiative", "work", "a_profile", "c_wf", "s_hyp", "gates"]


def answer(prompt_id: str, payload: dict) -> dict:
    """A judge that answers from the constructed sessions' texts (fixed rules, stated here)."""
    if prompt_id == "initiative":   # "ok" is no initiative, everything else is dialogue
        return {"reason": "r", "initiative": "none" if payload["message"]["text"] == "ok" else "dialogue"}
    if prompt_id == "reply":        # nobody confirms or halts
        return {"reason": "r", "confirms": False, "halts": False}
    if prompt_id == "profile":      # anything mentioning the CSV is the Data Analyst's
        return {"reason": "r", "expertise": "D" if "csv" in payload["contribution"]["content"] else "generic"}
    if prompt_id == "workflow_node":  # only the series step is implemented, by a groupby cell
        cell = next((int(c.split()[1]) for c in payload["cells"] if "groupby" in c), None)
        series = payload["step"].startswith("Compute or print") and cell is not None
        return {"reason": "r", "implemented": series, "cell": cell if series else None}
    if prompt_id == "hypothesis_claims":
        return {"claims": [s.strip() + "." for s in payload["hypothesis"].split(".") if s.strip()]}
    if prompt_id == "claim_support":  # a claim is supported when it contains 2300 (cell 1's output)
        return {"reason": "r", "supported": "2300" in payload["claim"], "cell": 1 if "2300" in payload["claim"] else None}
    if prompt_id == "gate":
        return {"reason": "r", "expertise_fit": True, "grounded": payload["decision"]["reason"] != "ok",
                "correct_in_hindsight": True, "changed_course": False}
    return perfect_answer(prompt_id, payload)


def write(folder, traj: Trajectory) -> None:
    atomic_write_text(folder / "events.jsonl", "".join(e.model_dump_json() + "\n" for e in traj.events))
    atomic_write_text(folder / "snapshot.json", traj.snapshot().model_dump_json())


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    hypothesis = "Axes peak around 2300 BCE. Daggers rise after that."
    team = store_session(results, TASK, hypothesis, variant_name="default-dr")
    t = Trajectory(("ai", "D", "R"), session_id=team.name)
    t.start()
    t.say("D", "hoard_finds.csv counts finds per century.")        # D dialogue
    t.say("R", "ok")                                                 # no initiative
    t.say("ai", "I will find the peak.")                             # ai dialogue
    t.run("D", "import pandas as pd\nh = pd.read_csv('data/hoard_finds.csv')", "loaded")  # cell 0
    t.run("ai", "h.groupby('BCE')['axes'].sum().idxmax()", "2300")  # cell 1
    r1 = t.request("ai", "edit_result", "R", text=hypothesis)
    t.decide("R", r1, approve=True, reason="cell 1 shows the peak")
    r2 = t.request("R", "execute_code", "D", code="h = h.dropna()")
    t.decide("D", r2, approve=False, reason="ok")
    t.request("ai", "finish", "R", reason="done")
    t.end()
    write(team, t)
    single = store_session(results, TASK, "", variant_name="single")
    s = Trajectory(("ai",), session_id=single.name)
    s.start()
    s.run("ai", "print(1)", "1")
    s.end()
    write(single, s)
    use_judge_double({}, fallback=answer)
    score_results(results, metrics=METRICS, judge=judge_config("judgedouble/tables"),
                  gateway=Gateway(retry=RetryPolicy(max_attempts=1, base_delay_s=0)))
    scores = load_scores(results).set_index("variant")
    return scores, load_gate_annotations(results)


def test_team_session_row_matches_the_hand_computed_values(scored):
    scores, _ = scored
    row = scores.loc["default-dr"]
    # initiative: ai 1, D 1, R 0 of 2 over |U| = 3: H = ln 2 / ln 3 = 0.630930; zero rule: R silent -> 0
    assert row["h_init_norm"] == pytest.approx(math.log(2) / math.log(3))
    assert row["h_init_zero_rule"] == 0.0
    assert (row["ca_plus"], row["ca_minus"]) == (0, 0)
    # work: D cell 0, ai cell 1, ai's approved edit = 3; W_human = D's cell = 1 (R's cell was rejected)
    assert (row["w_total"], row["w_human"]) == (3, 1)
    # a_profile: the humans' contributions are D's message and D's cell (both mention the csv: D, own),
    # R's approval of the hypothesis edit and D's rejection of "h = h.dropna()" (generic) -> 2/4 = 0.5 with the
    # decisions; a_profile (the tables') leaves them out, as only gated variants have any -> 2/2
    assert row["a_profile_with_decisions"] == pytest.approx(0.5) and row["a_profile"] == pytest.approx(1.0)
    # c_wf: load (rule, cell 0) + series (judged, cell 1) = 2 of 7 nodes; the plot rule finds no plot
    assert row["c_wf"] == pytest.approx(2 / 7)
    # s_hyp: 2 claims, only "Axes peak around 2300 BCE." supported by cell 1 -> 0.5, not all
    assert row["s_hyp"] == pytest.approx(0.5) and not row["s_hyp_all"]
    # gates: 3 requests, 1 approved, 1 rejected, 1 expired
    assert row["n_gated"] == 3
    assert row["approval_rate"] == pytest.approx(1 / 3) and row["rejection_rate"] == pytest.approx(1 / 3)


def test_single_session_row_is_na_where_undefined_and_zero_where_counted(scored):
    scores, _ = scored
    row = scores.loc["single"]
    for column in ("h_init_norm", "h_init_zero_rule", "ca_plus", "ca_minus", "a_profile", "w_human",
                   "approval_rate", "rejection_rate"):
        assert pd.isna(row[column]), column
    assert (row["w_total"], row["n_gated"]) == (1, 0)
    assert (row["s_hyp"], row["s_hyp_all"]) == (0.0, False)  # undelivered
    assert row["c_wf"] == 0.0  # cell 0 ran but is neither a data load nor a plot; no judged node implemented


def test_gate_table_has_one_row_per_request(scored):
    _, gates = scored
    rows = gates.set_index("request_id")
    assert list(rows.index) == ["req-1", "req-2", "req-3"]
    assert list(rows["decision"].fillna("expired")) == ["approved", "rejected", "expired"]
    assert list(rows["signatory"]) == ["R", "D", "R"]
    assert bool(rows.loc["req-1", "grounded"]) is True and bool(rows.loc["req-2", "grounded"]) is False
    assert pd.isna(rows.loc["req-3", "grounded"]) and pd.isna(rows.loc["req-3", "latency_events"])
    assert "gates:expired" in rows.loc["req-3", "flags"]
