"""Counterfactual forks on scripted participants and a real kernel (mechanics, offline).

The parent is the stored Scaffolded-DR session of `helpers.stored_session` (memory build,
cells by two people, R's message, a gated edit R approves, a finish). Before N every model
answer must come from the parent's cache, so the scripted model is given only what the
parent's participants answered after N (`tail`): a call before N would get a wrong answer.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from helpers.scripted import use_scripted
from helpers.stored_session import (
    WAIT,
    ai_first_seed,
    record_scaffolded_session,
    record_session,
    say,
    scaffolded_scripts,
)

from colabkit.analysis.counterfactual import counterfactual_table, fork_table, original_values, with_scores
from colabkit.cli import main
from colabkit.evaluation import load_scores, score_results
from colabkit.llm import ModelConfig
from colabkit.runner.fork import ForkError, fork
from colabkit.session import Event, SessionSpec
from colabkit.session.fork import (
    AmendMemory,
    DropMessage,
    FlipDecision,
    InsertMessage,
    NoChange,
    ReplaceMessage,
    SetModel,
    SetPersona,
    replay_view,
)
from colabkit.store import SessionRecord
from colabkit.tasks import load_tasks
from colabkit.team import variant

R_MESSAGE, D_CELL, R_APPROVES = 9, 10, 13  # event numbers in the parent (checked below)


def events_of(folder: Path) -> list[Event]:
    return [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]


def record_of(folder: Path) -> SessionRecord:
    return SessionRecord.model_validate_json((folder / "session.json").read_bytes())


def tail(scripts: dict[str, list], events: list[Event], at: int) -> dict[str, list]:
    """Each participant's script without the answers its parent's calls before `at` used."""
    used = Counter(call.model.removeprefix("scripted/") for e in events[:at] for call in e.llm_calls)
    return {name: outputs[used[name]:] for name, outputs in scripts.items()}


@pytest.fixture(scope="module")
def parent(tmp_path_factory) -> Path:
    folder = record_scaffolded_session(tmp_path_factory.mktemp("parent"))
    events = events_of(folder)
    assert (events[R_MESSAGE].participant, events[R_MESSAGE].action) == ("R", "send_message")
    assert (events[D_CELL].participant, events[D_CELL].action) == ("D", "execute_code")
    assert (events[R_APPROVES].participant, events[R_APPROVES].action) == ("R", "approve")
    return folder


def test_a_control_with_the_parents_seed_reproduces_the_parent_exactly(parent, tmp_path):
    events = events_of(parent)
    model = use_scripted(tail(scaffolded_scripts(), events, D_CELL), default=WAIT)
    forks = fork(parent, at=D_CELL, seeds=[record_of(parent).seed], out=tmp_path)
    assert forks.changed == forks.controls and len(forks.changed) == 1
    mine = events_of(forks.changed[0])
    assert [replay_view(e) for e in mine] == [replay_view(e) for e in events]
    assert {e.session_id for e in mine} == {forks.changed[0].name} != {parent.name}
    # Before N nothing reached the model (all cache hits); after N every call did.
    assert all(c.suite_replay for e in mine[:D_CELL] for c in e.llm_calls)
    assert not any(c.suite_replay for e in mine[D_CELL:] for c in e.llm_calls)
    assert len(model.calls) == sum(len(e.llm_calls) for e in events[D_CELL:])
    record = record_of(forks.changed[0])
    assert record.fork is not None and record.fork.point.parent_id == parent.name
    assert record.fork.replay.prefix_calls == sum(len(e.llm_calls) for e in events[:D_CELL]) > 0
    assert record.fork.replay.cells_checked == 1 and record.final_hypothesis == record_of(parent).final_hypothesis
    # Asked again: found, not rerun (the script is spent, so a rerun could not reproduce it).
    again = fork(parent, at=D_CELL, seeds=[record_of(parent).seed], out=tmp_path)
    assert again.changed == forks.changed and len(model.calls) == sum(len(e.llm_calls) for e in events[D_CELL:])


def test_events_before_n_are_the_parents_in_every_continuation_and_a_message_change_is_seen(parent, tmp_path):
    events = events_of(parent)
    use_scripted({}, default=WAIT)
    forks = fork(parent, at=R_MESSAGE, change=ReplaceMessage(text="MARKER: the 9th century, not the 12th", to="all"),
                 seeds=[1, 2], out=tmp_path)
    assert len(forks.changed) == len(forks.controls) == 2
    folders = forks.changed + forks.controls
    assert len({f.name for f in folders}) == 4  # seed and change are in the identity
    for folder in folders:
        assert [replay_view(e) for e in events_of(folder)[:R_MESSAGE]] == [replay_view(e) for e in events[:R_MESSAGE]]
    changed = events_of(forks.changed[0])
    note, message = changed[R_MESSAGE], changed[R_MESSAGE + 1]
    assert (note.participant, note.action, note.args["change"]["kind"]) == ("system", "fork_change", "replace_message")
    assert (message.participant, message.action, message.args["to"]) == ("R", "send_message", None)
    assert message.args["text"].startswith("MARKER") and message.thought == events[R_MESSAGE].thought
    record = record_of(forks.changed[0])
    assert record.seed == 1 and record.fork.point.change.kind == "replace_message"
    assert record_of(forks.controls[0]).fork.point.change == NoChange()
    # The continuation's participants see the changed message in their next prompts, D included.
    model = use_scripted({}, default=WAIT)
    fork(parent, at=R_MESSAGE, change=ReplaceMessage(text="MARKER-2 to everyone", to="all"), seeds=[3],
         out=tmp_path, controls=False)
    seen = {call["caller"] for call in model.calls if "MARKER-2" in json.dumps(call["messages"])}
    assert {"ai", "D"} <= seen
    # Scoring works on continuations unchanged; the table pairs each change with the controls.
    report = score_results(tmp_path, metrics=["work"])
    assert report.sessions == 5 and report.scored == 5
    rows = with_scores(fork_table(tmp_path), load_scores(tmp_path))
    assert rows["w_total"].notna().all() and set(rows["seed"]) == {1, 2, 3}
    table = counterfactual_table(rows, original_values(parent), metrics=["w_total", "messages"])
    first = table[table["change"].str.startswith("replace_message 'MARKER:")]
    assert first["k"].tolist() == first["k_control"].tolist() == first["n_pairs"].tolist() == [2, 2]
    assert first.set_index("metric").loc["messages", "original"] == 2  # the original had two messages


def test_insert_and_drop_change_what_the_team_sees(parent, tmp_path):
    model = use_scripted({}, default=WAIT)
    inserted = fork(parent, at=D_CELL, change=InsertMessage(sender="R", text="INSERTED: count by decade", to=("D",)),
                    seeds=[0], out=tmp_path, controls=False).changed[0]
    note = events_of(inserted)[D_CELL]
    assert note.action == "fork_change" and note.message_index == 1
    assert json.loads((inserted / "snapshot.json").read_text())["messages"][1]["text"].startswith("INSERTED")
    assert "INSERTED" in json.dumps(model.calls[0]["messages"]) and model.calls[0]["caller"] == "D"
    use_scripted({}, default=WAIT)
    dropped = events_of(fork(parent, at=R_MESSAGE, change=DropMessage(), seeds=[0], out=tmp_path,
                             controls=False).changed[0])
    assert (dropped[R_MESSAGE + 1].participant, dropped[R_MESSAGE + 1].action) == ("R", "wait")
    assert not any(e.action == "send_message" and e.participant == "R" for e in dropped)


def test_a_flipped_decision_keeps_the_edit_out_of_the_result(parent, tmp_path):
    use_scripted(tail(scaffolded_scripts(), events_of(parent), R_APPROVES), default=WAIT)
    folder = fork(parent, at=R_APPROVES, change=FlipDecision(reason="not supported"), seeds=[0], out=tmp_path,
                  controls=False).changed[0]
    decision = events_of(folder)[R_APPROVES + 1]
    assert (decision.action, decision.decision, decision.decision_reason) == ("reject", "rejected", "not supported")
    assert record_of(folder).final_hypothesis == "" != record_of(parent).final_hypothesis


def test_a_persona_change_is_recorded_in_the_spec_and_the_prompts(parent, tmp_path):
    model = use_scripted({}, default=WAIT)
    folder = fork(parent, at=D_CELL, change=SetPersona(role="D", prompt="You are a terse PERSONA-X analyst."),
                  seeds=[0], out=tmp_path, controls=False).changed[0]
    record = record_of(folder)
    assert record.spec.variant.persona("D").prompt.startswith("You are a terse PERSONA-X")
    assert record.persona_versions["D"].startswith("fork-")
    d_prompts = [c["messages"][0]["content"] for c in model.calls if c["caller"] == "D"]
    assert d_prompts and all("PERSONA-X" in p for p in d_prompts)


def test_bad_fork_points_and_changes_are_one_line_errors(parent, tmp_path):
    with pytest.raises(Exception, match="not a fork point"):
        fork(parent, at=3, seeds=[0], out=tmp_path)  # the memory build
    with pytest.raises(Exception, match="needs a sent message"):
        fork(parent, at=D_CELL, change=DropMessage(), seeds=[0], out=tmp_path)
    with pytest.raises(Exception, match="not on the team"):
        fork(parent, at=D_CELL, change=SetPersona(role="Z"), seeds=[0], out=tmp_path)
    with pytest.raises(Exception, match="not a human seat"):
        fork(parent, at=D_CELL, seeds=[0], out=tmp_path, seats={"ai": "persona"})
    assert not any(tmp_path.iterdir())


# -- verification of the prefix -------------------------------------------------------------------
def cell_session(out: Path, code: str, task=None) -> Path:
    """A Default-DR session whose first step is the AI's cell `code`, then two messages."""
    var = variant("default-dr")
    scripts = {"ai": [say("execute_code", code), say("send_message", "look at cell 0", "all"), say("finish", "done")]}
    use_scripted(scripts, default=WAIT)
    spec = SessionSpec(task_id="demo_archaeology/0/0", variant=var, seed=ai_first_seed(var.team),
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team})
    return record_session(spec, task or load_tasks().get(spec.task_id), out)


