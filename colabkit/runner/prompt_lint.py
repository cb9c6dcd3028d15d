"""`colabkit prompts lint`: every kind of prompt a member is given, checked against the rules
the engine enforces.

The prompts are not rebuilt here: a session is set up with the engine's own code
(`engine._Session`), its build phase runs through the structures' own `build`, and every
question is captured where the engine puts it to a model (`Recorder` stands in for the
gateway and answers with fixed placeholders). A scripted history (`_script`: cells, messages,
an edited result, and every request and memory update a structure holds, each addressed to
its signatory) then gives each seat of each variant its task step and, with a request open for
it, its decision step and its closing step. So what is checked is what a model would be sent.

The checks (`CHECKS`), each one `Finding` per defect:

- `actions`: the task prompt's "Valid actions" list is exactly the answer schema's action enum;
- `ids`: every request id (`req-N`, `upd-N`), cell and message a prompt names exists, and
  every id the schema's `to` may take is open for that member;
- `budgets`: every stated number of steps (left now, the AI agent's left, a member's task
  budget, the build's budgets and slot size) equals the scheduler's and the profile's;
- `internal-names`: no name of the suite's code (a function, class or constant, e.g.
  `memory_from_consolidation`) in a prompt or a schema description;
- `sections`: every section the profile sizes (task, briefing, memory, editor) fits its budget.
"""

from __future__ import annotations

import ast
import asyncio
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from colabkit.llm import ModelConfig
from colabkit.llm.schema import bounded_schema
from colabkit.session.actions import ACTION_HELP, MEMORY_UPDATE, InvalidAction, StepSchema, to_action
from colabkit.session.engine import _Session
from colabkit.session.events import EventLog, ListSink
from colabkit.session.prompting.preview import _EmptyWorkspace, placeholder_memory
from colabkit.session.seats.react import step_schema
from colabkit.session.settings import SessionSettings, SessionSpec
from colabkit.tasks import Task
from colabkit.team import GATEABLE_ACTIONS, UPDATE_SLOTS, MemorySlots, Ratification
from colabkit.team.memory import SLOTS
from colabkit.workspace import CellResult

KINDS = ("propose", "consolidate", "ratify", "amend", "step", "decision", "closing")
"""Every kind of prompt (a decision step is the same under both `gate_latency` rules)."""
CLIP_SLACK = 24
"""Room a clipped section may take past its budget: the marker saying how much was cut."""
_LONG = "The hoards hold more axes in some centuries than in others; " * 20
_REQUEST_ID = re.compile(r"\b(?:req|upd)-\d+\b")


@dataclass(frozen=True)
class Rendered:
    """One prompt as the engine would send it, with the engine's own figures to check it against."""

    where: str
    kind: str
    seat: str
    messages: tuple[dict[str, str], ...]
    schema: dict[str, Any]
    known_ids: frozenset[str] = frozenset()
    open_ids: frozenset[str] = frozenset()
    cells: int = 0
    chat: int = 0
    budgets: dict[str, int] = field(default_factory=dict)
    section_budgets: dict[str, int | None] = field(default_factory=dict)

    @property
    def user(self) -> str:
        return self.messages[-1]["content"]

    def sections(self) -> dict[str, str]:
        """The user text's sections by title (the heading up to its first parenthesis), bodies only."""
        found: dict[str, str] = {}
        for block in re.split(r"\n\n(?=# )", "\n\n" + self.user):
            if block.startswith("# "):
                head, _, body = block[2:].partition("\n")
                found[head.split(" (")[0].strip()] = body
        return found

    def enum(self, name: str) -> tuple[str, ...] | None:
        values = self.schema.get("properties", {}).get(name, {}).get("enum")
        return tuple(values) if values is not None else None


@dataclass(frozen=True)
class Finding:
    check: str
    where: str
    detail: str

    def line(self) -> str:
        return f"{self.check}: {self.where}: {self.detail}"


