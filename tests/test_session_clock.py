"""The AI's session clock and the closing pass, under adversarial scripted play (issue 33).

Each test drives the engine's own loop (`run_session`, a real kernel) with scripted players
(`helpers.scripted`): lists of answers, then a policy answering what the player is shown. Each
one failed on the engine before issue 33: a finish threw open requests away, the closing pass
was one oldest-first decision per signatory, a team AI's waits were free, humans could end a
session, the cost cap skipped the closing pass, and Default's schema offered approve/reject.
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from helpers.scripted import use_scripted

from colabkit.errors import ColabkitError
from colabkit.llm import Budget, Gateway, ModelConfig
from colabkit.session import ListSink, SessionSettings, SessionSpec, run_session
from colabkit.session.scheduler import round_order
from colabkit.tasks import load_tasks
from colabkit.team import GateRule, GateTable, variant

TASK = load_tasks().get("demo_archaeology/0/0")
WAIT = {"thought": "nothing for me now", "action": "wait", "content": "", "to": ""}
OPEN = re.compile(r"\b(req-\d+) from \w+ to \w+ \[pending\]")
EDIT_GATED_R = variant("preassigned-r").model_copy(update={
    "name": "edit-gated-r", "preassigned": GateTable(rules=(GateRule(action="edit_result", signatory="R"),))})
"""A table a Scaffolded team may choose: edits need R, a finish does not."""


def say(action: str, content: str = "", to: str = "") -> dict:
    return {"thought": "next", "action": action, "content": content, "to": to}


def signatory(*, in_closing_only: bool, pick=max):
    """A policy: approve the newest request open for you (`pick=min`: the oldest), else wait; with
    `in_closing_only`, wait through the session and decide only in the closing pass."""
    def policy(name: str, messages: list[dict]) -> dict:
        shown = messages[1]["content"]
        section = shown.split("# Approval requests for you", 1)[1:]
        ids = OPEN.findall(section[0].split("\n# ", 1)[0]) if section else []
        if not ids or (in_closing_only and "closing step" not in shown):
            return WAIT
        return say("approve", "fine", pick(ids, key=lambda rid: int(rid[4:])))
    return policy


def run(tmp_path, var, scripts: dict, *, seed: int = 0, policy=None, budget: Budget | None = None, **settings):
    model = use_scripted(scripts, default=policy or WAIT)
    spec = SessionSpec(task_id=TASK.id, variant=var, seed=seed,
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team},
                       settings=SessionSettings(**settings))
    sink = ListSink()
    result = asyncio.run(run_session(spec, TASK, gateway=Gateway(budget=budget), sink=sink, workdir_root=tmp_path))
    return result, sink.events, model


def steps(events) -> list:
    return [e for e in events if e.phase == "task" and e.participant != "system"]


def test_a_gated_edit_then_an_ungated_finish_is_submitted_in_20_of_20_seeds(tmp_path):
    """The AI's own prompt says edit, then finish: the finish takes effect after the open edit."""
    submitted = []
    for seed in range(20):
        result, events, _ = run(tmp_path / str(seed), EDIT_GATED_R,
                                {"ai": [say("edit_result", "H-FINAL"), say("finish", "ready")]},
                                seed=seed, policy=signatory(in_closing_only=False), action_budget=4)
        submitted.append(result.final_hypothesis)
        assert result.ended_by == "finish" and result.totals.expired == 0
    assert submitted == ["H-FINAL"] * 20


@pytest.mark.parametrize("pick", [min, max], ids=["oldest-first", "newest-first"])
def test_two_gated_edits_open_at_the_ais_last_step_the_later_is_submitted(tmp_path, pick):
    """R decides only in the closing pass, the oldest or the newest first; approved edits take
    effect in proposal order, so the final one is what is submitted (as ungated)."""
    result, events, _ = run(tmp_path, variant("preassigned-r"),
                            {"ai": [say("edit_result", "H-EARLY"), say("edit_result", "H-FINAL")]},
                            policy=signatory(in_closing_only=True, pick=pick), action_budget=2)
    assert result.ended_by == "budget" and result.final_hypothesis == "H-FINAL"
    assert [v.text for v in result.snapshot.editor_versions] == ["H-EARLY", "H-FINAL"]
    assert (result.totals.closing_decisions, result.totals.expired) == (2, 0)


