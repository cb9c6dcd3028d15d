"""Memory-dynamics columns and the explorer's memory versions, from a stored Dynamic session.

A scripted dynamic-dr session (real kernel) is recorded to disk: the AI proposes two updates,
the team applies one and drops the other; the stored events give the per-session columns
and the explorer lists the applied version.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
from helpers.env import shared_data
from helpers.score_tables import score_table
from helpers.scripted import use_scripted

from colabkit.analysis import DYNAMIC_CONTRASTS, contrasts, memory_dynamics, memory_versions
from colabkit.analysis.trajectory import load_trajectory, render_memory
from colabkit.cli import main
from colabkit.evaluation.tables import structure_of
from colabkit.llm import ModelConfig
from colabkit.runner import load_experiment, record_session
from colabkit.session import SessionSettings, SessionSpec
from colabkit.session.scheduler import round_order
from colabkit.store import load_events
from colabkit.tasks import load_tasks
from colabkit.team import variant

TASK = load_tasks().get("demo_archaeology/0/0")
WAIT = json.dumps({"thought": "nothing for me now", "action": "wait"})
SLOTS = {"expertise": "D knows the columns", "responsibility": "R checks the claim",
         "plan": "AI analyses first", "evidence_standards": "cite a computed table"}
ACCEPT = {"reply": {"decision": "accept"}}


def say(action: str, content: str = "", to: str = "") -> dict:
    return {"thought": "next", "action": action, "content": content, "to": to}


def test_a_stored_dynamic_session_gives_its_memory_dynamics_and_versions(tmp_path):
    seed = next(s for s in range(1000) if all(round_order(("ai", "D", "R"), s, r)[0] == "ai" for r in (1, 2, 3)))
    use_scripted({"ai": [SLOTS, {**SLOTS, "gates": []}, say("propose_memory_update", "finish -> R", "gates"),
                         say("propose_memory_update", "no checks", "evidence_standards")],
                  "D": [SLOTS, ACCEPT, say("approve", "ok", "upd-1"), say("reject", "no", "upd-2")],
                  "R": [SLOTS, ACCEPT, say("approve", "ok", "upd-1"), WAIT]}, default=WAIT)
    var = variant("dynamic-dr")
    spec = SessionSpec(task_id=TASK.id, variant=var, seed=seed, settings=SessionSettings(idle_rounds=2),
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team})
    folder = record_session(spec, TASK, out=tmp_path)
    events = load_events(tmp_path)
    row = memory_dynamics(events).iloc[0].to_dict()
    assert row["session_id"] == folder.name and row["variant"] == "dynamic-dr"
    assert (row["updates_proposed"], row["updates_applied"], row["updates_dropped"], row["updates_expired"]) == (
        2, 1, 1, 0)
    assert (row["slots_changed"], row["gates_added"], row["gates_removed"]) == ("gates", "finish -> R", "")
    assert row["first_update_round"] == row["last_update_round"] == 1 and row["memory_version"] == 2
    [version] = memory_versions(events, folder.name)
    assert version["memory"]["gates"]["rules"] == [{"action": "finish", "signatory": "R", "scope": "all", "note": ""}]
    html = render_memory(load_trajectory(tmp_path, folder.name))
    assert "Later versions" in html and "finish -&gt; R" in html and version["digest"][:12] in html


def test_a_session_whose_memory_never_moved_has_zero_counts(tmp_path):
    use_scripted({"ai": [say("edit_result", "H"), say("finish", "done")]}, default=WAIT)
    spec = SessionSpec(task_id=TASK.id, variant=variant("single"), seed=0,
                       models={"ai": ModelConfig(model="scripted/ai")})
    record_session(spec, TASK, out=tmp_path)
    row = memory_dynamics(load_events(tmp_path)).iloc[0]
    assert (row.updates_proposed, row.updates_applied, row.memory_version) == (0, 0, 1)
    assert math.isnan(row.first_update_round)


def test_the_dynamic_experiment_plans_dynamic_beside_scaffolded_and_default(capsys, monkeypatch):
    from helpers.keys import placeholder_keys

    placeholder_keys(monkeypatch)  # the dry run preflights the models
    root = shared_data()
    path = Path(__file__).resolve().parents[1] / "experiments" / "dynamic.yaml"
    exp = load_experiment(path, data_root=root)
    assert [v.split("-")[0] for v in exp.variants] == ["default"] * 3 + ["scaffolded"] * 3 + ["dynamic"] * 3
    assert exp.settings == SessionSettings() and exp.seeds == (0, 1, 2)
    assert main(["batch", str(path), "--dry-run", "--data-root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "1026 sessions" in out and re.search(r"dynamic-dr\s+114 to run of 114", out)


def test_dynamic_sessions_are_their_own_structure_and_contrast_with_scaffolded():
    assert structure_of(variant("dynamic-r").model_dump(mode="json")) == ("dynamic", "r")
    assert structure_of(variant("scaffolded-r").model_dump(mode="json")) == ("scaffolded", "r")
    study = score_table(n_tasks=4, seeds=2)
    dynamic = study[study["structure"] == "scaffolded"].assign(
        structure="dynamic", variant=lambda t: t["variant"].str.replace("scaffolded", "dynamic"),
        session_id=lambda t: t["session_id"].str.replace("scaffolded", "dynamic"),
        performance=lambda t: (t["performance"] + 0.1).clip(0, 1))
    table = contrasts(pd.concat([study, dynamic]), DYNAMIC_CONTRASTS, metrics=["performance"])
    assert list(zip(table["a"], table["b"], strict=True)) == [(f"dynamic-{c}", f"scaffolded-{c}")
                                                              for c in ("d", "r", "dr")]
    assert (table["diff"] > 0).all()
    assert contrasts(study, DYNAMIC_CONTRASTS, metrics=["performance"]).empty  # absent: skipped