def message_point(folder: Path) -> int:
    return next(e.seq for e in events_of(folder) if e.action == "send_message")


def test_a_non_deterministic_cell_before_n_stops_a_strict_fork_and_is_flagged_by_a_lenient_one(tmp_path):
    parent = cell_session(tmp_path / "runs", "import random; print(random.random())")
    at = message_point(parent)
    use_scripted({}, default=WAIT)
    with pytest.raises(ForkError, match=r"cell 0 .*replayed differently: logged '\[ok\] 0\.\d+'"):
        fork(parent, at=at, seeds=[0], out=tmp_path / "strict")
    assert not [p for p in (tmp_path / "strict").iterdir() if not p.name.startswith((".", "llm-cache"))]
    folder = fork(parent, at=at, seeds=[0], out=tmp_path / "lenient", verify="lenient").changed[0]
    report = record_of(folder).fork.replay
    assert [m.cell for m in report.mismatches] == [0] and report.mismatches[0].logged != report.mismatches[0].replayed
    # The team was shown the logged output, so the prefix (prompts included) is the parent's.
    assert [replay_view(e) for e in events_of(folder)[:at]] == [replay_view(e) for e in events_of(parent)[:at]]


def test_a_changed_data_file_before_n_is_detected(tmp_path):
    task = load_tasks().get("demo_archaeology/0/0")
    data = tmp_path / "data"
    data.mkdir()
    copies = []
    for dataset in task.datasets:
        copy = data / dataset.path.name
        copy.write_bytes(dataset.path.read_bytes())
        copies.append(dataset.model_copy(update={"path": copy}))
    mine = task.model_copy(update={"datasets": tuple(copies)})
    name = copies[0].path.name
    parent = cell_session(tmp_path / "runs", f"import pandas as pd; print(len(pd.read_csv('data/{name}')))", mine)
    with copies[0].path.open("a") as handle:  # one more row
        handle.write(copies[0].path.read_text().splitlines()[-1] + "\n")
    use_scripted({}, default=WAIT)
    with pytest.raises(ForkError, match="cell 0"):
        fork(parent, at=message_point(parent), seeds=[0], out=tmp_path / "forks", task=mine)


