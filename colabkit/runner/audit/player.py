"""The hunting audit's test double and how one variant's run of a scenario is played.

`PolicyDouble` stands in for every role's model (provider `colabkit-audit`, registered only
for the audit's own runs; never offered as an agent; a declared seat, which has no model role
of its own, plays the default model and is told apart by the gateway's caller): it answers each request from the
scenario's policies (`scenario`), the same way in every variant. A request is told apart by
its schema's name (the gateway sends registered providers the bounded JSON schema): a build
proposal, consolidation or amendment gets the scenario's memory slots (with its self-chosen
gates where the schema has them), a ratification the member's accept or amend, a task step
the member's next scripted move, or its decision when a request is shown to it. Every
request is kept as sent (`calls`: role, messages, the parameters litellm passed), in the order
the session issued them: `IssueOrderGateway` numbers each request as it enters the gateway
(the engine's own, deterministic order: the build's ratifications in their seat order) and
`calls` is kept sorted by that number, because concurrent requests reach the double in an
order that varies with the threads litellm hops through.

`play` runs one spec through the engine's own entry point (`session.run.run_session`: the
build phase, the loop, the closing pass, the cost cap, the end) with a gateway whose
`Budget` is the scenario's cost cap. With `scenario.real` the workspace is the real one (a
sandboxed kernel and the task's data); otherwise `InMemoryWorkspace`, a notebook without a
kernel (a cell echoes its code; a cell that raises fails), put in the place of `Workspace`
for the run, so the bulk of the search costs milliseconds per step.
"""

from __future__ import annotations

import contextvars
import copy
import itertools
import json
import random
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from litellm import CustomLLM
from litellm.types.utils import ModelResponse, Usage

from colabkit.llm import Budget, Gateway, register_provider
from colabkit.llm.gateway import RetryPolicy
from colabkit.llm.records import OutputMode
from colabkit.runner.audit.scenario import CODE, EDITS, MESSAGES, PROFILES, Scenario, gate_table
from colabkit.runner.audit.wire import MODEL_PREFIX, RecordingServer, over_http
from colabkit.runner.batch import run_sync
from colabkit.session import SessionSpec
from colabkit.session import run as session_run
from colabkit.session.events import Event, ListSink
from colabkit.session.hooks import ReplayHook
from colabkit.session.run import SessionResult, run_session
from colabkit.session.settings import SessionSettings
from colabkit.tasks import Task
from colabkit.team.personas import PERSONA_IDS
from colabkit.workspace import CellResult, IsolationReport, Limits, WorkspaceSnapshot
from colabkit.workspace.chat import Chat
from colabkit.workspace.editor import Editor

PROVIDER = "colabkit-audit"
MALFORMED = "{not json: a malformed answer"
PROMPT_CHARGE, ANSWER_CHARGE = 300, 20
"""The tokens the double charges for every request, whatever its length: a structure's sections
lengthen a prompt by design, so with a charge by length twins would meet a cap at different
turns; with one charge per request, a cap that binds at a different turn is the engine's
accounting (what it charges to the task), which the audit compares (`trace`)."""
_REQUESTS = re.compile(r"^# (?:Approval requests|Memory updates) for you[^\n]*\n(.*?)(?=\n\n# |\Z)", re.S | re.M)
_VALID = re.compile(r"^# Valid actions\n(.*?)(?=\n\n# |\Z)", re.S | re.M)
_REQUEST_ID = re.compile(r"\b((?:req|upd)-\d+)\b")
TEAM_LINE = re.compile(r"^You are (\S+)\. Team: (.*)\.$", re.M)
"""A task prompt's Team line: the member, then its team ("ai (AI agent), D (Data Analyst)")."""
MEMBER = re.compile(r"(\S+) \(")
"""A member's id in the Team line's list."""
_ISSUED: contextvars.ContextVar[int] = contextvars.ContextVar("colabkit_audit_issued", default=-1)


def _step(action: str, content: str = "", to: str = "") -> str:
    return json.dumps({"thought": f"audit: {action}", "action": action, "content": content, "to": to})


def open_requests(observation: str) -> list[str]:
    """The request and update ids listed for this member to decide, oldest first."""
    found: list[str] = []
    for block in _REQUESTS.findall(observation):
        for rid in _REQUEST_ID.findall(block):
            if rid not in found:
                found.append(rid)
    return sorted(found, key=lambda rid: (rid[:3], int(rid.split("-")[1])))


