"""`colabkit export --format inspect`: stored sessions as Inspect AI logs, read back with
Inspect's own `read_eval_log` and compared with the store event by event.

The results folder is `make demo`-like (two variants, scored), built from stored sessions
(helpers.scored_results), not a model batch, so the test is fast.
"""

from __future__ import annotations

import shutil
from collections import Counter

import pytest
from helpers.env import require
from helpers.scored_results import SUPPORTED, UNSUPPORTED, scored_results
from helpers.stored_session import TASK_ID

from colabkit.cli import main
from colabkit.store import load_events, load_sessions
from colabkit.tasks import load_tasks

try:
    from inspect_ai.log import read_eval_log
except ImportError:  # the `inspect` extra; CI installs it (the test extra), so there this fails
    read_eval_log = None


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    require(read_eval_log is not None, "inspect_ai not installed: pip install 'colabkit[inspect]'")
    folder = tmp_path_factory.mktemp("export") / "demo"
    scored_results(folder)
    return folder


def exported(results, out, *args):
    assert main(["export", str(results), "--format", "inspect", "--out", str(out), *args]) == 0
    return {path.name: read_eval_log(path) for path in sorted(out.glob("*.eval"))}


def test_export_has_a_sample_per_session_with_every_event_cell_and_gate_decision(results, tmp_path):
    logs = exported(results, tmp_path / "out")
    sessions = load_sessions(results).set_index("session_id")
    events = load_events(results)
    assert sorted(logs) == ["demo_scaffolded-dr.eval", "demo_single.eval"]
    samples = {s.id: (log, s) for log in logs.values() for s in log.samples}
    assert sorted(samples) == sorted(sessions.index)  # one sample per session, by session id
    query = load_tasks().get(TASK_ID).query
    for session_id, (log, sample) in samples.items():
        assert log.status == "success" and log.eval.metadata["variant"] == sessions.loc[session_id, "variant"]
        assert sample.input == query and sample.target == ""  # gold stays out unless asked for
        assert sample.output.completion == sessions.loc[session_id, "final_hypothesis"]
        assert sample.metadata["seed"] == sessions.loc[session_id, "seed"]
        mine = events[events["session_id"] == session_id]
        steps = [e for e in sample.events if e.event != "model"]
        # every stored event exactly once, in order, with its id
        assert [e.metadata["event_id"] for e in steps] == list(mine["event_id"])
        assert sum(e.event == "model" for e in sample.events) == mine["n_calls"].sum()
        assert {"w_total", "w_human"} <= set(sample.scores["work"].value)

    log, sample = next(v for v in samples.values() if v[1].metadata["variant"] == "scaffolded-dr")
    cells = [e for e in sample.events if e.event == "tool" and e.function == "execute_code"]
    stored_cells = load_events(results, [sample.id]).query("action == 'execute_code'")
    assert [e.id for e in cells] == [f"cell-{int(i)}" for i in stored_cells["cell_index"]] == ["cell-0", "cell-1"]
    assert [e.result.strip() for e in cells] == ["42", "D-CELL"]
    approvals = [(e.approver, e.decision, e.call.function, e.explanation) for e in sample.events if e.event == "approval"]
    assert approvals == [("R", "escalate", "edit_result", "held as req-1 until R approves"),
                         ("R", "approve", "edit_result", "matches the counts")]
    info = {e.source for e in sample.events if e.event == "info"}
    assert {"colabkit/memory_build", "colabkit/memory_frozen", "colabkit/session_end"} <= info
    assert [m.text for m in sample.messages] == ["[R → ai] Yes, the 12th century fits.",
                                                 "[ai → R] R, please sign the hypothesis."]
    s_hyp = sample.scores["s_hyp"]
    assert s_hyp.value == {"s_hyp": 0.5, "s_hyp_all": False}
    assert s_hyp.metadata["judge_grade"] == "capable" and s_hyp.metadata["judge_model"] == "judgedouble/scripted"
    links = {c["claim"]: c for c in s_hyp.metadata["evidence"]}
    assert links[SUPPORTED]["event_ids"] == [f"{sample.id}-00008"] and links[SUPPORTED]["cell"] == 0
    assert links[UNSUPPORTED]["supported"] is False and links[UNSUPPORTED]["event_ids"] == []


