"""The memory build protocol on its own (no kernel): order, visibility of earlier proposals,
the ratification round, and the documented fallbacks when model answers are malformed."""

from __future__ import annotations

import asyncio

from helpers.scripted import use_scripted

from colabkit.llm import Gateway, ModelConfig
from colabkit.session import ListSink, SessionSettings, SessionSpec
from colabkit.session.events import EventLog
from colabkit.session.prompting.profile import COMPACT_SLOT_CHARS
from colabkit.session.structure.build_phase import build_memory
from colabkit.team import variant

SLOTS = {"expertise": "E", "responsibility": "Resp", "plan": "P", "evidence_standards": "S"}
ACCEPT = {"reply": {"decision": "accept"}}


def build(var_name: str, scripts: dict, seed: int = 0, settings: SessionSettings | None = None):
    var = variant(var_name)
    model = use_scripted(scripts)
    spec = SessionSpec(task_id="t/0/0", variant=var, seed=seed, settings=settings or SessionSettings(),
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team})
    sink = ListSink()
    memory = asyncio.run(build_memory(spec, "Which query?", {pid: f"briefing of {pid}" for pid in var.team},
                                      gateway=Gateway(), log=EventLog(spec.session_id, sink), sample=seed))
    return memory, sink.events, model


def test_later_proposers_see_earlier_proposals_and_the_ai_consolidates():
    scripts = {"ai": [{**SLOTS, "plan": "AI-PLAN", "gates": []},
                      {**SLOTS, "gates": [{"action": "edit", "signatory": "Researcher"}]}],
               "D": [{**SLOTS, "expertise": "D-KNOWS-COLUMNS", "gates": []}, ACCEPT],
               "R": [{**SLOTS, "expertise": "R-KNOWS-PERIODS", "gates": []}, ACCEPT]}
    memory, events, model = build("scaffolded-dr", scripts)
    proposers = [e.participant for e in events if e.action == "propose_memory"]
    assert sorted(proposers) == ["D", "R", "ai"]
    last = proposers[-1]
    last_prompt = next(c for c in model.calls if c["name"] == last)["messages"][-1]["content"]
    assert all(f"{p} proposed" in last_prompt for p in proposers[:-1])
    assert "briefing of " + last in last_prompt and all(f"briefing of {p}" not in last_prompt for p in proposers[:-1])
    consolidation = [c for c in model.calls if c["name"] == "ai"][-1]
    assert consolidation["name"] == "ai" and all(f"{p} proposed" in consolidation["messages"][-1]["content"]
                                                 for p in proposers)
    assert [(r.action, r.signatory) for r in memory.gates.rules] == [("edit_result", "R")]
    frozen = events[-1]
    assert frozen.args["source"] == "consolidation" and frozen.args["digest"] == memory.digest()
    assert frozen.args["ratification"] == {"D": "accept", "R": "accept"}
    assert not any(e.action == "amend_memory" for e in events)  # nobody amended: no amending call
    assert any("mapped" in line for line in frozen.args["report"])
    assert all(e.phase == "build" for e in events)


def test_a_failed_consolidation_falls_back_to_the_ais_proposal():
    scripts = {"ai": [{**SLOTS, "plan": "AI-PLAN"}, "not json", "still not json"],
               "D": ["garbage", "more garbage", ACCEPT]}
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