class PolicyDouble(CustomLLM):
    """The scenario's policies as every role's model (see the module docstring)."""

    def __init__(self, scenario: Scenario) -> None:
        super().__init__()
        self.scenario = scenario
        self.calls: list[dict[str, Any]] = []
        self._turn: dict[str, int] = {}  # the next scripted move per role
        self._failing: set[str] = set()  # roles whose repair must fail too

    def completion(self, model: str, messages: list, api_base: Any, custom_prompt_dict: Any,
                   model_response: ModelResponse, print_verbose: Any, encoding: Any,
                   api_key: Any, logging_obj: Any, optional_params: dict,
                   acompletion: Any = None, litellm_params: dict | None = None,
                   logger_fn: Any = None, headers: Any = None, timeout: Any = None,
                   client: Any = None) -> ModelResponse:
        role = model.rsplit("/", 1)[-1]
        if role == "default":  # a declared seat (no model role of its own): the caller names it
            role = str(((litellm_params or {}).get("metadata") or {}).get("caller", role)).partition(":")[0]
        text = self.record(role, messages, dict(optional_params))
        model_response.choices[0].message.content = text
        model_response.choices[0].finish_reason = "stop"
        model_response.model = f"{PROVIDER}/{model}"
        model_response.usage = Usage(prompt_tokens=PROMPT_CHARGE, completion_tokens=ANSWER_CHARGE,  # type: ignore[attr-defined]
                                     total_tokens=PROMPT_CHARGE + ANSWER_CHARGE)
        return model_response

    def record(self, role: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
        """Keep one request as sent (with the answer given), in the order the session issued it
        (`IssueOrderGateway`; a request without a number, over HTTP, goes last), and answer it."""
        issued = _ISSUED.get()
        at = next((i for i, call in enumerate(self.calls) if call["issued"] > issued), len(self.calls))
        call = {"role": role, "messages": copy.deepcopy(messages), "params": params, "issued": issued}
        self.calls.insert(at, call)
        text = call["answer"] = self.answer(role, messages, schema_of(params))
        return text

    @staticmethod
    def usage() -> dict[str, int]:
        """What every request is charged (see `PROMPT_CHARGE`)."""
        return {"prompt_tokens": PROMPT_CHARGE, "completion_tokens": ANSWER_CHARGE,
                "total_tokens": PROMPT_CHARGE + ANSWER_CHARGE}

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self.completion(*args, **kwargs)

    def answer(self, role: str, messages: Sequence[dict[str, Any]], schema: tuple[str, dict[str, Any]]) -> str:
        name, body = schema
        offered = body.get("properties", {}).get("action", {}).get("enum")
        if len(messages) > 2:  # a repair: the same choices as the answer it repairs
            return MALFORMED if role in self._failing else self._next(role, str(messages[1]["content"]), offered)
        if name.startswith("Ratification"):
            return json.dumps({"reply": self._ratification(role)})
        if name.startswith("Memory"):
            return json.dumps(self._memory("gates" in body.get("properties", {})))
        return self._next(role, str(messages[-1]["content"]), offered)

    def _next(self, role: str, observation: str, offered: Sequence[str] | None = None) -> str:
        """A decision step (or a closing step) gets the policy's decision or a wait, never one of
        its moves; any other step its next move."""
        policy = self.scenario.policy(role)
        if deciding(observation, offered):
            shown = open_requests(observation)
            forced = offered is not None and "wait" not in offered  # the closing pass: decide now
            if not shown or policy.decider == "ignore" or (policy.decider == "late" and not forced):
                return _step("wait")
            verdict, which = ("approve", "oldest") if policy.decider == "late" else policy.decider.split("-")
            pick = {"oldest": shown[0], "newest": shown[-1]}.get(which) or random.Random(
                f"{self.scenario.seed}:{role}:{len(self.calls)}").choice(shown)
            return _step("approve" if verdict == "approve" else "reject", f"audit: {verdict}", pick)
        k = self._turn.get(role, 0)
        self._turn[role] = k + 1
        self._failing.discard(role)
        kind, _, index = policy.move(k, role).partition(":")
        i = int(index or 0)
        if kind in ("fail", "slip"):  # slip: the repair answers with the next move
            if kind == "fail":
                self._failing.add(role)
            return MALFORMED
        if kind == "code":
            return _step("execute_code", CODE[i % len(CODE)])
        if kind == "msg":
            return _step("send_message", MESSAGES[i % len(MESSAGES)], "all")
        if kind == "dm":  # to one teammate only: what the others may not see
            line = TEAM_LINE.search(observation)
            mates = [pid for pid in MEMBER.findall(line[2] if line else "") if pid != role]
            return _step("send_message", MESSAGES[i % len(MESSAGES)], mates[i % len(mates)] if mates else "all")
        if kind == "edit":
            return _step("edit_result", EDITS[i % len(EDITS)])
        if kind == "update":  # where the memory does not live, the same move is a failed step (its repair fails)
            if offered is not None and "propose_memory_update" not in offered:
                self._failing.add(role)
            return _step("propose_memory_update", f"audit: a new plan from {role}\nReason: audit", "plan")
        return _step(kind, f"audit: {kind}" if kind == "finish" else "")

    def _ratification(self, role: str) -> dict[str, str]:
        answer = self.scenario.ratification(role)
        return {"decision": "accept"} if answer == "accept" else {"decision": "amend",
                                                                  "amendment": f"audit: {role} amends the plan"}

    def _memory(self, with_gates: bool) -> dict[str, Any]:
        slots: dict[str, Any] = {slot: f"audit: the team's {slot}"
                                 for slot in ("expertise", "responsibility", "plan", "evidence_standards")}
        if with_gates:
            slots["gates"] = [{"action": action, "signatory": who, "scope": "all", "note": ""}
                              for action, who in gate_table(self.scenario.gates)]
        return slots


def deciding(observation: str, offered: Sequence[str] | None) -> bool:
    """Whether the step asks for decisions only (a decision step, a closing step): its schema's
    actions, or without a schema its prompt's "Valid actions" list."""
    if offered is None:
        listed = _VALID.search(observation)
        offered = [line[2:].split(":")[0] for line in listed.group(1).splitlines() if line.startswith("- ")] \
            if listed else []
    return bool(set(offered) & {"approve", "reject"}) and set(offered) <= {"approve", "reject", "wait"}


def schema_of(params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The name and JSON schema a request asked for ("", {} when it sent none)."""
    fmt = params.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return str(fmt["json_schema"].get("name", "")), dict(fmt["json_schema"].get("schema", {}))
    if isinstance(fmt, type):
        return fmt.__name__, fmt.model_json_schema()  # type: ignore[attr-defined]
    return "", {}


class InMemoryWorkspace:
    """A notebook without a kernel, for the bulk of the search (see the module docstring)."""

    isolation = IsolationReport(level="audit-in-memory", network_isolated=True, data_read_only=True,
                                env_allowlisted=True)

    def __init__(self, data_files: Sequence[Path], limits: Limits) -> None:
        self.chat, self.editor, self.limits = Chat(), Editor(), limits
        self.cells: list[CellResult] = []
        self.data_files = tuple(Path(p).name for p in data_files)

    @classmethod
    async def open(cls, data_files: Sequence[Path], *, limits: Limits = Limits(), **_: Any) -> InMemoryWorkspace:
        return cls(data_files, limits)

    async def execute(self, code: str, *, author: str) -> CellResult:
        failed = "raise " in code
        cell = CellResult(index=len(self.cells), author=author, code=code, status="error" if failed else "ok",
                          output="" if failed else f"ran: {code}", error="Exception: raised" if failed else None,
                          images=(), truncated=False, restarted=False, duration_s=0.01, time=time.time())
        self.cells.append(cell)
        return cell

    def snapshot(self) -> WorkspaceSnapshot:
        return WorkspaceSnapshot(isolation=self.isolation, limits=self.limits, data_files=self.data_files,
                                 cells=tuple(self.cells), messages=tuple(self.chat.messages),
                                 editor_versions=tuple(self.editor.versions), events=(), files=())

    async def close(self) -> None:
        return None


@contextmanager
def _in_memory(enabled: bool) -> Iterator[None]:
    """`InMemoryWorkspace` in the place of the engine's `Workspace` while a run is played."""
    real = session_run.Workspace
    if enabled:
        session_run.Workspace = InMemoryWorkspace  # type: ignore[misc, assignment]
    try:
        yield
    finally:
        session_run.Workspace = real  # type: ignore[misc]


class IssueOrderGateway(Gateway):
    """The engine's `Gateway`, numbering each request as the session issues it (see the module
    docstring): the number travels with the request's context (litellm copies it into the
    thread it hops to), so the double files the request in issue order, whenever it arrives."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._issued = itertools.count()

    async def _request(self, *args: Any, **kwargs: Any) -> Any:
        _ISSUED.set(next(self._issued))  # this request's task only: its own context
        return await super()._request(*args, **kwargs)


@dataclass(frozen=True)
class Run:
    """One variant's run of one scenario: the spec played, its events, its requests as sent, its result."""

    spec: SessionSpec
    events: tuple[Event, ...]
    calls: tuple[dict[str, Any], ...]
    result: SessionResult

    @property
    def variant(self) -> str:
        return self.spec.variant.name

    def calls_by_event(self) -> list[tuple[Event | None, dict[str, Any]]]:
        """Each request in `calls` with the event that carried it (a seat's calls and its events'
        `llm_calls` matched in order), None for a request no event carries."""
        owners: dict[str, list[Event]] = {}
        for e in self.events:
            owners.setdefault(e.participant, []).extend(e for _ in e.llm_calls)
        used: dict[str, int] = {}
        out: list[tuple[Event | None, dict[str, Any]]] = []
        for call in self.calls:
            k = used[call["role"]] = used.get(call["role"], -1) + 1
            mine = owners.get(call["role"], [])
            out.append((mine[k] if k < len(mine) else None, call))
        return out


def scenario_spec(spec: SessionSpec, scenario: Scenario, wire: bool = False) -> SessionSpec:
    """`spec` (an experiment's, for one variant) with the double as every role's model and the
    scenario's task, seed, AI budget and profile; everything else as the experiment has it.
    With `wire` (and every seat a model role of its own, `wire.over_http`) the double is reached
    over HTTP, as a real model is (`wire.RecordingServer`)."""
    http = wire and over_http(spec)
    base = RecordingServer.shared().base if http else None

    def model(role: str) -> dict[str, Any]:
        if not http:
            return {"model": f"{PROVIDER}/{role}"}
        return {"model": f"openai/{MODEL_PREFIX}{role}", "api_base": base,
                "extra": {**spec.model_for(role).extra, "api_key": "audit"}}
    models = {role: spec.model_for(role).model_copy(update=model(role))
              for role in ("default", *(pid for pid in spec.variant.team if pid in PERSONA_IDS))}
    settings = SessionSettings(**{**spec.settings.model_dump(), "action_budget": scenario.budget,
                                  "context_window": PROFILES[scenario.profile]})
    return SessionSpec(task_id=scenario.task_id, variant=spec.variant, seed=scenario.seed, models=models,
                       settings=settings)


def play(spec: SessionSpec, task: Task, scenario: Scenario, workdir_root: Path | None = None,
         fork: ReplayHook | None = None) -> Run:
    """Run `spec` (already `scenario_spec`'d) on `task` with the scenario's policies; with `fork`,
    as a fork's continuation (`removal`: a removal against its control)."""
    double = PolicyDouble(scenario)
    register_provider(PROVIDER, double)
    budget = Budget(max_tokens=scenario.cost_cap) if scenario.cost_cap else None
    wired = {m.model: "json_schema" for m in spec.models.values() if m.model.startswith("openai/")}
    gateway = IssueOrderGateway(budget=budget, retry=RetryPolicy(max_attempts=1, base_delay_s=0.0, max_delay_s=0.0),
                                modes=cast(dict[str, OutputMode], wired))
    sink = ListSink()
    try:
        with _in_memory(not scenario.real), RecordingServer.shared().serving(double) if wired else nullcontext():
            result = run_sync(lambda: run_session(spec, task, gateway=gateway, sink=sink,
                                                     workdir_root=workdir_root, fork=fork))
    finally:
        gateway.close()
    return Run(spec, tuple(sink.events), tuple(double.calls), result)
