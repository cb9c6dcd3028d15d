"""The memory build protocol on its own (no kernel): order, visibility of earlier proposals,
and the documented fallbacks when model answers are malformed."""

from __future__ import annotations

import asyncio

from helpers.scripted import use_scripted

from colabkit.llm import Gateway, ModelConfig
from colabkit.session import ListSink, SessionSpec
from colabkit.session.build_phase import build_memory
from colabkit.session.events import EventLog
from colabkit.team import variant

SLOTS = {"expertise": "E", "responsibility": "Resp", "plan": "P", "evidence_standards": "S"}


def build(var_name: str, scripts: dict, seed: int = 0):
    var = variant(var_name)
    model = use_scripted(scripts)
    spec = SessionSpec(task_id="t/0/0", variant=var, seed=seed,
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team})
    sink = ListSink()
    memory = asyncio.run(build_memory(spec, "Which query?", {pid: f"briefing of {pid}" for pid in var.team},
                                      gateway=Gateway(), log=EventLog(spec.session_id, sink), sample=seed))
    return memory, sink.events, model


def test_later_proposers_see_earlier_proposals_and_the_ai_consolidates():
    scripts = {"ai": [{**SLOTS, "plan": "AI-PLAN", "gates": []},
                      {**SLOTS, "gates": [{"action": "edit", "signatory": "Researcher"}]}],
               "D": [{**SLOTS, "expertise": "D-KNOWS-COLUMNS", "gates": []}],
               "R": [{**SLOTS, "expertise": "R-KNOWS-PERIODS", "gates": []}]}
    memory, events, model = build("scaffolded-dr", scripts)
    proposers = [e.participant for e in events if e.action == "propose_memory"]
    assert sorted(proposers) == ["D", "R", "ai"]
    last = proposers[-1]
    last_prompt = next(c for c in model.calls if c["name"] == last)["messages"][-1]["content"]
    assert all(f"{p} proposed" in last_prompt for p in proposers[:-1])
    assert "briefing of " + last in last_prompt and all(f"briefing of {p}" not in last_prompt for p in proposers[:-1])
    consolidation = model.calls[-1]
    assert consolidation["name"] == "ai" and all(f"{p} proposed" in consolidation["messages"][-1]["content"]
                                                 for p in proposers)
    assert [(r.action, r.signatory) for r in memory.gates.rules] == [("edit_result", "R")]
    frozen = events[-1]
    assert frozen.args["source"] == "consolidation" and frozen.args["digest"] == memory.digest()
    assert any("mapped" in line for line in frozen.args["report"])
    assert all(e.phase == "build" for e in events)


def test_a_failed_consolidation_falls_back_to_the_ais_proposal():
    scripts = {"ai": [{**SLOTS, "plan": "AI-PLAN"}, "not json", "still not json"],
               "D": ["garbage", "more garbage"]}
    memory, events, _ = build("memory-d", scripts)
    statuses = {(e.participant, e.action): e.status for e in events}
    assert statuses[("D", "propose_memory")] == "failed_step"
    assert statuses[("ai", "consolidate_memory")] == "failed_step"
    assert memory.plan == "AI-PLAN" and memory.gates is None
    assert events[-1].args["source"] == "fallback: proposal of ai"


def test_with_no_valid_proposal_the_memory_is_empty_but_still_frozen():
    bad = ["x", "y"]
    memory, events, _ = build("memory-d", {"ai": bad * 2, "D": list(bad)})
    assert (memory.expertise, memory.plan) == ("", "")
    assert events[-1].action == "memory_frozen" and "empty memory" in events[-1].args["source"]
