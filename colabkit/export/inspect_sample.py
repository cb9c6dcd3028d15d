"""One stored session as an Inspect AI `EvalSample`: its events in Inspect's typed events.

The mapping (docs/export.md has the table): every model call behind a step is a
`ModelEvent` (its messages when the run kept them with `--log-prompts`, else a note naming
the prompt's hash; its output is the step the model chose); every step a participant took
is a `ToolEvent` named after the action, a code cell's carrying the cell's code, output and
error; a gated request is an `ApprovalEvent` ("escalate" to the signatory) and its decision
another ("approve"/"reject", with the signatory as approver and the reason as explanation);
the memory build, the session's own events (start, memory frozen or updated, expired
requests, fork changes, end) and a person's seat steps are `InfoEvent`s. Every exported
event carries the colabkit `event_id` it came from in its metadata, so a reader can join
back to the store. Everything is built from `inspect_ai`'s own classes; nothing here writes JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from inspect_ai.event import ApprovalEvent, Event, InfoEvent, ModelEvent, ToolEvent
from inspect_ai.log import EvalSample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.scorer import Score
from inspect_ai.tool import ToolCall, ToolCallError

from colabkit.evaluation import ScoreFile
from colabkit.evaluation.tables import structure_of
from colabkit.llm import CallRecord
from colabkit.session import Event as StepEvent
from colabkit.session.events import BUILD_ACTIONS, SYSTEM
from colabkit.store import SessionRecord
from colabkit.workspace import CellResult, WorkspaceSnapshot

TEAM_MODEL = "colabkit/team"
"""The model name of a sample's output: the team's submitted hypothesis, not one model's."""
GATE_DECISIONS = ("approve", "reject")