class Recorder:
    """Stands in for the gateway: records every structured question and answers it with a fixed
    placeholder (a memory, an amendment, a wait), so the build runs every stage. No cap: its
    `budget` is None, as on a gateway without one."""

    budget = None

    def __init__(self, variant: Any) -> None:
        self.variant = variant
        self.calls: list[tuple[str, list[dict[str, str]], type[BaseModel]]] = []

    async def structured(self, config: ModelConfig, messages: list[dict[str, str]], schema: type[Any], *,
                         caller: str, sample: int = 0) -> tuple[Any, list[Any]]:
        self.calls.append((caller, messages, schema))
        if issubclass(schema, MemorySlots):
            return placeholder_memory(self.variant, schema), []
        if issubclass(schema, Ratification):
            return schema.model_validate({"reply": {"decision": "amend", "amendment": "one change"}}), []
        return schema.model_construct(thought="", action="wait", content="", to=""), []  # asked, never applied


def _cells(session: _Session, code: Sequence[tuple[str, str]]) -> None:
    ws = session.ws
    for author, source in code:
        ws.cells.append(CellResult(index=len(ws.cells), author=author, code=source, status="ok", output=_LONG,
                                   error=None, images=(), truncated=False, restarted=False, duration_s=0.1))
        session.emit(author, "execute_code", "ok", args={"code": source}, cell_index=len(ws.cells) - 1)


def _script(session: _Session) -> None:
    """A history every seat's prompts are rendered on: cells, messages, an edited result, then
    every action a structure holds, proposed by each member for each signatory, and a memory
    update by each member where the memory lives (each through the engine's own `act`)."""
    session.round = 2
    data = session.task.datasets[0].path if session.task.datasets else "data.csv"
    _cells(session, [("ai", f"import pandas as pd\ndf = pd.read_csv('data/{Path(data).name}')\nprint(df.head())"),
                     (session.team[-1], "print(df.describe())")])
    for pid in session.team:
        if len(session.team) > 1:
            session.ws.chat.post(pid, f"{pid}: {_LONG}")
    session.ws.editor.write("ai", _LONG)
    proposals = {"execute_code": "df = df.dropna()", "edit_result": "Axes peak in one century.",
                 "send_message": "Shall we check the axes?", "finish": "done"}
    for proposer in session.team:
        for action in GATEABLE_ACTIONS:
            step = StepSchema(thought="", action=action, content=proposals[action], to="all")
            typed = _typed(session, proposer, step)
            if typed is not None and session.structure.hold(session, typed, proposer) is not None:
                asyncio.run(session.act(proposer, step))
        if MEMORY_UPDATE in session.structure.actions:
            update = step_schema(session.profile.thought_chars, session.profile.content_chars, (MEMORY_UPDATE,))
            asyncio.run(session.act(proposer, update.model_validate(
                {"thought": "", "action": MEMORY_UPDATE, "content": "Check the axes first. Reason: lint", "to": "plan"})))


def _typed(session: _Session, pid: str, step: StepSchema) -> Any:
    try:
        return to_action(step, pid, session.team, added=session.structure.actions)
    except InvalidAction:
        return None


def _known_ids(session: _Session) -> frozenset[str]:
    living = session.board.living
    return frozenset([*session.requests.requests, *(living.updates if living is not None else ())])


def render_all(spec: SessionSpec, task: Task) -> list[Rendered]:
    """Every kind of prompt for every seat of `spec`'s variant (see the module docstring)."""
    recorder = Recorder(spec.variant)
    session = _Session(spec, task, _EmptyWorkspace(), gateway=recorder,  # type: ignore[arg-type]
                       log=EventLog(spec.session_id, ListSink()), seats={})
    session.brief()
    asyncio.run(session.structure.build(session))
    session.start_task()
    name = spec.variant.name
    settings, profile = spec.settings, spec.profile
    slot = {"slot_chars": profile.slot_chars}
    members = {p: settings.budget_for(session.sides[p]) for p in session.team}
    out = [Rendered(f"{name}/{caller}/{kind}", kind, caller, tuple(messages), bounded_schema(schema),
                    budgets={**slot, **{f"budget:{p}": b for p, b in members.items()}},
                    section_budgets={"Your private briefing": profile.briefing_chars, "Task": profile.query_chars})
           for (caller, messages, schema), kind in zip(recorder.calls, _build_kinds(recorder.calls))]
    _script(session)
    for pid in session.team:
        out.append(_task_prompt(session, recorder, pid, "step"))
        if session.has_requests(pid):
            session.deciding = True
            out.append(_task_prompt(session, recorder, pid, "decision"))
            session.deciding = False
            session.closing = True
            out.append(_task_prompt(session, recorder, pid, "closing"))
            session.closing = False
    return out