def test_the_ratification_round_appears_in_the_log_and_the_ai_applies_the_amendments_once():
    amended = {**SLOTS, "plan": "AI analyses; R checks Belau_PC1 is openness", "gates": []}
    scripts = {"ai": [{**SLOTS, "gates": []}, {**SLOTS, "gates": []}, amended],
               "D": [{**SLOTS, "gates": []}, ACCEPT],
               "R": [{**SLOTS, "gates": []}, {"reply": {"decision": "amend", "amendment": "R checks Belau_PC1 is openness"}}]}
    memory, events, model = build("scaffolded-dr", scripts, seed=2)
    ratify = [e for e in events if e.action == "ratify_memory"]
    assert sorted((e.participant, e.status, e.args["decision"]) for e in ratify) == [
        ("D", "ok", "accept"), ("R", "ok", "amend")]
    assert all(e.round == 3 and e.phase == "build" for e in ratify)
    [amend] = [e for e in events if e.action == "amend_memory"]
    assert (amend.participant, amend.status, amend.round) == ("ai", "ok", 4)
    assert amend.args["amendments"] == {"R": "R checks Belau_PC1 is openness"}
    assert memory.plan == amended["plan"]
    frozen = events[-1]
    assert frozen.action == "memory_frozen" and frozen.args["ratification"] == {"D": "accept", "R": "amend"}
    assert frozen.args["source"] == "consolidation; amended by R"
    # each member saw the draft and its own briefing, never the other's answer; the AI does not ratify
    for pid in ("D", "R"):
        prompt = [c for c in model.calls if c["name"] == pid][-1]["messages"][-1]["content"]
        assert "# Consolidated memory (draft)\nShared Group Memory (draft, not frozen yet):" in prompt
        assert f"briefing of {pid}" in prompt and "Belau_PC1" not in prompt
    ai_calls = [c for c in model.calls if c["name"] == "ai"]
    assert len(ai_calls) == 3 and "- R: R checks Belau_PC1 is openness" in ai_calls[-1]["messages"][-1]["content"]


def test_a_failed_ratification_is_no_amendment_and_a_failed_amending_freezes_the_draft():
    scripts = {"ai": [{**SLOTS}, {**SLOTS, "plan": "DRAFT"}, "not json", "still not json"],
               "D": [{**SLOTS}, {"reply": {"decision": "amend", "amendment": "D owns the cleaning"}}]}
    memory, events, _ = build("memory-d", scripts)
    assert memory.plan == "DRAFT"
    [amend] = [e for e in events if e.action == "amend_memory"]
    assert amend.status == "failed_step" and amend.args["amendments"] == {"D": "D owns the cleaning"}
    assert events[-1].args["source"] == "consolidation; amending failed, the draft is frozen unamended"
    # an 'amend' without its text is invalid: repaired once, else a failed step counted as no amendment
    scripts = {"ai": [{**SLOTS}, {**SLOTS, "plan": "DRAFT"}],
               "D": [{**SLOTS}, {"reply": {"decision": "amend"}}, {"reply": {"decision": "amend", "amendment": " "}}]}
    memory, events, _ = build("memory-d", scripts)
    [ratify] = [e for e in events if e.action == "ratify_memory"]
    assert ratify.status == "failed_step" and "amendment text" in ratify.result
    assert events[-1].args["ratification"] == {"D": "failed"} and events[-1].args["source"] == "consolidation"
    assert not any(e.action == "amend_memory" for e in events) and memory.plan == "DRAFT"


def test_the_ratification_is_sized_by_the_profile_like_the_slots():
    """A large-window model may amend a slot at a slot's length; the compact profile keeps it short."""
    long_amendment = "R checks that Belau_PC1 is openness, " * 12  # ~450 characters
    scripts = {"ai": [{**SLOTS}, {**SLOTS}, {**SLOTS, "plan": "AMENDED"}],
               "R": [{**SLOTS}, {"reply": {"decision": "amend", "amendment": long_amendment}}]}
    memory, events, model = build("memory-r", scripts, settings=SessionSettings(context_window=128_000))
    [ratify] = [e for e in events if e.action == "ratify_memory"]
    assert ratify.status == "ok" and memory.plan == "AMENDED"
    prompt = [c for c in model.calls if c["name"] == "R"][-1]["messages"][-1]["content"]
    assert "at most 1200 characters" in prompt
    # compact: the same amendment is too long (repaired once, then a failed step)
    scripts = {"ai": [{**SLOTS}, {**SLOTS}],
               "R": [{**SLOTS}, {"reply": {"decision": "amend", "amendment": long_amendment}},
                     {"reply": {"decision": "amend", "amendment": long_amendment}}]}
    memory, events, model = build("memory-r", scripts)
    [ratify] = [e for e in events if e.action == "ratify_memory"]
    assert ratify.status == "failed_step" and events[-1].args["ratification"] == {"R": "failed"}
    prompt = [c for c in model.calls if c["name"] == "R"][-1]["messages"][-1]["content"]
    compact = COMPACT_SLOT_CHARS  # the embedded model's slot length, whatever its current size
    assert f"at most {compact} characters" in prompt and compact < 450
