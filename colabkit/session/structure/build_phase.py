"""The Shared Group Memory build: a short fixed protocol run before the task.

Protocol (memory variants only; the single agent and non-memory variants skip it):
1. Round 1, every member in a seed-drawn order proposes the four slots (expertise,
   responsibility, plan, evidence standards; in Scaffolded also gates). Each proposer sees
   the query, its own private briefing and the proposals made before it, because the point
   of the build is that members learn who knows what (`memory_proposals: sequential`, the
   default); with `independent` nobody sees another's proposal (they are asked at once) and
   only the consolidation sees them all. The rules every member reads say which.
2. Round 2, the AI agent consolidates all proposals into one draft. It is the AI because it
   is the one member present in every team, so every variant runs the same protocol.
3. Round 3, ratification (issue 8, item 6: the memory is the team's act, not the AI's
   alone): every simulated human sees the draft as it would be enforced and either accepts
   it or names one amendment. They answer independently (none sees another's answer), so
   they are asked at the same time and logged in a seed-drawn order. The AI agent wrote the
   draft, so it does not ratify its own work.
4. Round 4, if anyone amended, the AI agent applies the amendments once (one call, no
   second round). Then the result becomes the frozen `MemoryRecord` (team layer: gates kept
   only for self-selected gating, so Memory-only drops any the team wrote) and a
   `memory_frozen` event records its digest, content, source, each member's ratification
   and the mapping report.

A malformed answer is a failed step and is simply missing: a proposal is left out, a
ratification counts as no amendment. If the consolidation fails, the AI's own proposal (else
the first valid one) is the draft, and with no valid proposal at all the memory has empty
slots; if applying the amendments fails, the draft is frozen unamended. The event says
which happened. All events here have phase "build" and count towards no task-phase budget.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping
from typing import Any

from colabkit.llm import Gateway
from colabkit.session.events import BUILD_ACTIONS, SYSTEM, EventLog
from colabkit.session.prompting.views import clip, unstated_query
from colabkit.session.rules import gate_cost, task_budgets
from colabkit.session.seats.policy import Question, Seat, SeatAnswer, answer
from colabkit.session.seats.react import prompt_messages
from colabkit.session.settings import SessionSpec
from colabkit.team import (
    BuildStage,
    MemoryRecord,
    MemorySlots,
    Persona,
    build_request,
    build_rules,
    memory_from_consolidation,
    memory_schema,
    ratification_schema,
)

PROPOSE, CONSOLIDATE, RATIFY, AMEND = BUILD_ACTIONS
# One system note for every build call, and every user message in the same order (briefing,
# the build's rules, what this call refers to, then its request): a member's later call
# repeats its earlier prompt up to the material that is new, so the provider's (or
# llama.cpp's) prefix cache serves the rest.
BUILD_NOTE = "Before the task, the team writes a shared memory. Reply with one JSON object, as the last section asks."


def _render_proposal(pid: str, proposal: MemorySlots, limit: int | None) -> str:
    fields = "; ".join(f"{key}: {' '.join(str(value).split())}" for key, value in proposal.model_dump().items())
    return clip(f"{pid} proposed -- {fields}", limit)


def _user_text(query: str, briefing: str, rules: str, extra: list[str], request: str) -> str:
    parts = [f"# Task\n{query}"] if unstated_query(query, briefing) else []
    parts += [f"# Your private briefing\n{briefing or '(none)'}", f"# Memory build\n{rules}", *extra,
              f"# Your part now\n{request}"]
    return "\n\n".join(parts)


class _Build:
    """One run of the protocol: the spec, the model calls and the log."""

    def __init__(self, spec: SessionSpec, query: str, briefings: Mapping[str, str], gateway: Gateway,
                 log: EventLog, sample: int, seats: Mapping[str, Seat]) -> None:
        self.spec, self.query, self.briefings, self.gateway, self.log, self.sample = (
            spec, query, briefings, gateway, log, sample)
        self.seats = seats
        self.variant = spec.variant
        self.with_gates = self.variant.gate_source == "self"
        self.profile = spec.profile  # the compact one keeps the embedded model's answers short
        self.schema = memory_schema(self.with_gates, self.profile.slot_chars, self.profile.max_gates,
                                    self.profile.gate_note_chars)
        self.ratification = ratification_schema(self.profile.slot_chars)  # an amendment: one slot's worth
        self.team: tuple[Persona, ...] = self.variant.team_personas()
        self.independent = spec.settings.memory_proposals == "independent"

    def order(self, members: list[str], step: int) -> list[str]:
        shuffled = list(members)
        random.Random(f"{self.spec.seed}:build:{step}").shuffle(shuffled)
        return shuffled

    def messages(self, pid: str, stage: BuildStage, extra: list[str]) -> list[dict[str, str]]:
        rules = build_rules(self.team, self.with_gates, self.profile.slot_chars, living=self.variant.memory_updates,
                            budgets=task_budgets(self.spec.settings, {p.id: p.role for p in self.team}),
                            gate_cost=gate_cost(self.spec.settings), independent=self.independent)
        request = build_request(stage, self.with_gates, self.profile.slot_chars)
        return prompt_messages(f"{self.variant.persona(pid).prompt}\n\n{BUILD_NOTE}",
                               _user_text(self.query, self.briefings[pid], rules, extra, request))

    def member(self, pid: str, stage: BuildStage, extra: list[str], schema: type[Any]) -> Any:
        """A member's answer from its seat (its model, or the person holding it, the AI's included)."""
        question = Question(pid, stage, self.spec.model_for(pid), self.messages(pid, stage, extra), schema,
                            self.sample, self.variant.team)
        return answer(self.seats, self.gateway, question)

    def proposals_block(self, proposals: Mapping[str, MemorySlots]) -> list[str]:
        if not proposals:
            return []
        limit = self.profile.proposal_chars
        return ["# Proposals so far\n" + "\n".join(_render_proposal(p, v, limit) for p, v in proposals.items())]

    def draft_block(self, draft: MemorySlots) -> list[str]:
        """The draft as a ratifying human sees it: as it would be enforced, in the task phase's budget."""
        enforced, _ = memory_from_consolidation(draft, self.team, with_gates=self.with_gates)
        return [f"# Consolidated memory (draft)\n{enforced.render(self.profile.memory_chars, draft=True)}"]

    @staticmethod
    def amendments_block(draft: MemorySlots, amendments: Mapping[str, str]) -> list[str]:
        return [f"# Consolidated memory (draft, JSON)\n{draft.model_dump_json()}",
                "# Amendments\n" + "\n".join(f"- {pid}: {text}" for pid, text in amendments.items())]

    async def propose(self) -> dict[str, MemorySlots]:
        """Every member's proposal, in the seed-drawn order: each seeing the ones before it, or
        (`independent`) none, all asked at once like the ratification and logged in that order."""
        proposals: dict[str, MemorySlots] = {}
        order = self.order(list(self.variant.team), 1)
        early: list[SeatAnswer[Any]] = list(await asyncio.gather(
            *(self.member(pid, "propose", [], self.schema) for pid in order))) if self.independent else []
        for k, pid in enumerate(order):
            reply: SeatAnswer[Any] = early[k] if early else \
                await self.member(pid, "propose", self.proposals_block(proposals), self.schema)
            answer, person = reply.answer, _person(reply)
            if answer.value is None:
                self.log.emit(phase="build", round=1, participant=pid, action=PROPOSE, status="failed_step",
                              result=answer.error or "", llm_calls=answer.records, **person)
                continue
            proposals[pid] = answer.value
            self.log.emit(phase="build", round=1, participant=pid, action=PROPOSE, status="ok",
                          args=answer.value.model_dump(mode="json"), result="proposal recorded",
                          llm_calls=answer.records, **person)
        return proposals

    async def consolidate(self, proposals: dict[str, MemorySlots]) -> tuple[MemorySlots, str]:
        reply: SeatAnswer[Any] = await self.member("ai", "consolidate", self.proposals_block(proposals), self.schema)
        answer, person = reply.answer, _person(reply)
        if answer.value is not None:
            self.log.emit(phase="build", round=2, participant="ai", action=CONSOLIDATE, status="ok",
                          args=answer.value.model_dump(mode="json"), result="consolidation recorded",
                          llm_calls=answer.records, **person)
            return answer.value, "consolidation"
        self.log.emit(phase="build", round=2, participant="ai", action=CONSOLIDATE, status="failed_step",
                      result=answer.error or "", llm_calls=answer.records, **person)
        fallback = "ai" if "ai" in proposals else next(iter(proposals), None)
        if fallback is not None:
            return proposals[fallback], f"fallback: proposal of {fallback}"
        empty = self.schema(expertise="", responsibility="", plan="", evidence_standards="")
        return empty, "fallback: no valid proposal, empty memory"

    async def ratify(self, draft: MemorySlots) -> tuple[dict[str, str], dict[str, str]]:
        """Each human's answer ("accept", "amend" or "failed") and the amendments by member."""
        # Shown as the task phase will show it: the same profile budget, the gate line whole.
        shown = self.draft_block(draft)
        humans = self.order(list(self.variant.humans), 3)
        # Independent answers, so they are asked at once (two contexts of the embedded model
        # decode on two cores); they are logged in the seed-drawn order, whatever ends first.
        replies = await asyncio.gather(*(self.member(pid, "ratify", shown, self.ratification) for pid in humans))
        answers: dict[str, str] = {}
        amendments: dict[str, str] = {}
        for pid, reply in zip(humans, replies):
            answer, person = reply.answer, _person(reply)
            if answer.value is None:
                answers[pid] = "failed"
                self.log.emit(phase="build", round=3, participant=pid, action=RATIFY, status="failed_step",
                              result=answer.error or "", llm_calls=answer.records, **person)
                continue
            answers[pid] = answer.value.decision
            if answer.value.decision == "amend":
                amendments[pid] = answer.value.amendment.strip()
            self.log.emit(phase="build", round=3, participant=pid, action=RATIFY, status="ok",
                          args={"decision": answer.value.decision, "amendment": answer.value.amendment},
                          result="accepted" if answer.value.decision == "accept" else "amendment named",
                          llm_calls=answer.records, **person)
        return answers, amendments

    async def amend(self, draft: MemorySlots, amendments: dict[str, str]) -> MemorySlots | None:
        reply: SeatAnswer[Any] = await self.member("ai", "amend", self.amendments_block(draft, amendments),
                                                   self.schema)
        answer, person = reply.answer, _person(reply)
        if answer.value is None:
            self.log.emit(phase="build", round=4, participant="ai", action=AMEND, status="failed_step",
                          args={"amendments": amendments}, result=answer.error or "", llm_calls=answer.records,
                          **person)
            return None
        self.log.emit(phase="build", round=4, participant="ai", action=AMEND, status="ok",
                      args={"amendments": amendments, "memory": answer.value.model_dump(mode="json")},
                      result=f"{len(amendments)} amendment(s) applied", llm_calls=answer.records, **person)
        return answer.value


