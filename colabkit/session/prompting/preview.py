"""What each participant is given before it acts, rendered without a model, kernel or file.

`preview(spec, task)` sets a session up with the engine's own code (`engine._Session`: the
briefings, the gate table in force, the scheduler's budgets, the observation, the valid
actions and the step messages) and the build phase's own prompt builders, and returns per
participant the build-phase prompts (memory variants) and the first task-phase prompt. Where
a prompt needs a model's output (the members' proposals, the consolidated and frozen memory,
a gate table the team chose, the amendments), one fixed placeholder (`placeholder_memory`)
serves every variant, so two variants' previews can differ only through their structure.
The variant audit (`colabkit.runner.audit`) compares them; a notebook can show them.

`prepared(spec, task, workspace)` is that set-up itself, for callers that go on from it (the
audit's rendering probe applies one history in every variant through the engine's own code).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from colabkit.llm import Gateway
from colabkit.session.engine import _Session
from colabkit.session.events import EventLog, ListSink
from colabkit.session.settings import SessionSpec
from colabkit.session.structure.build_phase import _Build
from colabkit.tasks import Task
from colabkit.team import DEFAULT_PREASSIGNED_GATES, MemorySlots, VariantConfig, memory_from_consolidation
from colabkit.workspace import CellResult, Workspace
from colabkit.workspace.chat import Chat
from colabkit.workspace.editor import Editor

PLACEHOLDER = "<placeholder: a model's output>"


@dataclass(frozen=True)
class Prompt:
    """One model call's messages: the stage it belongs to, the system and the user text."""

    stage: str
    system: str
    user: str


@dataclass(frozen=True)
class ParticipantPreview:
    """What one participant is given: build-phase prompts, first task step, actions, budget."""

    participant: str
    side: str
    build: tuple[Prompt, ...]
    task: Prompt
    valid_actions: tuple[str, ...]
    budget: int
    actions_left: int
    persona_version: str


class _EmptyWorkspace:
    """The workspace before the first step: an empty chat, notebook and editor (no kernel)."""

    def __init__(self) -> None:
        self.chat, self.editor = Chat(), Editor()
        self.cells: list[CellResult] = []


def placeholder_memory(variant: VariantConfig, schema: type[MemorySlots]) -> MemorySlots:
    """The one model output every preview uses: fixed slot texts and, where a team writes
    gates, the study's preassigned table restricted to the team (so a Scaffolded and a
    Preassigned team of the same composition hold the same gates and differ only in who chose)."""
    data: dict[str, object] = {slot: f"{PLACEHOLDER} ({slot})"
                               for slot in ("expertise", "responsibility", "plan", "evidence_standards")}
    if variant.gate_source == "self":
        table, _ = DEFAULT_PREASSIGNED_GATES.for_team(variant.team)
        data["gates"] = [rule.model_dump() for rule in table.rules]
    return schema.model_validate(data)


def prepared(spec: SessionSpec, task: Task, workspace: _EmptyWorkspace,
              gateway: Gateway | None = None) -> tuple[_Session, dict[str, list[Prompt]]]:
    """A session set up to its first task step (the placeholder memory), with the build prompts."""
    session = _Session(spec, task, cast(Workspace, workspace), gateway=gateway,  # type: ignore[arg-type]
                       log=EventLog(spec.session_id, ListSink()), seats={})
    session.brief()
    build_prompts: dict[str, list[Prompt]] = {pid: [] for pid in session.team}
    if spec.variant.memory:  # the Shared Group Memory's build (a plugin's build phase is not previewed)
        build = _Build(spec, task.query, session.briefings, gateway=None, log=session.log,  # type: ignore[arg-type]
                       sample=spec.seed, seats={})
        draft = placeholder_memory(spec.variant, build.schema)

        def add(pid: str, stage: str, extra: list[str]) -> None:
            system, user = (m["content"] for m in build.messages(pid, stage, extra))  # type: ignore[arg-type]
            build_prompts[pid].append(Prompt(stage, system, user))

        proposals: dict[str, MemorySlots] = {}
        for pid in build.order(list(spec.variant.team), 1):
            add(pid, "propose", build.proposals_block(proposals))
            proposals[pid] = draft
        add("ai", "consolidate", build.proposals_block(proposals))
        for pid in build.order(list(spec.variant.humans), 3):
            add(pid, "ratify", build.draft_block(draft))
        add("ai", "amend", build.amendments_block(draft, {pid: PLACEHOLDER for pid in spec.variant.humans}))
        session.board.memory, _ = memory_from_consolidation(draft, build.team, with_gates=build.with_gates)
    session.start_task()
    return session, build_prompts


def preview(spec: SessionSpec, task: Task) -> dict[str, ParticipantPreview]:
    """Every participant's prompts and limits for `spec` on `task` (see the module docstring)."""
    session, build_prompts = prepared(spec, task, _EmptyWorkspace())
    session.round = 1
    previews = {}
    for pid in session.team:
        observation = session.observe(pid)
        system, user = (m["content"] for m in session.messages(pid, observation))
        side = session.sides[pid]
        previews[pid] = ParticipantPreview(
            participant=pid, side=side, build=tuple(build_prompts[pid]), task=Prompt("task", system, user),
            valid_actions=observation.valid_actions, budget=spec.settings.budget_for(side),
            actions_left=session.sched.actions_left(pid), persona_version=spec.variant.persona(pid).version)
    return previews
