"""A Dynamic session on the real embedded model, end to end: run, stored, scored, analysed.

The 135M model rarely proposes a sensible update; the test checks the pipe holds against its
actual answers: a valid trajectory whose task-phase steps are all in the Dynamic vocabulary,
every memory update event consistent with the team act's rules, the session scored as its
own structure and its memory-dynamics row in agreement with the log. It is scored without a
judge (W_total, W_human): the judged metrics run the same pipe on every variant and are tested
with the embedded judge in `test_eval_real_model.py`; what a living memory adds to them
(updates kept out of the gate metrics) is tested on scripted sessions. The session is the run's
shared one (helpers.shared_sessions), scored in a copy of its own.
"""

from __future__ import annotations

import pytest
from helpers.embedded_sessions import check_trajectory
from helpers.shared_sessions import TASK, stored_session

from colabkit.analysis import memory_dynamics
from colabkit.cli import main
from colabkit.evaluation import load_scores
from colabkit.runner import build_session
from colabkit.session import SessionSettings
from colabkit.store import load_events
from colabkit.team import ACTION_TYPES

# heavy: make test keeps the Single and Default-DR sessions on the embedded model
# (tests/test_e2e_real_model.py) and Dynamic on scripted models; CI runs this one too
pytestmark = [pytest.mark.slow, pytest.mark.heavy]


def test_dynamic_dr_runs_on_the_embedded_model_and_is_scored(tmp_path_factory, tmp_path):
    spec, _ = build_session(TASK, "dynamic-dr", 0, settings=SessionSettings(action_budget=3, max_rounds=1))
    folder = stored_session(tmp_path_factory, tmp_path, "dynamic-dr", budget=3, rounds=1)
    events, record, _ = check_trajectory(folder)
    assert record.memory is not None and [e.action for e in events if e.action == "memory_frozen"] == [
        "memory_frozen"]
    steps = [e for e in events if e.phase == "task" and e.participant in spec.participants]
    assert steps and all(e.action in (*ACTION_TYPES, "propose_memory_update", "invalid_output") for e in steps)
    proposals = [e for e in steps if e.action == "propose_memory_update" and e.status == "pending"]
    outcomes = [e for e in events if e.action in ("memory_updated", "memory_update_dropped")]
    assert len(outcomes) <= len(proposals)  # an outcome only ever follows a held proposal

    assert main(["score", str(tmp_path), "--metrics", "work"]) == 0
    [row] = load_scores(tmp_path).to_dict("records")
    assert (row["session_id"], row["structure"], row["composition"]) == (record.session_id, "dynamic", "dr")
    assert row["w_total"] >= 0 and row["w_human"] >= 0
    [dynamics] = memory_dynamics(load_events(tmp_path)).to_dict("records")
    assert (dynamics["updates_proposed"], dynamics["updates_applied"]) == (
        len(proposals), sum(e.action == "memory_updated" for e in outcomes))