def test_gold_only_with_the_flag_and_one_log_per_session(results, tmp_path):
    logs = exported(results, tmp_path / "out", "--per-session", "--with-gold")
    assert len(logs) == 2 and all(len(log.samples) == 1 for log in logs.values())
    gold = load_tasks().gold_for(TASK_ID).hypothesis
    assert {s.target for log in logs.values() for s in log.samples} == {gold}
    again = exported(results, tmp_path / "out", "--per-session")  # re-export rewrites the same names
    assert sorted(again) == sorted(logs) and {s.target for log in again.values() for s in log.samples} == {""}


def test_a_missing_results_folder_is_a_one_line_error(tmp_path, capsys):
    assert main(["export", str(tmp_path / "nowhere")]) == 2
    assert "results folder not found" in capsys.readouterr().err


def test_a_fork_exports_with_its_parent_and_fork_point(results, tmp_path):
    from helpers.scripted import use_scripted
    from helpers.stored_session import WAIT, scaffolded_scripts

    from colabkit.runner.fork import fork
    from colabkit.session import Event
    from colabkit.session.fork import FlipDecision

    experiment = tmp_path / "demo"
    shutil.copytree(results, experiment)
    sessions = load_sessions(experiment)
    parent = experiment / sessions.loc[sessions["variant"] == "scaffolded-dr", "session_id"].iloc[0]
    events = [Event.model_validate_json(line) for line in (parent / "events.jsonl").read_text().splitlines()]
    at = next(e.seq for e in events if e.action == "approve")
    used = Counter(c.model.removeprefix("scripted/") for e in events[:at] for c in e.llm_calls)
    use_scripted({name: outputs[used[name]:] for name, outputs in scaffolded_scripts().items()}, default=WAIT)
    child = fork(parent, at=at, change=FlipDecision(reason="not supported"), seeds=[0], out=experiment,
                 controls=False).changed[0]
    logs = exported(experiment, tmp_path / "out")
    sample = next(s for log in logs.values() for s in log.samples if s.id == child.name)
    assert sample.metadata["fork"]["parent_id"] == parent.name and sample.metadata["fork"]["at"] == at
    assert sample.metadata["fork"]["change"]["reason"] == "not supported"
    assert any(e.event == "info" and e.source == "colabkit/fork_change" for e in sample.events)
    decision = next(e for e in sample.events if e.event == "approval" and e.decision != "escalate")
    assert (decision.decision, decision.explanation) == ("reject", "not supported")


def test_a_person_step_a_failed_cell_and_an_expired_request_have_their_own_events():
    from helpers.trajectories import Trajectory

    from colabkit.export.inspect_sample import step_events
    from colabkit.session.seats.person import PersonStep, Stamp

    t = Trajectory(("ai", "D"))
    t.run("ai", "1/0", status="error")
    t.request("ai", "edit_result", "D", text="h")
    t.end()
    stamp = Stamp(wall=1.0, monotonic=1.0)
    person = PersonStep(participant_id="D", stage="step", observation_hash="o", rendered_hash=None, shown=stamp)
    seated = t.say("D", "hello").model_copy(update={"person": person})
    t.failed("D", "approve")  # an approval of nothing (a failed step) is no gate decision
    snapshot = {c.index: c for c in t.snapshot().cells}
    requests: dict = {}
    mapped = [step_events(e, snapshot, {}, requests, 0.0) for e in [*t.events, seated]]
    cell, request, expired, end, message, no_decision, seat = mapped
    assert no_decision[0].event == "tool" and no_decision[0].failed
    assert cell[0].event == "tool" and cell[0].failed and cell[0].error.message == "Error"
    assert request[0].event == "approval" and request[0].approver == "D" and request[0].decision == "escalate"
    assert expired[0].event == "info" and expired[0].source == "colabkit/request_expired"
    assert [e.event for e in seat] == ["info", "tool"] and seat[0].source == "colabkit/person"
    assert seat[0].data["participant_id"] == "D" and seat[1].function == "send_message"