def _build_kinds(calls: Sequence[tuple[str, list[dict[str, str]], type[BaseModel]]]) -> Iterator[str]:
    """The build stage of each recorded build call, from the request it ends with."""
    for _, messages, _ in calls:
        request = messages[-1]["content"].rsplit("# Your part now\n", 1)[-1]
        yield ("propose" if request.startswith("Propose") else "consolidate" if request.startswith("Merge")
               else "ratify" if request.startswith("Reply with decision") else "amend")


def _task_prompt(session: _Session, recorder: Recorder, pid: str, kind: str) -> Rendered:
    observation = session.observe(pid)
    before = len(recorder.calls)
    asyncio.run(session.ask(pid, observation))
    _, messages, schema = recorder.calls[before]
    profile, sched = session.profile, session.sched
    budgets = {"left": sched.actions_left(pid), f"budget:{pid}": session.spec.settings.budget_for(session.sides[pid])}
    if pid != "ai" and sched.ai_actions_left() is not None:
        budgets["ai_left"] = sched.ai_actions_left() or 0
    return Rendered(
        f"{session.variant.name}/{pid}/{kind}", kind, pid, tuple(messages), bounded_schema(schema),
        known_ids=_known_ids(session), open_ids=frozenset(session.open_ids(pid)), cells=len(session.ws.cells),
        chat=len(session.ws.chat.messages), budgets=budgets,
        section_budgets={"Task": profile.query_chars, "Your private briefing": profile.briefing_chars,
                         "Shared Group Memory": profile.memory_chars, "Result editor": profile.editor_chars})


# -- the checks --------------------------------------------------------------------------------------------------


def check_actions(prompt: Rendered) -> list[str]:
    """The "Valid actions" list is the schema's action enum, and the reverse."""
    enum = prompt.enum("action")
    if enum is None:
        return []
    body = prompt.sections().get("Valid actions")
    if body is None:
        return ["no 'Valid actions' section"]
    listed = [line[2:].split(":", 1)[0] for line in body.splitlines() if line.startswith("- ")]
    problems = [f"{a} is in the answer schema but not in the Valid actions list" for a in enum if a not in listed]
    return problems + [f"{a} is in the Valid actions list but not in the answer schema" for a in listed
                       if a not in enum]


def check_ids(prompt: Rendered) -> list[str]:
    """Every id a prompt names exists; every id `to` may take is open for the member."""
    text = "\n".join(m["content"] for m in prompt.messages)
    problems = [f"{i} is named but no such request exists" for i in sorted(set(_REQUEST_ID.findall(text)))
                if i not in prompt.known_ids]
    problems += [f"cell {n} is named but the notebook has {prompt.cells} cells"
                 for n in sorted({int(n) for n in re.findall(r"\bcells? (\d+)\b", text)}) if n >= prompt.cells]
    problems += [f"message #{n} is named but the chat has {prompt.chat} messages"
                 for n in sorted({int(n) for n in re.findall(r"\[#(\d+) ", text)}) if n >= prompt.chat]
    targets = prompt.enum("to") or ()
    return problems + [f"{i} is on offer in `to` but not open for {prompt.seat}" for i in targets
                       if _REQUEST_ID.fullmatch(i) and i not in prompt.open_ids]


_STATED: tuple[tuple[str, str], ...] = (
    (r"# Now \(round \d+, (\d+) actions left for", "left"),
    (r"; (\d+) for the AI agent \(ai\)\)", "ai_left"),
    (r"\nYour steps: (\d+) for the task", "budget:{seat}"),
    (r"\nSteps shared by [^:]+: (\d+) for the task", "budget:{seat}"),
    (r"four slots of at most (\d+) characters", "slot_chars"),
)


def check_budgets(prompt: Rendered) -> list[str]:
    """Every number of steps or characters a prompt states equals the engine's."""
    problems = []
    for pattern, key in _STATED:
        expected = prompt.budgets.get(key.format(seat=prompt.seat))
        for stated in re.findall(pattern, prompt.user):
            if expected is None or int(stated) != expected:
                problems.append(f"states {stated} for {key.format(seat=prompt.seat)}; the engine's is {expected}")
    for who, stated in _build_budgets(prompt.user):
        expected = prompt.budgets.get(f"budget:{who}")
        if expected != stated:
            problems.append(f"states {stated} task steps for {who}; the engine's is {expected}")
    return problems


