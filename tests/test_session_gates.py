"""Gates in running sessions mean what the team chose: scope, note, self-gates, absent signatories.

Scripted participants and a real kernel; the team's gates come from the memory build
(Scaffolded), so each test also shows what reaches the log: the frozen memory's mapping
report and the rule recorded on every `pending` event.
"""

from __future__ import annotations

import asyncio
import json

from helpers.scripted import use_scripted

from colabkit.llm import Gateway, ModelConfig
from colabkit.session import ListSink, SessionSettings, SessionSpec, run_session
from colabkit.session.scheduler import round_order
from colabkit.tasks import load_tasks
from colabkit.team import variant

TASK = load_tasks().get("demo_archaeology/0/0")
WAIT = json.dumps({"thought": "nothing for me now", "action": "wait"})
SLOTS = {"expertise": "D knows the columns", "responsibility": "D checks data changes",
         "plan": "AI analyses", "evidence_standards": "cite a computed table"}
ACCEPT = {"reply": {"decision": "accept"}}
READ = "print(6 * 7)"
WRITE = "open('notes.txt', 'w').write('x')"  # data-changing by the rule: it writes a file


def say(action: str, content: str = "", to: str = "") -> dict:
    return {"thought": "next", "action": action, "content": content, "to": to}


def run(tmp_path, name: str, scripts: dict, *, seed: int, **settings):
    use_scripted(scripts, default=WAIT)
    var = variant(name)
    spec = SessionSpec(task_id=TASK.id, variant=var, seed=seed,
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team},
                       settings=SessionSettings(**settings))
    sink = ListSink()
    result = asyncio.run(run_session(spec, TASK, gateway=Gateway(), sink=sink, workdir_root=tmp_path))
    return result, sink.events


def ai_first_seed(team: tuple[str, ...], rounds: int) -> int:
    return next(s for s in range(1000) if all(round_order(team, s, r)[0] == "ai" for r in range(1, rounds + 1)))


def test_a_scoped_code_gate_holds_only_data_changing_code_and_logs_its_rule(tmp_path):
    gates = [{"action": "run code", "signatory": "Data Analyst", "scope": "data_changing",
              "note": "check that no rows are lost"}]
    scripts = {"ai": [SLOTS, {**SLOTS, "gates": gates}, say("execute_code", READ), say("execute_code", WRITE)],
               "D": [SLOTS, ACCEPT]}
    result, events = run(tmp_path, "scaffolded-d", scripts, seed=ai_first_seed(("ai", "D"), 2), idle_rounds=2)
    code = [e for e in events if e.action == "execute_code" and e.participant == "ai"]
    assert [(e.status, e.args["code"]) for e in code] == [("ok", READ), ("pending", WRITE)]
    pending = code[1]
    assert pending.signatory == "D" and pending.gate_rule is not None
    assert pending.gate_rule.model_dump() == {"action": "execute_code", "scope": "data_changing",
                                              "note": "check that no rows are lost", "signatory": "D"}
    assert result.memory.gates.render() == "execute_code (data-changing code only; note: check that no rows are lost) -> D"


def test_a_self_gate_is_ungated_and_nobody_else_is_drafted_in(tmp_path):
    gates = [{"action": "edit_result", "signatory": "D"}]
    scripts = {"ai": [SLOTS, {**SLOTS, "gates": gates}, say("edit_result", "H-by-ai")],
               "D": [SLOTS, ACCEPT, say("edit_result", "H-by-D")]}
    result, events = run(tmp_path, "scaffolded-d", scripts, seed=ai_first_seed(("ai", "D"), 2), idle_rounds=2)
    edits = {e.participant: e for e in events if e.action == "edit_result" and e.proposer is None}
    assert edits["ai"].status == "pending" and edits["ai"].gate_rule.signatory == "D"
    own = edits["D"]
    assert (own.status, own.request_id, own.signatory, own.gate_rule) == ("ok", None, None, None)
    assert own.editor_version == 0 and result.snapshot.editor_versions[0].text == "H-by-D"
    assert [e.request_id for e in events if e.status == "pending"] == ["req-1"]  # only the AI's edit


def test_an_absent_signatorys_gate_is_dropped_reported_and_not_rerouted(tmp_path):
    gates = [{"action": "finish", "signatory": "Researcher", "note": "only with a table"},
             {"action": "edit_result", "signatory": "D"}]
    scripts = {"ai": [SLOTS, {**SLOTS, "gates": gates}, say("finish", "done")], "D": [SLOTS, ACCEPT]}
    result, events = run(tmp_path, "scaffolded-d", scripts, seed=1)
    frozen = next(e for e in events if e.action == "memory_frozen")
    assert frozen.args["report"] == ["gate 1 dropped: signatory 'Researcher' is not on the team"]
    assert [(r.action, r.signatory) for r in result.memory.gates.rules] == [("edit_result", "D")]
    finish = next(e for e in events if e.action == "finish")
    assert (finish.status, finish.signatory, finish.gate_rule) == ("ok", None, None)  # D was not drafted in
    assert result.ended_by == "finish"


def test_preassigned_without_r_gates_only_data_changing_code_by_d(tmp_path):
    scripts = {"ai": [say("execute_code", WRITE), say("edit_result", "H"), say("finish", "done")],
               "D": [say("approve", "fine", "req-1")]}
    result, events = run(tmp_path, "preassigned-d", scripts, seed=ai_first_seed(("ai", "D"), 3))
    pending = [e for e in events if e.status == "pending"]
    assert [(e.action, e.gate_rule.scope, e.gate_rule.signatory) for e in pending] == [
        ("execute_code", "data_changing", "D")]
    assert [(e.action, e.status) for e in events if e.action in ("edit_result", "finish")] == [
        ("edit_result", "ok"), ("finish", "ok")]  # R's gates are absent, nobody signs in R's place
    assert result.ended_by == "finish" and result.final_hypothesis == "H"


def test_held_drafts_name_each_edit_to_its_proposer_and_signatory_until_it_takes_effect():
    """`held_drafts`: pending, then approved but waiting on an earlier edit, then nothing once applied;
    a cell held meanwhile is no draft of the result."""
    from colabkit.session.actions import Action
    from colabkit.session.structure.gating import DRAFTS_HEAD, Gatekeeper, gate_rules_text, held_drafts
    from colabkit.team import GateRule, GateTable

    table = GateTable(rules=(GateRule(action="edit_result", signatory="R"),))
    ledger = Gatekeeper(table, ("ai", "D", "R"))
    rule = GateRule(action="edit_result", signatory="R")
    first, second = (ledger.open(Action(type="edit_result", text=t), "ai", rule, 1) for t in ("H1", "H2"))
    ledger.open(Action(type="execute_code", code=READ), "ai", GateRule(action="execute_code", signatory="R"), 1)
    ledger.decide(second.request_id, "R", "approved", "ok")
    requests = list(ledger.requests.values())
    assert held_drafts(requests, "ai") == [
        "- req-1, your edit of the result, awaits R's decision",
        "- req-2, your edit of the result, is approved and takes effect once the earlier requests it waits on "
        "are decided"]
    assert held_drafts(requests, "R")[0] == "- req-1, ai's edit of the result, awaits your decision"
    assert held_drafts(requests, "D") == []
    text = gate_rules_text(table, "preassigned", "R", drafts=held_drafts(requests, "R"))
    assert text is not None and text.split("\n")[-3:] == [DRAFTS_HEAD, *held_drafts(requests, "R")]
    for request in (first, second):
        request.status, request.applied = "approved", True
    assert held_drafts(list(ledger.requests.values()), "ai") == []
