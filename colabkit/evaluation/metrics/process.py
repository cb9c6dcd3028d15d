"""The task-phase facts the process metrics share, read off a stored trajectory.

Every process metric (initiative, work, profile alignment, workflow coverage, hypothesis
support, gated events) is computed in three steps: pick the *items* it needs from the
session's events and snapshot (pure functions here and in each metric's module), ask the
judge about each item (the metric's scorer, through `ask_each`), then turn the labels into
numbers (each metric's pure arithmetic function, exported). Keeping the arithmetic apart
from the judge lets it be checked by hand on constructed trajectories.

Conventions shared by every metric here:
- Only the task phase counts: the memory-build phase is preparation, not collaboration on
  the task (paper-metrics notes, sections 2 and 6).
- A label that the judge could not give is `None`. Any `None` among the labels a value
  needs makes the value `None` (a missing score) and adds a flag; it never becomes 0 or 1.
- Flags are short strings `"<metric>:<reason>"`, so a table's `flags` column can be split
  and grouped without parsing prose.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from colabkit.evaluation.judge import JudgePrompt, Verdict
from colabkit.evaluation.scorer import SessionContext
from colabkit.session.events import Event
from colabkit.team import AI_ID
from colabkit.workspace import CellResult, WorkspaceSnapshot

L = TypeVar("L")
T = TypeVar("T", bound=BaseModel)
# Judge questions in flight at once per scorer: fast with a remote judge, polite to its limits.
CONCURRENT_QUESTIONS = 4
# Clip long payloads shown to a judge: enough to judge a step, bounded for small contexts.
JUDGE_TEXT_CHARS = 1200


class ChatTurn(BaseModel):
    """One task-phase chat message that took effect, as the process metrics see it."""

    model_config = ConfigDict(frozen=True)

    item_id: str
    seq: int
    sender: str
    text: str


def task_events(events: Iterable[Event]) -> list[Event]:
    """The events of the task phase, in log order."""
    return sorted((e for e in events if e.phase == "task"), key=lambda e: e.seq)


def humans_of(team: Sequence[str]) -> tuple[str, ...]:
    """The simulated humans of a team: every member but the AI agent."""
    return tuple(p for p in team if p != AI_ID)


COMMON_KINDS = ("step", "effect")
"""What a member did that a Default twin has too (`Event.kind`, the one rule): its own steps and
approved actions taking effect; machinery (decisions, the build, the closing pass's steps) and
the system's events are never a turn of the conversation nor work."""


def event_item(event: Event) -> str:
    """A stable item id for a judged event (the event's number in its session's log)."""
    return f"event-{event.seq}"


def chat_turns(events: Iterable[Event]) -> list[ChatTurn]:
    """Task-phase messages that were sent (an approved gated message counts when it is sent).

    A held (pending) message, a rejected one and a failed step never reached the chat, so
    they are not turns of the conversation.
    """
    return [
        ChatTurn(item_id=event_item(e), seq=e.seq, sender=e.participant, text=str(e.args.get("text", "")))
        for e in task_events(events)
        if e.action == "send_message" and e.status == "ok" and e.kind in COMMON_KINDS
    ]


def workspace_actions(events: Iterable[Event]) -> list[Event]:
    """Task-phase actions that changed the workspace and took effect.

    That is a cell that ran to the end without an error, or an editor update. A gated action
    appears here once: its application event, which the engine logs as the proposer's after
    the approval (the `pending` request and the decision are other events). A cell that
    raised, timed out or killed the kernel did not do what it was written to do and does
    not count; nor do failed steps, held or rejected requests, messages, waits and finish.
    """
    return [
        e for e in task_events(events)
        if e.kind in COMMON_KINDS and e.status == "ok" and e.action in ("execute_code", "edit_result")
    ]


def successful_cells(snapshot: WorkspaceSnapshot) -> list[CellResult]:
    """The cells that ran without an error, in execution order: the session's evidence.

    Every cell in the snapshot ran before the submission (the editor text at the session's
    end is the submission, and nothing runs after the end), so no cut-off is needed.
    """
    return [c for c in snapshot.cells if c.status == "ok"]


def clip(text: str, limit: int = JUDGE_TEXT_CHARS) -> str:
    """`text` cut to `limit` characters, marked when cut."""
    return text if len(text) <= limit else text[: limit - 15] + " ...[clipped]"


def render_cell(cell: CellResult, limit: int = JUDGE_TEXT_CHARS) -> str:
    """A cell as a judge reads it: its number, author, code and output."""
    return f"[cell {cell.index} by {cell.author}]\n{clip(cell.code, limit // 2)}\n--- output ---\n" \
           f"{clip(cell.output, limit // 2)}"


def missing(labels: Mapping[str, L | None], items: Iterable[str]) -> list[str]:
    """The items among `items` that have no label (the judge failed or was not asked)."""
    return [item for item in items if labels.get(item) is None]


def missing_flag(metric: str, absent: Sequence[str]) -> str:
    """The flag for a value left missing because `absent` items have no judge label."""
    return f"{metric}:judge_missing({len(absent)})"


async def ask_each(ctx: SessionContext, prompt: JudgePrompt, fields: Mapping[str, Mapping[str, Any]],
                   schema: type[T]) -> dict[str, Verdict[T]]:
    """Ask `prompt` once per item (item id -> its fields); every item gets a verdict back.

    Fields equal across all the items (a session's cells, its persona cards) are rendered
    first, so the questions share them as a prompt prefix (`JudgePrompt.render`).
    """
    gate = asyncio.Semaphore(CONCURRENT_QUESTIONS)
    shared = shared_fields(list(fields.values()))

    async def one(item_fields: Mapping[str, Any]) -> Verdict[T]:
        async with gate:
            return await ctx.verdict(prompt, item_fields, schema, shared=shared)

    answers = await asyncio.gather(*(one(f) for f in fields.values()))
    return dict(zip(fields, answers))


def shared_fields(items: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The field names whose values are the same in every one of two or more items."""
    if len(items) < 2:
        return frozenset()
    first = items[0]
    return frozenset(key for key in first if all(key in item and item[key] == first[key] for item in items[1:]))


def values_of(verdicts: Mapping[str, Verdict[T]]) -> dict[str, T | None]:
    """The parsed answers by item (None where the judge failed)."""
    return {item: v.value for item, v in verdicts.items()}


def verdict_flags(*groups: Mapping[str, Verdict[Any]]) -> list[str]:
    """One flag per distinct judge failure, `<prompt id>: <why>` with how many items it hit."""
    seen: dict[str, int] = {}
    for verdicts in groups:
        for v in verdicts.values():
            if v.flag is not None:
                key = f"{v.prompt_id}: {v.flag}"
                seen[key] = seen.get(key, 0) + 1
    return [f"{key} (x{n})" if n > 1 else key for key, n in seen.items()]


def transient(flags: Iterable[str]) -> bool:
    """Whether a flag records a judge that gave no answer (a rerun may get one)."""
    return any("judge_error" in f for f in flags)
