"""`same-trace` (issue 42 item 2): a variant and its Default twin, played by one policy, leave the
same whole trace once the structure's declared parts are projected out.

A plugin structure that changes a common part (narrows a member's view, gives a step, re-validates
a common field) is caught by name; one that only adds its declared parts (a section, a hold)
passes. The projection comes from the declaration: a section the plugin did not declare is not
projected out, and the requests are recorded as they arrived at the recording server (HTTP)."""

from __future__ import annotations

from typing import Any

import pytest

from colabkit.runner import build_spec
from colabkit.runner.audit import Policy, Scenario, hunt
from colabkit.runner.audit.player import play, scenario_spec
from colabkit.runner.audit.trace import declared, same_trace
from colabkit.session.structure.base import Context, Structure, View
from colabkit.tasks import load_tasks
from colabkit.team import StructureRef, VariantConfig

TASK = load_tasks().get("demo_archaeology/0/0")
TASKS = {TASK.id: TASK}
BUSY = Scenario(TASK.id, "d", budget=4, gates="none", policies={
    "ai": Policy(("code:0", "msg:1", "edit:1", "code:2")), "D": Policy(("code:3", "msg:1", "msg:0", "code:0"))})


class NarrowedView(Structure):
    """Unfair: shows every member only its last thought (the profile is the engine's)."""

    name = "narrowed-view"

    def start(self, ctx: Context) -> None:
        ctx.profile = ctx.profile.model_copy(update={"notes": 1})


class ExtraStep(Structure):
    """Unfair: the AI gets one step beyond its budget."""

    name = "extra-step"

    def start(self, ctx: Context) -> None:
        ctx.sched.used["ai"] -= 1  # type: ignore[attr-defined]


class ShortMessages(Structure):
    """Unfair: re-validates a common field (a message longer than 40 characters is a failed step)."""

    name = "short-messages"

    def perform(self, ctx: Context, pid: str, action: Any, fields: dict[str, Any]) -> bool | None:
        if action.type == "send_message" and len(action.text) > 40:
            ctx.emit(pid, action.type, "failed_step", args=action.args(), result="a message is 40 characters at most",
                     **fields)
            return False
        return None


class Note(Structure):
    """Fair: a section of its own, nothing else."""

    name = "note"
    sections = ("Note",)

    def view(self, ctx: Context, pid: str) -> View:
        return {"sections": (("Note", "Say what the data cannot tell."),)}


def variant(cls: type[Structure]) -> VariantConfig:
    return VariantConfig(name=f"{cls.name}-d", humans=("D",),
                         structures=(StructureRef(name=f"{__name__}:{cls.__name__}"),))


def traced(cls: type[Structure], scenario: Scenario = BUSY) -> list[Any]:
    specs = [build_spec(TASK.id, "default-d", 0), build_spec(TASK.id, variant(cls), 0)]
    return [play(scenario_spec(s, scenario, wire=True), TASK, scenario) for s in specs]


@pytest.mark.parametrize(("cls", "channel"), [
    (NarrowedView, "requests ai"),  # the AI's own thoughts cut: its prompt differs
    (ExtraStep, "requests ai"),  # one AI step more: its budget shows it
    (ShortMessages, "turns ai"),  # the AI's long message fails
])
def test_a_plugin_that_changes_a_common_part_is_caught_on_its_channel(cls, channel):
    found = same_trace(traced(cls))
    assert [v.invariant for v in found] == ["same-trace"], found
    assert found[0].variants == ("default-d", f"{cls.name}-d")
    assert f"{channel} #" in found[0].detail, found[0].detail


def test_a_plugin_that_only_adds_its_declared_section_passes():
    runs = traced(Note)
    assert same_trace(runs) == []
    assert any("# Note" in str(c["messages"][-1]["content"]) for c in runs[1].calls)


def test_the_projection_is_the_declaration_an_undeclared_section_is_not_projected_out(monkeypatch):
    runs = traced(Note)
    monkeypatch.setattr(Note, "sections", ())  # the same runs, read as if the plugin had declared nothing
    found = same_trace(runs)
    assert found and "Note" in found[0].detail and "requests" in found[0].detail