def test_four_requests_queued_before_a_gated_edit_the_edit_is_decided_and_submitted(tmp_path):
    """Five gated edits for R (the compact profile shows 3 requests): the closing pass shows the
    newest first with the count of the rest and repeats until nothing is open."""
    edits = [say("edit_result", f"H{i}") for i in range(1, 5)] + [say("edit_result", "H-FINAL")]
    result, events, model = run(tmp_path, variant("preassigned-r"), {"ai": edits},
                                policy=signatory(in_closing_only=True), action_budget=5)
    assert result.spec.profile.requests == 3
    assert result.final_hypothesis == "H-FINAL" and result.totals.expired == 0
    assert result.totals.closing_decisions == 5
    first_closing = next(c["messages"][1]["content"] for c in model.calls
                         if c["name"] == "R" and "closing step" in c["messages"][1]["content"])
    assert "req-5 from ai" in first_closing and "(2 older requests for you not shown" in first_closing


def test_a_default_dr_ai_that_edits_then_waits_ends_at_its_budget_with_no_step_after_it(tmp_path):
    """Its waits are steps of its budget: 4 calls for 4 steps, none off budget, and no human acts
    after its last step; humans chatter but are asked at most their own cap of 4."""
    chatter = [say("send_message", f"note {i}", "all") for i in range(10)]
    result, events, model = run(tmp_path, variant("default-dr"), {"ai": [say("edit_result", "H")], "D": chatter,
                                                                  "R": list(chatter)}, action_budget=4)
    assert result.ended_by == "budget" and result.budget_side == "ai"
    assert steps(events)[-1].participant == "ai" and result.totals.ai_turns == 4
    calls = {pid: sum(1 for c in model.calls if c["name"] == pid) for pid in ("ai", "D", "R")}
    assert calls["ai"] == 4 and calls["D"] <= 4 and calls["R"] <= 4
    assert result.totals.rounds == 4 and result.final_hypothesis == "H"


def test_humans_that_finish_or_wait_cannot_end_a_session_before_the_ais_budget(tmp_path):
    finisher, events, model = run(tmp_path / "finish", variant("default-d"),
                                  {"ai": [say("execute_code", "x = 1")], "D": [say("finish", "done")]}, action_budget=5)
    assert finisher.ended_by == "budget" and finisher.totals.ai_turns == 5
    assert not [e for e in steps(events) if e.participant == "D" and e.action == "finish"]
    d_schema = next(c for c in model.calls if c["name"] == "D")["params"]["response_format"]["json_schema"]["schema"]
    assert "finish" not in d_schema["properties"]["action"]["enum"]
    waiters, _, _ = run(tmp_path / "wait", variant("default-dr"), {}, action_budget=5, idle_rounds=1)
    assert waiters.ended_by == "budget" and waiters.totals.ai_turns == 5 and waiters.totals.rounds == 5


def test_a_binding_cost_cap_leaves_no_request_open(tmp_path):
    """The token cap binds while the AI's gated edit is open: the closing pass runs past the cap,
    its spend charged to the machinery's account and recorded apart."""
    budget = Budget(max_tokens=1)
    seed = next(s for s in range(100) if round_order(("ai", "R"), s, 1)[0] == "ai")  # the AI's edit is the first call
    result, events, _ = run(tmp_path, variant("preassigned-r"), {"ai": [say("edit_result", "H-FINAL")]},
                            seed=seed, policy=signatory(in_closing_only=True), budget=budget, action_budget=6)
    assert result.ended_by == "llm_budget"
    assert result.totals.expired == 0 and result.final_hypothesis == "H-FINAL" and events[-1].args["expired"] == 0
    # the closing pass is machinery (issue 42): charged apart from the task's cap, recorded
    assert result.totals.closing_llm_calls >= 1 and result.totals.machinery_tokens > 0
    assert budget.spent_tokens == result.totals.tokens - result.totals.machinery_tokens


def test_defaults_schemas_offer_no_approve_or_reject(tmp_path):
    _, _, model = run(tmp_path, variant("default-dr"), {"ai": [say("edit_result", "H")]}, action_budget=2)
    for call in model.calls:
        schema = call["params"]["response_format"]["json_schema"]["schema"]
        assert not {"approve", "reject"} & set(schema["properties"]["action"]["enum"]), call["name"]
        assert "approve" not in json.dumps(schema) and "approve:" not in call["messages"][1]["content"]


def test_sessions_of_the_earlier_rules_keep_their_identity_and_are_never_run_as_these(tmp_path):
    spec = SessionSpec(task_id=TASK.id, variant=variant("default-d"), seed=0)
    for rules in (1, 2):  # 2: issue 33's rules, before issue 42's
        earlier = spec.model_copy(update={"engine_rules": rules})
        assert spec.engine_rules == 3 and earlier.session_id != spec.session_id  # the rules are hashed in
        with pytest.raises(ColabkitError, match=f"recorded under the engine's rules {rules}"):
            asyncio.run(run_session(earlier, TASK, gateway=Gateway(), sink=ListSink(), workdir_root=tmp_path))