def _build_budgets(text: str) -> Iterator[tuple[str, int]]:
    line = re.search(r"During the task: ([^\n]*)", text)
    for part in (line.group(1).split("; ") if line else ()):
        found = re.match(r"([\w, ]+?) (\d+) steps", part)
        if found:
            for who in re.split(r", | and ", found.group(1)):
                yield who, int(found.group(2))


@cache
def internal_names() -> frozenset[str]:
    """The suite's own identifiers a reader could not know: module-level functions, classes and
    constants and methods of `colabkit`, written with an underscore or in CamelCase."""
    names: set[str] = set()
    for path in Path(__file__).resolve().parents[1].rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    vocabulary = {*ACTION_HELP, *SLOTS, *UPDATE_SLOTS, "data_changing", *StepSchema.model_fields}
    return frozenset(n.strip("_") for n in names if n.strip("_") not in vocabulary
                     and ("_" in n.strip("_") or re.fullmatch(r"[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+", n)))


def _descriptions(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("description"), str):
            yield node["description"]
        for value in node.values():
            yield from _descriptions(value)
    elif isinstance(node, list):
        for value in node:
            yield from _descriptions(value)


def check_internal_names(prompt: Rendered) -> list[str]:
    """No name of the suite's code in a schema description or the prompt's text."""
    known = internal_names()
    places = [("schema description", d) for d in _descriptions(prompt.schema)]
    places += [("prompt", m["content"]) for m in prompt.messages]
    return [f"{where} names the internal {word!r}" for where, text in places
            for word in sorted(set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))) if word.strip("_") in known]


def check_sections(prompt: Rendered) -> list[str]:
    """Every section the profile sizes fits its budget (a clipped one may add its marker)."""
    sections = prompt.sections()
    problems = []
    for title, budget in prompt.section_budgets.items():
        body = sections.get(title)
        if body is None or budget is None:
            continue
        size = len(body) - (len(body.split("\n", 1)[0]) + 1 if title == "Shared Group Memory" else 0)
        if size > budget + CLIP_SLACK:
            problems.append(f"section {title!r} is {size} characters; its budget is {budget}")
    return problems


CHECKS: dict[str, Callable[[Rendered], list[str]]] = {
    "actions": check_actions, "ids": check_ids, "budgets": check_budgets, "internal-names": check_internal_names,
    "sections": check_sections}


def lint(prompts: Sequence[Rendered]) -> list[Finding]:
    return [Finding(name, p.where, detail) for p in prompts for name, check in CHECKS.items() for detail in check(p)]


@dataclass(frozen=True)
class LintReport:
    prompts: int
    kinds: tuple[str, ...]
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not self.findings

    def render(self) -> str:
        head = (f"{self.prompts} prompts ({', '.join(self.kinds)}): "
                + ("every check passed" if self.ok else f"{len(self.findings)} findings"))
        return "\n".join([head, *(f"- {f.line()}" for f in self.findings)])


def full_settings(settings: SessionSettings) -> SessionSettings:
    """`settings` with a window large enough for the full profile (the timeline layout)."""
    return settings.model_copy(update={"context_window": 128_000})


def lint_experiment(exp: Any, *, task_id: str | None = None) -> LintReport:
    """Every kind of prompt of every variant and seat of `exp` (each settings arm, each simulator,
    the experiment's own profile and the full one), on one task (default: its first), linted."""
    from colabkit.runner.build import build_spec

    suite = exp.load_suite()
    task = suite.get(task_id) if task_id is not None else suite.tasks[0]
    prompts: list[Rendered] = []
    for arm, settings in exp.arm_settings().items():
        for simulator, models in exp.simulator_models().items():
            for layout in (settings, full_settings(settings)):
                for name in exp.variants:
                    spec = build_spec(task.id, exp.variant_config(name), exp.seeds[0], models=models, settings=layout)
                    label = "/".join(part for part in (arm, simulator, spec.profile.name) if part)
                    prompts += [replace(p, where=f"{label}/{p.where}") for p in render_all(spec, task)]
    kinds = tuple(k for k in KINDS if any(p.kind == k for p in prompts))
    return LintReport(len(prompts), kinds, tuple(lint(prompts)))
