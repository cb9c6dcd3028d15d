"""Noninterference by construction (issue 42, item 1): six behaviours, each played with the SAME
scripted policy in a gated variant and in its Default twin (the same team without the
structure), asserting the quantity the structure does not declare is equal.

Each test failed on the engine before issue 42: a signatory's approvals counted as initiative,
a gated variant narrowed the common `to` field to a fixed list, one signatory's silence held
another's approved edit, bookkeeping lines took the room of a member's own activity, the build
phase was charged to the session's cost cap, and a late-approved finish let later proposals land.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

import pytest
from helpers.scripted import use_scripted

from colabkit.evaluation.metrics.initiative import initiated_events, initiative_entropy
from colabkit.llm import Budget, Gateway, ModelConfig
from colabkit.session import ListSink, SessionSettings, SessionSpec, run_session
from colabkit.tasks import load_tasks
from colabkit.team import variant

TASK = load_tasks().get("demo_archaeology/0/0")
WAIT = {"thought": "nothing for me now", "action": "wait", "content": "", "to": ""}
OPEN = re.compile(r"\b(req-\d+) from \w+ to \w+ \[pending\]")
Player = Callable[[str], dict]
"""A policy of one member: its answer to the observation it is shown (the same in both twins)."""


def say(action: str, content: str = "", to: str = "", thought: str = "next") -> dict:
    return {"thought": thought, "action": action, "content": content, "to": to}


def open_for_me(shown: str) -> list[str]:
    section = shown.split("# Approval requests for you", 1)[1:]
    return OPEN.findall(section[0].split("\n# ", 1)[0]) if section else []


def deciding(shown: str) -> bool:
    """Whether the prompt is a decision step or a closing step (decisions only, never a member's own step)."""
    return "a decision step)" in shown or "closing step" in shown


def approver(*, closing_only: bool = False, then: Player | None = None) -> Player:
    """At a decision step, approve the newest request open for you (with `closing_only`, only in
    the closing pass), else wait; at its own step, `then` (a wait by default)."""
    def play(shown: str) -> dict:
        if deciding(shown):
            ids = open_for_me(shown)
            if ids and (not closing_only or "closing step" in shown):
                return say("approve", "fine", max(ids, key=lambda rid: int(rid[4:])))
            return WAIT
        return then(shown) if then is not None else WAIT
    return play


def run(tmp_path, name: str, players: dict[str, Player], *, scripts: dict | None = None, seed: int = 0,
        budget: Budget | None = None, **settings):
    """Play `name` with each member's player (scripted lists first, for the AI)."""
    var = variant(name)

    def policy(model: str, messages: list[dict]) -> dict:
        return players.get(model.split("/")[-1], lambda _: WAIT)(messages[1]["content"])

    model = use_scripted(scripts or {}, default=policy)
    spec = SessionSpec(task_id=TASK.id, variant=var, seed=seed,
                       models={pid: ModelConfig(model=f"scripted/{pid}") for pid in var.team},
                       settings=SessionSettings(**settings))
    sink = ListSink()
    result = asyncio.run(run_session(spec, TASK, gateway=Gateway(budget=budget), sink=sink,
                                     workdir_root=tmp_path / name))
    return result, sink.events, model


def prompts(model, pid: str) -> list[str]:
    return [c["messages"][1]["content"] for c in model.calls if c["name"] == pid]


def h_init_events(events, team) -> float | None:
    counts = initiated_events(events)
    return initiative_entropy({m: counts.get(m, 0) for m in team}, team)[0]


def test_a_signatorys_approvals_are_machinery_not_initiative(tmp_path):
    """Behaviour 1: the AI makes 6 edits, R only approves; h_init_events is R's share in neither."""
    edits = {"ai": [say("edit_result", f"H{i}") for i in range(1, 7)]}
    values = {}
    for name in ("default-r", "preassigned-r"):
        result, events, _ = run(tmp_path, name, {"R": approver()}, scripts=edits, action_budget=6)
        assert result.final_hypothesis == "H6"
        values[name] = h_init_events(events, result.spec.variant.team)
    assert values["preassigned-r"] == values["default-r"] == 0.0


def messenger(recipients: tuple[str, ...]) -> Player:
    """Once the AI's hypothesis is in view: send one message to each recipient list in its own
    steps (the chat shows how many it sent), else wait; approve what is open for it at its decision steps."""
    def send(shown: str) -> dict:
        sent = len(re.findall(r"\] note from R", shown))
        if "H1" in shown and sent < len(recipients):
            return say("send_message", f"note from R {sent}", recipients[sent])
        return WAIT
    return approver(then=send)


def test_a_recipient_list_valid_in_default_stays_valid_while_a_request_is_open(tmp_path):
    """Behaviour 2: R, with the AI's edit open for it, writes to "D,ai", "everyone", "ai, D"."""
    delivered = {}
    for name in ("default-dr", "preassigned-dr"):
        result, events, _ = run(tmp_path, name, {"R": messenger(("D,ai", "everyone", "ai, D"))},
                                scripts={"ai": [say("edit_result", "H1")]}, action_budget=6)
        delivered[name] = sum(1 for e in events if e.participant == "R" and e.action == "send_message"
                              and e.status == "ok")
        assert not [e for e in events if e.participant == "R" and e.status == "failed_step"], name
    assert delivered == {"default-dr": 3, "preassigned-dr": 3}


def test_an_approved_edit_waits_on_no_other_signatorys_silence(tmp_path):
    """Behaviour 3: D never decides the AI's held data-changing cell; R approves the AI's later edit,
    and the AI sees it in its editor in the task, not only once the session has ended."""
    ai = [say("execute_code", "values = [1, 2]\nvalues[0] = 3"), say("edit_result", "H1")]
    shown = {}
    for name in ("default-dr", "preassigned-dr"):
        result, events, model = run(tmp_path, name, {"R": approver()}, scripts={"ai": list(ai)}, action_budget=6)
        shown[name] = [p for p in prompts(model, "ai") if "# Result editor (the submitted hypothesis)\nH1" in p]
        assert result.final_hypothesis == "H1"
    assert shown["default-dr"] and shown["preassigned-dr"]
    assert len(shown["default-dr"]) - len(shown["preassigned-dr"]) <= 1  # one round's hold, at most


ACTIVITY = re.compile(r"r\d+ ai edit_result(?: req-\d+)? -> ok: (H\d+)")


@pytest.mark.parametrize("window", [None, 32_768], ids=["compact", "full"])
def test_bookkeeping_lines_take_no_room_from_a_members_own_lines(tmp_path, window):
    """Behaviour 4: 12 edits, each approved: as many hypotheses in the AI's activity (of the 11 before
    its last prompt, those that took effect: an edit still held is the hold's declared delay) and
    as many of its thoughts in its last prompt with the gate lines as without them."""
    long = ("because " * 200)[: 190 if window is None else 990]  # a thought as long as the profile takes
    edits = {"ai": [say("edit_result", f"H{i} " + "x" * 300, thought=f"T{i} {long}") for i in range(1, 13)]}
    seen = {}
    for name in ("default-r", "preassigned-r"):
        _, _, model = run(tmp_path, name, {"R": approver()}, scripts=edits, action_budget=12,
                          **({"context_window": window} if window else {}))
        last = prompts(model, "ai")[-1]
        held = len(re.findall(r"req-\d+ from ai to R \[pending\]", last))  # the hold's delay, declared
        seen[name] = (len(set(ACTIVITY.findall(last))), len(re.findall(r"\bT\d+ because", last)), 11 - held)
    (shown, thoughts, _), (gated_shown, gated_thoughts, took_effect) = seen["default-r"], seen["preassigned-r"]
    assert shown >= 4, seen
    assert (gated_shown, gated_thoughts) == (min(shown, took_effect), thoughts), seen


def test_the_build_phase_is_not_charged_to_the_sessions_task_cap(tmp_path):
    """Behaviour 5: the same token cap gives the AI as many turns after a memory build as without one."""
    uncapped, _, _ = run(tmp_path / "measure", "default-r", {}, action_budget=8)
    cap = uncapped.totals.tokens // 2  # binds in the task, half way
    turns, charged, results = {}, {}, {}
    for name in ("default-r", "memory-r"):
        budget = Budget(max_tokens=cap)
        result, events, _ = run(tmp_path, name, {}, budget=budget, action_budget=8)
        assert result.ended_by == "llm_budget", name
        turns[name], results[name] = result.totals.ai_turns, (result, events)
        charged[name] = (budget.spent_tokens, sum(c.total_tokens for e in events if e.phase == "task"
                                                  for c in e.llm_calls))
    assert turns["memory-r"] == turns["default-r"] < 8
    assert all(spent == task for spent, task in charged.values()), charged
    for name, (result, events) in results.items():  # the build's spend, recorded apart
        build_tokens = sum(c.total_tokens for e in events if e.phase == "build" for c in e.llm_calls)
        assert result.totals.build_tokens == build_tokens and (build_tokens > 0) == (name == "memory-r")


def test_nothing_proposed_after_a_finish_lands_once_it_takes_effect(tmp_path):
    """Behaviour 6: the AI edits, finishes, edits again; R approves newest first. The finish ends the
    session with the hypothesis written before it, gated or not, and `ended_by` says finish."""
    ai = [say("edit_result", "H-BEFORE"), say("finish", "ready"), say("edit_result", "H-AFTER")]
    for closing_only in (True, False):
        ends = {}
        for name in ("default-r", "preassigned-r"):
            result, events, _ = run(tmp_path / str(closing_only), name, {"R": approver(closing_only=closing_only)},
                                    scripts={"ai": list(ai)}, action_budget=5)
            ends[name] = (result.ended_by, result.final_hypothesis)
            assert "H-AFTER" not in [v.text for v in result.snapshot.editor_versions], name
        assert ends["preassigned-r"] == ends["default-r"] == ("finish", "H-BEFORE"), closing_only



def test_one_rule_keeps_machinery_out_of_initiative_work_and_the_tasks_steps():
    """`Event.kind` sorts every event once; initiative, work and the totals all read it: an effect
    applied in the closing pass is work, every decision and the build are nobody's step."""
    from helpers.trajectories import Trajectory

    from colabkit.evaluation.metrics.work import work
    from colabkit.session.events import CLOSING_PASS
    from colabkit.session.totals import session_totals

    t = Trajectory(("ai", "R"))
    start, build = t.start(), t.build_step("R")
    cell = t.run("ai", "x = 1")
    early = t.request("ai", "edit_result", "R", text="H0")
    decision = t.decide("R", early, approve=True)
    late = t.request("ai", "edit_result", "R", text="H1")
    closing = t.decide("R", late, approve=True, closing=True)
    applied = t.events[-1].model_copy(update={"args": {**t.events[-1].args, CLOSING_PASS: True}})  # as the engine marks it
    t.events[-1] = applied
    end = t.end()
    kinds = {e.seq: e.kind for e in t.events}
    assert [kinds[e.seq] for e in (start, build, cell, decision, closing, applied, end)] == [
        "system", "machinery", "step", "machinery", "machinery", "effect", "system"]
    assert initiated_events(t.events) == {"ai": 3}  # the cell and two proposals; no decision
    assert work(t.events, t.team).by_member == {"ai": 3, "R": 0}  # the cell and both edits took effect
    totals = session_totals(t.events, SessionSettings(), {"ai": "ai", "R": "human"}, rounds=1)
    assert (totals.ai_actions, totals.human_actions, totals.decisions, totals.closing_decisions) == (3, 0, 1, 1)


def test_the_build_phase_has_its_own_declared_budget_and_reaching_it_leaves_the_tasks_cap_untouched(tmp_path):
    """A build budget of 1 token binds in the build: the session ends `llm_budget` there, before any
    task step, and nothing is charged to the task's cap."""
    from colabkit.session.settings import BuildBudget

    task_cap = Budget(max_tokens=10**9)
    result, events, _ = run(tmp_path, "memory-r", {}, budget=task_cap, action_budget=4,
                            build_budget=BuildBudget(max_tokens=1))
    assert result.ended_by == "llm_budget" and "token budget reached" in events[-1].result
    assert not [e for e in events if e.phase == "task" and e.participant != "system"] and task_cap.spent_tokens == 0
    assert result.spec.settings.build_budget == BuildBudget(max_tokens=1)  # declared, recorded with the session


def section(prompt: str, title: str) -> str | None:
    """The text of the prompt's section `title` (its heading line included), None when absent."""
    head = f"# {title}"
    found = next((part for part in prompt.split("\n\n# ") if f"# {part}".startswith(head)), None)
    return None if found is None else f"# {found}"


def test_a_held_draft_is_stated_in_the_gating_section_of_its_proposer_and_signatory_only(tmp_path):
    """The AI's edit waits for R (who decides only in the closing pass): the AI and R read in their
    gate rules that the draft is held, D (no party to it) does not; and the common result editor
    says nothing of it: every editor section the gated members read is one the Default twin shows."""
    editors, gated = {}, None
    for name in ("default-dr", "preassigned-dr"):
        _, _, model = run(tmp_path, name, {"R": approver(closing_only=True)},
                          scripts={"ai": [say("edit_result", "H1")]}, action_budget=3)
        editors[name] = {section(p, "Result editor") for pid in ("ai", "D", "R") for p in prompts(model, pid)}
        gated = model if name == "preassigned-dr" else gated
    assert editors["preassigned-dr"] <= editors["default-dr"]
    assert "# Result editor (the submitted hypothesis)\n(empty)" in editors["preassigned-dr"]
    rules = {pid: [section(p, "Gate rules") or "" for p in prompts(gated, pid)] for pid in ("ai", "D", "R")}
    assert any(r.endswith("- req-1, your edit of the result, awaits R's decision") for r in rules["ai"][1:])
    assert "- req-1, your edit" not in rules["ai"][0]  # the AI's first prompt, before its edit
    asked = [open_for_me(p) == ["req-1"] for p in prompts(gated, "R")]
    assert any(asked) and asked == [r.endswith("- req-1, ai's edit of the result, awaits your decision")
                                    for r in rules["R"]]  # said exactly while the draft is open for R
    assert not any("Held edits of the result" in r for r in rules["D"])