def test_the_declared_parts_are_read_from_the_composition():
    assert declared(build_spec(TASK.id, "memory-r", 0).variant).builds
    gated = declared(build_spec(TASK.id, "preassigned-r", 0).variant)
    assert gated.decides and "edit_result" in gated.holds and "Approval requests for you" in gated.sections
    living = declared(build_spec(TASK.id, "dynamic-dr", 0).variant)
    assert "propose_memory_update" in living.actions
    assert declared(build_spec(TASK.id, "default-r", 0).variant) == declared(build_spec(TASK.id, "single", 0).variant)


def test_requests_are_recorded_as_they_arrived_over_http():
    run = traced(Note)[0]
    params = run.calls[0]["params"]
    assert params["response_format"]["type"] == "json_schema" and params["temperature"] == 0.7
    assert run.spec.model_for("ai").model.startswith("openai/") and run.spec.model_for("ai").api_base


def test_a_memory_variant_leaves_its_default_twins_whole_trace():
    """No hold: every channel is compared in full (requests with their shared sections, notebook,
    answer, metrics), with a failed cell, a malformed answer whose repair fails and one whose repair
    answers, long messages."""
    scenario = Scenario(TASK.id, "d", budget=9, gates="none", policies={
        "ai": Policy(("fail", "code:2", "slip", "msg:1", "edit:1", "code:0")), "D": Policy(("msg:1", "slip", "code:2"))})
    report = hunt([build_spec(TASK.id, n, 0) for n in ("single", "default-d", "memory-d")], TASKS, examples=0,
                  known=[scenario])
    assert report.ok, report.render()


def test_a_cap_that_binds_in_the_task_binds_alike_with_a_build_phase():
    """Issue 42, behaviour 5: the memory's build is machinery, not the task's spend, so a cap binds
    at the same turn in the memory variant as in Default (fails while the build is charged to it)."""
    scenario = Scenario(TASK.id, "d", budget=12, gates="none", cost_cap=5_000, policies={
        "ai": Policy(("code:0", "edit:1") * 6), "D": Policy(("code:2", "msg:0"))})
    found = same_trace([play(scenario_spec(build_spec(TASK.id, n, 0), scenario, wire=True), TASK, scenario)
                        for n in ("default-d", "memory-d")])
    assert found == [], found[0].render()


def test_a_failed_closing_step_is_machinery_in_the_charges() -> None:
    """Found by a long hunt over dynamic.yaml: the AI ignores a memory update open for it, so the
    closing pass asks it and its answer fails; those requests were charged to the task's channel
    in dynamic-r and not in default-r, where no closing pass exists."""
    scenario = Scenario(TASK.id, "r", budget=2, gates="none", policies={
        "ai": Policy((), "ignore"), "R": Policy(("update",), "approve-oldest")})
    runs = [play(scenario_spec(build_spec(TASK.id, name, 0), scenario), TASK, scenario)
            for name in ("default-r", "dynamic-r")]
    closing = [e for e in runs[1].events if e.args.get("closing_pass") and e.participant == "ai"]
    assert closing and closing[0].status == "failed_step" and closing[0].llm_calls
    assert same_trace(runs) == []


def test_a_declared_act_under_a_binding_cap_compares_up_to_the_earlier_end() -> None:
    """Found by a long hunt over dynamic.yaml: R's memory update is one request in dynamic-r and a
    failed step with its repair (two) in default-r, so a binding cap ends the twins at different
    turns; that spend is the declared act's, and the runs compare up to the earlier end."""
    scenario = Scenario(TASK.id, "r", budget=3, gates="none", cost_cap=1437, policies={
        "ai": Policy(()), "R": Policy(("update", "slip"))})
    runs = [play(scenario_spec(build_spec(TASK.id, name, 0), scenario), TASK, scenario)
            for name in ("default-r", "dynamic-r")]
    assert [r.result.ended_by for r in runs] == ["llm_budget", "llm_budget"]
    assert same_trace(runs) == []