def test_a_cache_miss_before_n_is_an_error(tmp_path):
    import diskcache

    parent = cell_session(tmp_path / "runs", "print(1 + 1)")
    cache = diskcache.Cache(str(tmp_path / "runs" / "llm-cache"))
    first = next(iter(cache))
    del cache[first]
    cache.close()
    model = use_scripted({}, default=WAIT)
    with pytest.raises(ForkError, match="not in the parent's cache"):
        fork(parent, at=message_point(parent), seeds=[0], out=tmp_path / "forks")
    assert model.calls == []  # a missing answer is never asked again before N


def test_colabkit_fork_lists_points_and_runs_a_change(parent, tmp_path, capsys):
    assert main(["fork", str(parent)]) == 0
    listing = capsys.readouterr().out
    assert f"{R_MESSAGE:>4}  r1 R" in listing and "send_message" in listing
    last = listing.splitlines()[-1]  # what to do next: the command, with a point of this session
    assert last.startswith(f"next: colabkit fork {parent} --at N") and "change kinds: none, replace_message" in last
    first_point = int(listing.splitlines()[0].split()[0])
    assert f"e.g. --at {first_point})" in last
    use_scripted({}, default=WAIT)
    change = json.dumps({"kind": "replace_message", "to": ["ai"]})
    assert main(["fork", str(parent), "--at", str(R_MESSAGE), "--change", change, "--seeds", "0,1",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("change ") == 2 and out.count("control ") == 2
    assert main(["fork", str(parent), "--at", "3", "--out", str(tmp_path)]) == 2
    assert "not a fork point" in capsys.readouterr().err
    assert main(["fork", str(parent), "--at", "9", "--change", '{"kind": "insert_message", "sender": "R"}']) == 2
    assert capsys.readouterr().err.strip().endswith("Field required (insert_message.text)")


def test_an_interrupted_continuation_is_redone_from_scratch(parent, tmp_path):
    use_scripted({}, default=WAIT)
    folder = fork(parent, at=D_CELL, seeds=[5], out=tmp_path).changed[0]
    expected = [replay_view(e) for e in events_of(folder)]
    (folder / "session.json").unlink()  # killed before its record was written
    (folder / "events.jsonl").rename(folder / "events.jsonl.part")
    model = use_scripted({}, default=WAIT)
    assert fork(parent, at=D_CELL, seeds=[5], out=tmp_path).changed == [folder]
    assert sorted(p.name for p in folder.iterdir()) == ["events.jsonl", "session.json", "snapshot.json"]
    assert [replay_view(e) for e in events_of(folder)] == expected
    assert model.calls == []  # its own answers after N were cached under its id: replayed, not asked again


def test_the_prefix_is_asked_in_the_output_mode_the_parent_used(tmp_path):
    from colabkit.llm import Gateway

    var = variant("default-dr")
    use_scripted({"ai": [say("send_message", "first", "all"), say("send_message", "second", "all")]}, default=WAIT)
    spec = SessionSpec(task_id="demo_archaeology/0/0", variant=var, seed=ai_first_seed(var.team),
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team})
    out = tmp_path / "runs"
    out.mkdir()
    # As in a batch that learnt earlier that this provider needs JSON mode.
    gateway = Gateway(cache_dir=out / "llm-cache", modes={f"scripted/{p}": "json_object" for p in var.team})
    from colabkit.runner import record_session as record

    parent = record(spec, load_tasks().get(spec.task_id), out=out, gateway=gateway)
    gateway.close()
    events = events_of(parent)
    assert {c.output_mode for e in events for c in e.llm_calls} == {"json_object"}
    at = [e.seq for e in events if e.action == "send_message"][1]
    use_scripted({}, default=WAIT)
    folder = fork(parent, at=at, seeds=[0], out=tmp_path / "forks").changed[0]
    assert record_of(folder).fork.replay.prefix_calls == sum(len(e.llm_calls) for e in events[:at]) > 1


def test_a_model_change_and_a_memory_amendment_take_effect_at_n(parent, tmp_path):
    model = use_scripted({}, default=WAIT)
    folder = fork(parent, at=D_CELL, change=SetModel(role="D", model=ModelConfig(model="scripted/other")),
                  seeds=[0], out=tmp_path, controls=False).changed[0]
    assert {c["name"] for c in model.calls if c["caller"] == "D"} == {"other"}
    assert record_of(folder).models["D"].model == "scripted/other"
    model = use_scripted({}, default=WAIT)
    folder = fork(parent, at=D_CELL, change=AmendMemory(slots={"plan": "AMENDED-PLAN: R checks every count"}),
                  seeds=[0], out=tmp_path, controls=False).changed[0]
    record = record_of(folder)
    assert record.memory.plan.startswith("AMENDED-PLAN") and record.memory_digest != record_of(parent).memory_digest
    assert model.calls and all("AMENDED-PLAN" in json.dumps(c["messages"]) for c in model.calls)


def test_a_memory_amendment_on_a_dynamic_team_amends_its_living_memory(tmp_path):
    # A Dynamic team's observations show the living memory (its current version), not the build's
    # record: the amendment must reach that, and the version line must name the amended text.
    use_scripted(scaffolded_scripts(), default=WAIT)
    var = variant("dynamic-dr")
    spec = SessionSpec(task_id="demo_archaeology/0/0", variant=var, seed=ai_first_seed(var.team),
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team})
    dynamic = record_session(spec, load_tasks().get("demo_archaeology/0/0"), tmp_path / "parent")
    at = next(e.seq for e in events_of(dynamic) if (e.participant, e.action) == ("D", "execute_code"))
    model = use_scripted({}, default=WAIT)
    change = AmendMemory(slots={"plan": "AMENDED-PLAN: R checks every count"})
    folder = fork(dynamic, at=at, change=change, seeds=[0], out=tmp_path / "forks", controls=False).changed[0]
    amended = record_of(folder).memory
    assert amended.plan.startswith("AMENDED-PLAN")
    prompts = [json.dumps(c["messages"]) for c in model.calls]
    assert prompts and all("AMENDED-PLAN" in p and f"living, version 1 {amended.digest()[:8]}" in p for p in prompts)
