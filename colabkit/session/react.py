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
from typing import Generic, TypeVar

from pydantic import BaseModel

from colabkit.llm import CallRecord, Gateway, ModelConfig, StructuredOutputError

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


def step_messages(persona_prompt: str, observation_text: str) -> list[dict[str, str]]:
    """The chat messages of one ReAct step."""
    return prompt_messages(f"{persona_prompt}\n\n{STEP_PROTOCOL}", observation_text)
