"""The Shared Group Memory build: a short fixed protocol run before the task.

Protocol (memory variants only; the single agent and non-memory variants skip it):
1. Round 1, every member in a seed-drawn order proposes the four slots (expertise,
   responsibility, plan, evidence standards; in Scaffolded also gates). Each proposer sees
   the query, its own private briefing and the proposals made before it, because the point
   of the build is that members learn who knows what.
2. Round 2, the AI agent consolidates all proposals into one. It is the AI because it is
   the one member present in every team, so every variant runs the same protocol.
3. The consolidation becomes the frozen `MemoryRecord` (team layer: gates kept only for
   self-selected gating, so Memory-only drops any the team wrote) and a `memory_frozen`
   event records its digest, content and the mapping report.

A proposal whose model answer is malformed is a failed step and is simply missing. If the
consolidation itself fails, the AI's own proposal (else the first valid one) is adopted, and
with no valid proposal at all the memory has empty slots; the event says which happened.
All events here have phase "build" and count towards no task-phase budget.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from pydantic import BaseModel

from colabkit.llm import Gateway
from colabkit.session.events import BUILD_ACTIONS, SYSTEM, EventLog
from colabkit.session.observation import clip
from colabkit.session.react import ask, prompt_messages
from colabkit.session.settings import SessionSpec
from colabkit.team import MemoryRecord, build_instructions, memory_from_consolidation, memory_schema

PROPOSE, CONSOLIDATE = BUILD_ACTIONS
BUILD_NOTE = "Before the task, the team writes a shared memory. Reply with one JSON object filling the slots."


def _render_proposal(pid: str, proposal: BaseModel, limit: int | None) -> str:
    fields = "; ".join(f"{key}: {' '.join(str(value).split())}" for key, value in proposal.model_dump().items())
    return clip(f"{pid} proposed -- {fields}", limit)


def _user_text(query: str, briefing: str, instructions: str, proposals: Mapping[str, BaseModel],
               proposal_chars: int | None) -> str:
    # The team layer's briefings open with the query; as in task-phase observations, say it once.
    parts = [] if query.strip() in briefing else [f"# Task\n{query}"]
    parts += [f"# Your private briefing\n{briefing or '(none)'}", f"# Memory build\n{instructions}"]
    if proposals:
        parts.append("# Proposals so far\n" + "\n".join(_render_proposal(p, v, proposal_chars) for p, v in proposals.items()))
    return "\n\n".join(parts)


async def build_memory(
    spec: SessionSpec, query: str, briefings: Mapping[str, str], *, gateway: Gateway, log: EventLog, sample: int
) -> MemoryRecord:
    """Run the build protocol above, log it, and return the frozen memory."""
    variant = spec.variant
    with_gates = variant.gate_source == "self"
    profile = spec.profile  # the compact one keeps the embedded model's answers short
    schema = memory_schema(with_gates, profile.slot_chars)
    team = variant.team_personas()
    order = list(variant.team)
    random.Random(f"{spec.seed}:build:1").shuffle(order)

    proposals: dict[str, BaseModel] = {}
    for pid in order:
        instructions = build_instructions("propose", team, with_gates, profile.slot_chars)
        messages = prompt_messages(f"{variant.persona(pid).prompt}\n\n{BUILD_NOTE}",
                                   _user_text(query, briefings[pid], instructions, proposals, profile.proposal_chars))
        answer = await ask(gateway, spec.model_for(pid), messages, schema, caller=pid, sample=sample)
        if answer.value is None:
            log.emit(phase="build", round=1, participant=pid, action=PROPOSE, status="failed_step",
                     result=answer.error or "", llm_calls=answer.records)
            continue
        proposals[pid] = answer.value
        log.emit(phase="build", round=1, participant=pid, action=PROPOSE, status="ok",
                 args=answer.value.model_dump(mode="json"), result="proposal recorded", llm_calls=answer.records)

    instructions = build_instructions("consolidate", team, with_gates, profile.slot_chars)
    messages = prompt_messages(f"{variant.persona('ai').prompt}\n\n{BUILD_NOTE}",
                               _user_text(query, briefings["ai"], instructions, proposals, profile.proposal_chars))
    answer = await ask(gateway, spec.model_for("ai"), messages, schema, caller="ai", sample=sample)
    if answer.value is not None:
        consolidated, source = answer.value, "consolidation"
        log.emit(phase="build", round=2, participant="ai", action=CONSOLIDATE, status="ok",
                 args=consolidated.model_dump(mode="json"), result="consolidation recorded",
                 llm_calls=answer.records)
    else:
        log.emit(phase="build", round=2, participant="ai", action=CONSOLIDATE, status="failed_step",
                 result=answer.error or "", llm_calls=answer.records)
        fallback = "ai" if "ai" in proposals else next(iter(proposals), None)
        consolidated = proposals[fallback] if fallback else schema(
            expertise="", responsibility="", plan="", evidence_standards="")
        source = f"fallback: proposal of {fallback}" if fallback else "fallback: no valid proposal, empty memory"

    memory, report = memory_from_consolidation(consolidated, team, with_gates=with_gates)
    log.emit(phase="build", round=2, participant=SYSTEM, action="memory_frozen", status="info",
             args={"digest": memory.digest(), "memory": memory.model_dump(mode="json"), "source": source,
                   "report": list(report)},
             result=memory.digest())
    return memory