def _person(reply: SeatAnswer[Any]) -> dict[str, Any]:
    return {"person": reply.person} if reply.person is not None else {}


async def build_memory(
    spec: SessionSpec, query: str, briefings: Mapping[str, str], *, gateway: Gateway, log: EventLog, sample: int,
    seats: Mapping[str, Seat] | None = None,
) -> MemoryRecord:
    """Run the build protocol above, log it, and return the frozen memory (a person holding a
    seat in `seats` proposes and ratifies in that member's place)."""
    build = _Build(spec, query, briefings, gateway, log, sample, seats or {})
    draft, source = await build.consolidate(await build.propose())
    ratification, amendments = await build.ratify(draft)
    final = draft
    if amendments:
        amended = await build.amend(draft, amendments)
        if amended is None:
            source += "; amending failed, the draft is frozen unamended"
        else:
            final, source = amended, source + f"; amended by {', '.join(amendments)}"
    memory, report = memory_from_consolidation(final, build.team, with_gates=build.with_gates)
    log.emit(phase="build", round=4, participant=SYSTEM, action="memory_frozen", status="info",
             args={"digest": memory.digest(), "memory": memory.model_dump(mode="json"), "source": source,
                   "ratification": ratification, "report": list(report)},
             result=memory.digest())
    return memory
