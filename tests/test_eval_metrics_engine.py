"""The process metrics read a log the real engine wrote (scripted participants, real kernel).

The hand-computed fixtures build logs with `tests/helpers/trajectories.py`; this test checks
that those logs have the shape the engine really writes, by computing Work and the gate
facts on a real preassigned-dr session and comparing with what was scripted.
"""

import asyncio

import pytest

from colabkit.evaluation.metrics.gates import gate_rates, gate_requests
from colabkit.evaluation.metrics.process import chat_turns, successful_cells
from colabkit.evaluation.metrics.work import work
from colabkit.llm import Gateway, ModelConfig
from colabkit.session import ListSink, SessionSpec, run_session
from colabkit.session.scheduler import round_order
from colabkit.tasks import load_tasks
from colabkit.team import variant
from tests.helpers.scripted import use_scripted

TASK = load_tasks().get("demo_archaeology/0/0")


def step(action: str, content: str = "", to: str = "") -> dict:
    return {"thought": "t", "action": action, "content": content, "to": to}


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    team = ("ai", "D", "R")
    seed = next(s for s in range(1000) if all(round_order(team, s, r)[0] == "ai" for r in range(1, 6)))
    use_scripted({
        "ai": [step("execute_code", "print(6 * 7)"), step("edit_result", "H1"), step("edit_result", "H2"),
               step("send_message", "Shall I finish?", "all"), step("finish", "ready")],
        "D": [step("execute_code", "x = 3")],
        "R": [step("wait"), step("approve", "fits the data", "req-1"), step("reject", "no evidence", "req-2"), step("wait"),
              step("send_message", "Yes, finish.", "ai"), step("approve", "ready", "req-3")],
    }, default={"thought": "t", "action": "wait"})
    var = variant("preassigned-dr")
    spec = SessionSpec(task_id=TASK.id, variant=var, seed=seed,
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team})
    sink = ListSink()
    result = asyncio.run(run_session(spec, TASK, gateway=Gateway(), sink=sink,
                                     workdir_root=tmp_path_factory.mktemp("engine")))
    return result, sink.events


def test_metrics_on_a_log_the_engine_wrote(session):
    result, events = session
    assert result.ended_by == "finish"
    # work: ai's cell + ai's approved H1 (applied as ai's) = 2, D's cell = 1; H2 was rejected
    w = work(events, ("ai", "D", "R"))
    assert (w.w_total, w.w_human, w.by_member) == (3, 1, {"ai": 2, "D": 1, "R": 0})
    # gates: req-1 (edit H1) approved, req-2 (edit H2) rejected, req-3 (finish) approved, all by R
    reqs = gate_requests(events)
    assert [(r.request_id, r.action, r.proposer, r.signatory, r.decision) for r in reqs] == [
        ("req-1", "edit_result", "ai", "R", "approved"), ("req-2", "edit_result", "ai", "R", "rejected"),
        ("req-3", "finish", "ai", "R", "approved")]
    assert all(r.latency_rounds == 0 and r.latency_events is not None and r.latency_events >= 1 for r in reqs)
    assert all(r.flags == () for r in reqs)  # every pending event logged its gate rule
    rates = gate_rates(reqs)
    assert (rates.n_gated, rates.approval_rate, rates.rejection_rate) == (3, pytest.approx(2 / 3), pytest.approx(1 / 3))
    assert [(t.sender, t.text) for t in chat_turns(events)] == [("ai", "Shall I finish?"), ("R", "Yes, finish.")]
    assert [c.code for c in successful_cells(result.snapshot)] == ["print(6 * 7)", "x = 3"]