def _when(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _message(raw: Mapping[str, Any]) -> ChatMessage:
    """A stored prompt message (litellm's dict) as Inspect's chat message of the same role."""
    content = raw.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    role = raw.get("role")
    if role == "system":
        return ChatMessageSystem(content=text)
    if role == "assistant":
        return ChatMessageAssistant(content=text)
    return ChatMessageUser(content=text)


def _step_output(event: StepEvent) -> str:
    """What the model chose at this step, as the answer its call produced."""
    return json.dumps({"thought": event.thought, "action": event.action, "args": event.args}, ensure_ascii=False)


def _model_events(event: StepEvent, prompts: Mapping[str, list[dict[str, Any]]], base: dict[str, Any]) -> list[Event]:
    calls: Sequence[CallRecord] = event.llm_calls
    found: list[Event] = []
    for i, call in enumerate(calls):
        stored = prompts.get(call.prompt_hash or "")
        messages = [_message(m) for m in stored] if stored is not None else [ChatMessageUser(
            content=f"[prompt not stored (run with --log-prompts to keep it); sha256 {call.prompt_hash}]")]
        last = i == len(calls) - 1 and call.error is None
        output = ModelOutput.from_content(call.model, _step_output(event) if last else (call.error or ""),
                                          error=call.error)
        output.usage = ModelUsage(input_tokens=call.prompt_tokens, output_tokens=call.completion_tokens,
                                  total_tokens=call.total_tokens,
                                  input_tokens_cache_read=call.provider_cached_tokens or None)
        found.append(ModelEvent(
            model=call.model, role=event.participant, input=messages, tools=[], tool_choice="none",
            config=GenerateConfig(), output=output, error=call.error, cache="read" if call.suite_replay else None,
            working_time=call.latency_s, timestamp=base["timestamp"], working_start=base["working_start"],
            metadata={**base["metadata"], "kind": "model_call", "caller": call.caller, "prompt_hash": call.prompt_hash,
                      "cost": call.cost, "replayed_cost": call.replayed_cost, "attempts": call.attempts,
                      "output_mode": call.output_mode}))
    return found


def _cell_tool(event: StepEvent, cell: CellResult | None, base: dict[str, Any]) -> ToolEvent:
    code = str(event.args.get("code", ""))
    if cell is None:  # a cell that never reached the kernel (failed step): the step's result stands in
        return ToolEvent(id=event.event_id, function="execute_code", arguments={"code": code},
                         result=event.result, error=ToolCallError("unknown", event.result), **base)
    failed = cell.status != "ok"
    return ToolEvent(id=f"cell-{cell.index}", function="execute_code", arguments={"code": code},
                     result=cell.output + (cell.error or ""), failed=failed or None,
                     error=ToolCallError("timeout" if cell.status == "timeout" else "unknown",
                                         cell.error or cell.status) if failed else None, **base)


def _gate_call(event: StepEvent, action: str, args: Mapping[str, Any]) -> ToolCall:
    return ToolCall(id=event.request_id or event.event_id, function=action, arguments=dict(args))


def _approval(event: StepEvent, requests: dict[str, StepEvent], base: dict[str, Any]) -> ApprovalEvent:
    """A held request ("escalate" to its signatory), or the signatory's decision on one."""
    if event.status == "pending":
        requests[event.request_id or ""] = event
        rule = event.gate_rule
        return ApprovalEvent(message=f"{event.participant} asks {event.signatory} to sign {event.action}"
                             + (f" ({rule.note})" if rule is not None and rule.note else ""),
                             call=_gate_call(event, event.action, event.args), approver=event.signatory or "",
                             decision="escalate", explanation=event.result, **base)
    held = requests.get(event.request_id or "")
    call = _gate_call(event, held.action, held.args) if held is not None else _gate_call(event, event.action, {})
    return ApprovalEvent(message=f"{event.signatory} {event.decision} {event.request_id} of {event.proposer}",
                         call=call, approver=event.signatory or event.participant,
                         decision="approve" if event.decision == "approved" else "reject",
                         explanation=event.decision_reason, **base)


def _info(event: StepEvent, source: str, base: dict[str, Any]) -> InfoEvent:
    data = {"participant": event.participant, "action": event.action, "args": event.args, "result": event.result}
    return InfoEvent(source=source, data=json.loads(json.dumps(data, ensure_ascii=False, default=str)), **base)


def step_events(event: StepEvent, cells: Mapping[int, CellResult], prompts: Mapping[str, list[dict[str, Any]]],
                requests: dict[str, StepEvent], started: float) -> list[Event]:
    """The Inspect events of one colabkit event: its model calls, then the step itself."""
    meta = {"event_id": event.event_id, "seq": event.seq, "phase": event.phase, "round": event.round,
            "participant": event.participant, "action": event.action, "status": event.status,
            "thought": event.thought, "request_id": event.request_id}
    base: dict[str, Any] = {"timestamp": _when(event.time), "working_start": max(0.0, event.time - started),
                            "metadata": meta}
    found = _model_events(event, prompts, base)
    if event.person is not None:  # a person's seat step: who and how, beside the step itself
        found.append(InfoEvent(source="colabkit/person", data=event.person.model_dump(mode="json"),
                               timestamp=base["timestamp"], working_start=base["working_start"],
                               metadata={**meta, "kind": "person"}))
    if event.participant == SYSTEM:
        found.append(_info(event, f"colabkit/{event.action}", base))
    elif event.action in BUILD_ACTIONS:
        found.append(_info(event, "colabkit/memory_build", base))
    elif event.status == "pending" or (event.action in GATE_DECISIONS and event.decision is not None):
        found.append(_approval(event, requests, base))
    elif event.action == "execute_code":
        found.append(_cell_tool(event, cells.get(event.cell_index) if event.cell_index is not None else None, base))
    else:
        failed = event.status in ("error", "failed_step", "blocked", "rejected")
        found.append(ToolEvent(id=event.event_id, function=event.action,
                               arguments=json.loads(json.dumps(event.args, default=str)), result=event.result,
                               failed=failed or None,
                               error=ToolCallError("unknown", event.result) if failed else None, **base))
    return found


def chat_messages(snapshot: WorkspaceSnapshot) -> list[ChatMessage]:
    """The team chat: the AI's messages as the assistant's, every other member's as a user's."""
    found: list[ChatMessage] = []
    for m in snapshot.messages:
        text = f"[{m.sender} → {', '.join(m.to) if m.to else 'all'}] {m.text}"
        meta = {"sender": m.sender, "to": list(m.to) if m.to else None, "message_index": m.index}
        found.append(ChatMessageAssistant(content=text, metadata=meta) if m.sender == "ai"
                     else ChatMessageUser(content=text, metadata=meta))
    return found


def inspect_score(score: ScoreFile) -> Score:
    """A colabkit score as Inspect's: the scorer's columns as the value, the rest as metadata.

    Only S_hyp's claim->cell links of the scorer's details are carried: other details (the
    performance scorer's decomposition of the gold hypothesis) could reveal gold answers.
    """
    result = score.result
    meta: dict[str, Any] = {
        "scorer_id": score.scorer_id, "version": score.version, "prompt_version": score.prompt_version,
        "judge_model": score.judge.model if score.judge is not None else None, "judge_grade": score.judge_grade,
        "judge_reliable": score.judge_reliable, "repeats": score.repeats, "complete": result.complete,
        "flags": list(result.flags), "agreement": score.agreement,
    }
    if "evidence" in result.details:
        meta["evidence"] = result.details["evidence"]
    return Score(value=dict(result.values), explanation="; ".join(result.flags) or None, metadata=meta)


def session_sample(record: SessionRecord, events: Sequence[StepEvent], snapshot: WorkspaceSnapshot,
                   scores: Sequence[ScoreFile], *, query: str | None, gold: str | None,
                   prompts: Mapping[str, list[dict[str, Any]]]) -> EvalSample:
    """The sample of one session: input the task query, target the gold answer only when given."""
    cells = {c.index: c for c in snapshot.cells}
    started = record.started.timestamp()
    requests: dict[str, StepEvent] = {}
    inspect_events = [e for step in sorted(events, key=lambda e: e.seq)
                      for e in step_events(step, cells, prompts, requests, started)]
    usage: dict[str, ModelUsage] = {}
    for step in events:
        for call in step.llm_calls:
            usage[call.model] = usage.get(call.model, ModelUsage()) + ModelUsage(
                input_tokens=call.prompt_tokens, output_tokens=call.completion_tokens, total_tokens=call.total_tokens)
    latest: dict[str, ScoreFile] = {s.scorer: s for s in scores}  # oldest first: the newest of each scorer wins
    spec = record.spec
    fork = record.fork
    structure, composition = structure_of(spec.variant.model_dump(mode="json"))
    metadata = {
        "session_id": record.session_id, "task_id": record.task_id, "task_digest": record.task_digest,
        "variant": spec.variant.name, "variant_hash": record.variant_hash, "seed": record.seed,
        "structure": structure, "composition": composition, "humans": list(spec.variant.humans),
        "memory": spec.variant.memory, "gate_source": spec.variant.gate_source, "persona_versions": record.persona_versions,
        "models": {role: m.model for role, m in record.models.items()},
        "termination": spec.settings.termination, "ended_by": record.ended_by, "budget_side": record.budget_side,
        "memory_digest": record.memory_digest, "package_version": record.package_version,
        "fork": None if fork is None else {"parent_id": fork.point.parent_id, "at": fork.point.at,
                                           "change": fork.point.change.model_dump(mode="json"),
                                           "seed": fork.point.seed},
    }
    return EvalSample(
        id=record.session_id, epoch=1, input=query if query is not None else f"(task {record.task_id} not loaded)",
        target=gold or "", messages=chat_messages(snapshot),
        output=ModelOutput.from_content(TEAM_MODEL, record.final_hypothesis),
        scores={name: inspect_score(s) for name, s in latest.items()} or None, metadata=metadata,
        events=inspect_events, model_usage=usage, started_at=record.started, completed_at=record.finished,
        total_time=(record.finished - record.started).total_seconds(), completed=True)
