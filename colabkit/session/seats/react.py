"""One model call for one participant, with failures turned into data.

A ReAct step is: the participant's persona prompt (system), its rendered observation and
scratchpad (user), and a structured answer (`StepSchema`: a private thought and one action)
from the gateway. The gateway raises `StructuredOutputError` when no valid answer came
after its retries; that is a *failed step*, recorded with the call records behind it, and
the session goes on. `BudgetExceeded` and `ProviderError` are not caught here: they end the
session.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, Field, create_model

from colabkit.llm import CallRecord, Gateway, ModelConfig, StructuredOutputError
from colabkit.session.actions import ActionType, StepSchema

T = TypeVar("T", bound=BaseModel)

STEP_PROTOCOL = (
    "Each turn you see what is visible to you and reply with one JSON object: "
    '"thought" (your private reasoning, short; teammates never see it), "action" (one valid action), '
    '"content" and "to" (as the action needs). Act like yourself; one action per turn.'
)


@dataclass(frozen=True)
class Answer(Generic[T]):
    """A structured answer, or why there is none, plus the calls it cost."""

    value: T | None
    records: tuple[CallRecord, ...]
    error: str | None = None


def prompt_messages(system: str, user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


async def ask(
    gateway: Gateway,
    config: ModelConfig,
    messages: list[dict[str, str]],
    schema: type[T],
    *,
    caller: str,
    sample: int,
) -> Answer[T]:
    """Call the model for a `schema` answer; a malformed answer becomes `Answer(None, ...)`."""
    try:
        value, records = await gateway.structured(config, messages, schema, caller=caller, sample=sample)
    except StructuredOutputError as exc:
        return Answer(None, tuple(exc.records), f"{type(exc).__name__}: {exc}")
    return Answer(value, tuple(records))


LONE_ACTIONS = ("execute_code", "edit_result", "finish")
"""The single agent's actions: nobody to message, wait for or decide for (`actions.valid_actions`)."""


@cache
def step_schema(thought_chars: int, content_chars: int, memory_updates: bool = False,
                lone: bool = False) -> type[StepSchema]:
    """`StepSchema` with the profile's answer lengths (its own bounds when they are the same).

    The bounds go into the JSON schema (hence the decoding grammar and the gateway's
    `max_tokens`), so a model with a large window may write code cells of several thousand
    characters while the embedded model keeps short, always-finishable answers. With
    `memory_updates` (the Dynamic variants) the action may also be `propose_memory_update`;
    every other variant decodes under the schema without it. A `lone` participant (the single
    agent) gets only `LONE_ACTIONS`, so its schema lists nothing it may not do.
    """
    fields = StepSchema.model_fields
    if (thought_chars, content_chars, memory_updates, lone) == (fields["thought"].metadata[0].max_length,
                                                                fields["content"].metadata[0].max_length, False, False):
        return StepSchema
    extra: dict[str, Any] = {"action": (ActionType, Field(description=fields["action"].description))} \
        if memory_updates else {}
    if lone:
        extra["action"] = (Literal[LONE_ACTIONS], Field(description=fields["action"].description))
    sized: type[StepSchema] = create_model(
        "StepSchema",  # one name whatever the bounds and actions: it is in the repair prompt and the schema's title
        __base__=StepSchema,
        thought=(str, Field(max_length=thought_chars, description=fields["thought"].description)),
        content=(str, Field(default="", max_length=content_chars, description=fields["content"].description)),
        **extra,
    )
    return sized


def step_messages(persona_prompt: str, observation_text: str) -> list[dict[str, str]]:
    """The chat messages of one ReAct step."""
    return prompt_messages(f"{persona_prompt}\n\n{STEP_PROTOCOL}", observation_text)
