"""Counterfactual contributions (issue 47): a seat emptied from N, the structure switched off from N,
and each member's contribution measured on scripted sessions whose truth is known by construction.

The Default-DR parent of `answer_parent` (`helpers.contribution_replays`) is played by one policy:
R posts the answer to the whole team in its first turn, D always waits, and the AI writes the
answer into the editor once it sees it in the chat. So R's contribution to the delivered answer
is 1 by construction and D's is 0 on every metric.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from helpers.contribution_replays import ANSWER, answer_policy, record_answer_parent, record_replays
from helpers.scripted import use_scripted
from helpers.stored_session import WAIT, record_scaffolded_session, scaffolded_scripts
from pydantic import ValidationError

from colabkit.analysis.contributions import (
    contribution_pairs,
    contribution_runs,
    section,
    session_contributions,
    variant_contributions,
)
from colabkit.cli import main
from colabkit.errors import ColabkitError
from colabkit.runner import contributions
from colabkit.runner.fork import fork
from colabkit.session import Event
from colabkit.session.fork import RemoveMember, StructureOff, fork_points
from colabkit.store import SessionRecord
from colabkit.team import variant

R_MESSAGE, R_APPROVES = 9, 13  # in the scaffolded parent (tests/test_runner_fork.py checks them)


def events_of(folder: Path) -> list[Event]:
    return [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]


def record_of(folder: Path) -> SessionRecord:
    return SessionRecord.model_validate_json((folder / "session.json").read_bytes())


@pytest.fixture(scope="module")
def answer_parent(tmp_path_factory) -> Path:
    folder = record_answer_parent(tmp_path_factory.mktemp("runs"))
    assert record_of(folder).final_hypothesis == ANSWER
    return folder


@pytest.fixture(scope="module")
def replays(answer_parent, tmp_path_factory) -> Path:
    """Every member's replays of the parent from its first task step, seeds 0-2, with controls."""
    jobs = contributions.plan([answer_parent], [0, 1, 2])
    assert sorted(j.member for j in jobs) == ["D", "R"]  # Default: no structure to switch off
    said: list[str] = []
    out = record_replays(answer_parent, tmp_path_factory.mktemp("forks"), [0, 1, 2], said)
    assert said == contributions.estimate(jobs).lines()  # the cost, said before anything ran
    return out


def delivered_score(runs: pd.DataFrame) -> pd.DataFrame:
    """A score table as the evaluation layer gives it (session id and metric columns): here
    Performance is whether the submitted answer is the known one, read from each record."""
    rows = []
    for folder in runs:
        record = record_of(folder)
        rows.append({"session_id": record.session_id, "performance": float(record.final_hypothesis == ANSWER)})
    return pd.DataFrame(rows)


def test_a_removed_member_takes_no_step_and_is_asked_nothing_from_n(answer_parent, replays):
    n = fork_points(events_of(answer_parent))[0]
    removed = [f for f in replays.iterdir() if (f / "session.json").is_file()
               and record_of(f).fork.point.change == RemoveMember(role="R")]
    assert len(removed) == 3
    for folder in removed:
        events = events_of(folder)
        assert events[n].action == "fork_change" and events[n].args["change"]["kind"] == "remove_member"
        assert not any(e.participant == "R" for e in events[n:])
        assert not any(c.caller == "R" for e in events for c in e.llm_calls)
        assert record_of(folder).final_hypothesis == ""  # nobody told the AI


def test_a_member_who_only_waits_contributes_zero_and_one_who_carries_the_answer_contributes(replays):
    folders = [f for f in replays.iterdir() if (f / "session.json").is_file()]
    runs = contribution_runs(replays, delivered_score(folders))
    assert sorted(runs["member"].value_counts().items()) == [("D", 3), ("R", 3), ("control", 3)]
    pairs = contribution_pairs(runs)
    table = variant_contributions(pairs).set_index(["member", "metric"])
    for metric in ("performance", "delivered", "messages", "actions"):
        d = table.loc[("D", metric)]
        assert d["ci_low"] <= 0 <= d["ci_high"] and d["contribution"] == 0, metric
    r = table.loc[("R", "performance")]
    assert r["contribution"] == 1.0 and r["ci_low"] > 0 and r["n_pairs"] == 3
    assert table.loc[("R", "messages"), "contribution"] == 1.0  # its one message
    per_session = session_contributions(pairs)
    assert set(per_session["n_seeds"]) == {3} and set(per_session["variant"]) == {"default-dr"}


def test_the_notebook_section_shows_the_replays_or_says_why_not(replays, tmp_path):
    shown = section(replays)
    assert shown.figure is not None and set(shown.table["member"]) == {"D", "R"}
    assert "1 session(s), 9 continuation(s)" in shown.note and "process counts only" in shown.note
    absent = section(tmp_path / "forks")
    assert absent.figure is None and absent.table.empty and "colabkit contributions" in absent.note


