"""Forking a stored session of the embedded model (`local/smollm2-135m`) at a chat message.

The parent is a short Default-R demo session (two steps per side, two rounds; with seed 1 the
model's first delivered message is the AI's, in round 1, and R still has a step after it). It
is forked at the first delivered message, rerouted to the other member, under three seeds,
plus three controls: every continuation after N is the real model answering anew, and the
control with the parent's seed reproduces the parent's log exactly. The parent is the run's
shared session (helpers.shared_sessions), forked in a copy of its own.
"""

from __future__ import annotations

import pytest
from helpers.shared_sessions import stored_session

from colabkit.analysis.counterfactual import counterfactual_table, fork_table, original_values, with_scores
from colabkit.evaluation import load_scores, score_results
from colabkit.runner.fork import fork
from colabkit.session import Event
from colabkit.session.fork import ReplaceMessage, fork_points, replay_view
from colabkit.store import SessionRecord

# heavy: six real-model continuations; make test keeps the fork mechanics on scripted models
# (tests/test_runner_fork.py), CI runs this one too
pytestmark = [pytest.mark.slow, pytest.mark.heavy]
SEED = 1  # under the AI's clock, a seed whose parent session sends a message and goes on (seed 0 sends none)
TEXT = "Count the axes per century before you write anything."


def events_of(folder) -> list[Event]:
    return [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]


def test_forking_a_demo_session_at_a_message_with_three_seeds(tmp_path_factory, tmp_path):
    parent = stored_session(tmp_path_factory, tmp_path / "runs", "default-r", seed=SEED, budget=3, rounds=3)
    events = events_of(parent)
    # a message the session went on after (under the AI's clock a message at its last step ends it)
    at = next(n for n in fork_points(events) if events[n].action == "send_message" and events[n].status == "ok"
              and any(e.llm_calls for e in events[n + 1:]))
    other = "R" if events[at].participant == "ai" else "ai"
    forks = fork(parent, at=at, change=ReplaceMessage(text=TEXT, to=(other,)), seeds=[0, 2, SEED])
    assert len(forks.changed) == len(forks.controls) == 3
    for folder in forks.changed:
        mine = events_of(folder)
        assert [replay_view(e) for e in mine[:at]] == [replay_view(e) for e in events[:at]]
        assert mine[at].action == "fork_change"
        message = mine[at + 1]
        assert (message.participant, message.args["text"], message.args["to"]) == (events[at].participant, TEXT, [other])
        after = [c for e in mine[at + 1:] for c in e.llm_calls]
        assert after and all(not c.suite_replay and c.model == "local/smollm2-135m" for c in after)
    control = next(f for f in forks.controls
                   if SessionRecord.model_validate_json((f / "session.json").read_bytes()).seed == SEED)
    assert [replay_view(e) for e in events_of(control)] == [replay_view(e) for e in events]
    forks_dir = forks.changed[0].parent
    assert score_results(forks_dir, metrics=["work"]).scored == 6
    rows = with_scores(fork_table(forks_dir), load_scores(forks_dir))
    table = counterfactual_table(rows, original_values(parent), metrics=["w_total", "actions", "messages"])
    assert set(table["metric"]) == {"w_total", "actions", "messages"} and len(table) == 3
    assert (table["k"] == 3).all() and (table["k_control"] == 3).all() and (table["n_pairs"] == 3).all()
    delivered = sum(e.action == "send_message" and e.status == "ok" for e in events)
    assert delivered >= 1 and table.set_index("metric").loc["messages", "original"] == delivered
