"""Co-Gym real-condition trajectories, in the format its TaskEnvNode writes, read as fingerprints."""

from __future__ import annotations

import pytest
from helpers.cogym_logs import line, write_session

from colabkit.analysis.realism import cogym_tables, fingerprints
from colabkit.errors import ColabkitError


def test_a_real_condition_log_becomes_a_person_fingerprint(tmp_path):
    write_session(tmp_path, "abc", [
        line("environment", "START(task_description=Analyse hoards, query=Which tools are most frequent?)",
             kind="environment"),
        line("agent", "SEND_TEAMMATE_MESSAGE(message=Shall I count the axes per century?)", t=1),
        line("user_42", "SEND_TEAMMATE_MESSAGE(message=Yes, and check the 12th century first?)", t=2),
        line("agent", "EXECUTE_JUPYTER_CELL(code=df.groupby('century').size())", kind="environment", t=3),
        line("agent", "REQUEST_TEAMMATE_CONFIRM(request_id=r1, pending_action=EDITOR_UPDATE(text=Axes peak.))", t=4),
        line("user_42", "ACCEPT_CONFIRMATION(request_id=r1)", t=5),
        line("agent", "EDITOR_UPDATE(text=Axes peak.)", kind="environment", t=5),
        line("user_42", "EXECUTE_JUPYTER_CELL(code=1/0)", "failed (action_error: ZeroDivisionError)", "environment", 6),
        line("user_42", "FINISH()", kind="environment", t=7),
    ])
    events, sessions = cogym_tables([tmp_path])
    assert sessions.loc[0, "session_id"] == "abc" and sessions.loc[0, "task_id"].startswith("cogym:Which tools")
    held = events[events["status"] == "pending"].iloc[0]
    assert (held["participant"], held["action"], held["signatory"]) == ("ai", "edit_result", "R")
    (row,) = fingerprints(events, sessions).itertuples()
    assert (row.participant, row.kind, row.simulator) == ("R", "person", "person")
    assert row.n_steps == 4 and row.share_message == 0.25 and row.share_decision == 0.25
    assert row.reply_share == 1.0 and row.question_share == 1.0  # answered the agent's question, with one
    assert row.decision_rate == 1.0 and row.approval_share == 1.0
    assert row.steps_to_first_act == 0 and row.share_cell == 0.25


def test_a_broken_line_is_one_error_naming_the_file_and_line(tmp_path):
    folder = write_session(tmp_path, "bad", [line("agent", "FINISH()"), '{"role": "agent"}'])
    with pytest.raises(ColabkitError, match=r"env_bad/event_log.jsonl:2: not a Co-Gym event"):
        cogym_tables([folder])
    with pytest.raises(ColabkitError, match="no Co-Gym trajectory at"):
        cogym_tables([tmp_path / "missing"])