def test_a_missing_score_stays_missing(replays):
    folders = [f for f in replays.iterdir() if (f / "session.json").is_file()]
    scores = delivered_score(folders)
    without_r = next(f.name for f in folders if record_of(f).fork.point.change == RemoveMember(role="R"))
    scores.loc[scores["session_id"] == without_r, "performance"] = float("nan")
    pairs = contribution_pairs(contribution_runs(replays, scores))
    kept = pairs[pairs["metric"] == "performance"]
    assert len(kept) == 5 and (kept["member"] == "R").sum() == 2  # one pair fewer, never a 0
    control = next(f.name for f in folders if record_of(f).fork.point.change.kind == "none")
    scores.loc[scores["session_id"] == control, "performance"] = float("nan")
    pairs = contribution_pairs(contribution_runs(replays, scores))
    assert len(pairs[pairs["metric"] == "performance"]) == 3  # a missing control loses both of its pairs


def test_the_cost_is_read_from_the_parents_log_and_printed_before_a_run(answer_parent, tmp_path, capsys):
    jobs = contributions.plan([answer_parent], [0, 1])
    cost = contributions.estimate(jobs)
    n = jobs[0].at
    after = {p: sum(len(e.llm_calls) for e in events_of(answer_parent)[n:] if e.participant == p)
             for p in ("ai", "D", "R")}
    total = sum(after.values())
    # per seed: a control, a replay without D, a replay without R
    assert cost.calls == 2 * (total + (total - after["D"]) + (total - after["R"]))
    assert cost.controls == 2 and cost.continuations == 4
    assert cost.dollars is None  # the scripted models have no price: said, never counted as $0
    assert main(["contributions", str(answer_parent), "--seeds", "0,1", "--dry-run", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "remove D from event" in out and f"model calls: {cost.calls:,.0f}" in out and "cost: unpriced" in out
    assert not any(tmp_path.iterdir())  # a dry run runs nothing
    use_scripted({}, default=answer_policy)
    assert main(["contributions", str(answer_parent), "--seeds", "0", "--members", "R", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "without R: 1 continuation(s), 1 control(s)" in out and "next: colabkit score" in out
    assert len([f for f in tmp_path.iterdir() if (f / "session.json").is_file()]) == 2


# -- the changes themselves, on the stored Scaffolded-DR session -----------------------------------------
@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory) -> Path:
    return record_scaffolded_session(tmp_path_factory.mktemp("scaffolded"))


def test_the_structure_switched_off_plays_the_default_twin_from_n(scaffolded, tmp_path):
    model = use_scripted({"ai": scaffolded_scripts()["ai"][3:]}, default=WAIT)
    folder = fork(scaffolded, at=R_MESSAGE, change=StructureOff(), seeds=[0], out=tmp_path, controls=False).changed[0]
    record, events = record_of(folder), events_of(folder)
    assert record.spec.variant == variant("default-dr")
    assert not any(e.status == "pending" for e in events[R_MESSAGE:])  # the AI's edit is no longer held
    after = [c for c in model.calls if c["caller"] in ("ai", "D", "R")]
    assert after and not any("Gate rules" in json.dumps(c["messages"]) or "Shared Group Memory"
                             in json.dumps(c["messages"]) for c in after)
    use_scripted({"ai": scaffolded_scripts()["ai"][3:]}, default=WAIT)
    fork(scaffolded, at=R_MESSAGE, seeds=[0], out=tmp_path)  # its control
    runs = contribution_runs(tmp_path)  # the structure's replay counts for the parent's variant
    assert sorted(zip(runs["member"], runs["variant"])) == [("control", "scaffolded-dr"), ("structure", "scaffolded-dr")]


def test_a_request_open_when_the_structure_goes_off_expires_at_n(scaffolded, tmp_path):
    assert events_of(scaffolded)[R_APPROVES].action == "approve"
    use_scripted({}, default=WAIT)
    folder = fork(scaffolded, at=R_APPROVES, change=StructureOff(), seeds=[0], out=tmp_path,
                  controls=False).changed[0]
    events = events_of(folder)
    assert [e.action for e in events[R_APPROVES:R_APPROVES + 2]] == ["fork_change", "request_expired"]
    expired = [e for e in events if e.action == "request_expired"]
    assert [(e.request_id, e.args.get("switched_off")) for e in expired] == [("req-1", R_APPROVES)]
    assert record_of(folder).final_hypothesis == ""  # the held edit never took effect


def test_a_removed_signatory_leaves_its_request_undecided(scaffolded, tmp_path):
    use_scripted({"ai": scaffolded_scripts()["ai"][3:]}, default=WAIT)
    folder = fork(scaffolded, at=R_MESSAGE, change=RemoveMember(role="R"), seeds=[0], out=tmp_path,
                  controls=False).changed[0]
    events = events_of(folder)
    assert not any(e.participant == "R" for e in events[R_MESSAGE:])
    assert any(e.action == "request_expired" and e.signatory == "R" for e in events)


def test_what_cannot_be_removed_or_switched_off_is_refused(scaffolded, answer_parent, tmp_path):
    with pytest.raises(ValidationError, match="holds the session clock"):
        RemoveMember(role="ai")
    with pytest.raises(ColabkitError, match="not on the team"):
        fork(scaffolded, at=R_MESSAGE, change=RemoveMember(role="E"), seeds=[0], out=tmp_path)
    with pytest.raises(ColabkitError, match="no coordination structure"):
        fork(answer_parent, at=fork_points(events_of(answer_parent))[0], change=StructureOff(), seeds=[0],
             out=tmp_path)
    assert not any(tmp_path.iterdir())
