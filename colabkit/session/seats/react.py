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
from typing import Any, Generic, Literal, TypeVar, get_args

from pydantic import BaseModel, Field, create_model

from colabkit.llm import CallRecord, Gateway, ModelConfig, StructuredOutputError
from colabkit.session.actions import MEMORY_UPDATE, StepSchema

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


STEP_ACTIONS: tuple[str, ...] = get_args(StepSchema.model_fields["action"].annotation)
"""The actions of the base `StepSchema` (every action but the Dynamic variants' memory update)."""


TO_USES = ((("send_message",), "recipients for send_message"), (("approve", "reject"), "request id for approve/reject"),
           ((MEMORY_UPDATE,), "memory slot for propose_memory_update"))
"""What `to` carries, by the actions that use it: its description names only the actions offered."""


@cache
def step_schema(thought_chars: int, content_chars: int, actions: tuple[str, ...] = STEP_ACTIONS,
                targets: tuple[str, ...] | None = None) -> type[StepSchema]:
    """`StepSchema` with the profile's answer lengths, offering exactly `actions` (its own
    class when nothing differs).

    The bounds go into the JSON schema (hence the decoding grammar and the gateway's
    `max_tokens`), so a model with a large window may write code cells of several thousand
    characters while the embedded model keeps short, always-finishable answers. `actions`
    is what the participant may do at this step (`actions.valid_actions`): the action enum
    lists nothing else, so approve/reject appear only with a request open for it (and
    `propose_memory_update` only where the memory lives). `targets`, when given, is the enum
    `to` must take (`actions.step_targets`: the open request ids when decisions are all the
    member may do; else `to` is the common free-text field it is in Default).
    """
    fields = StepSchema.model_fields
    if (thought_chars, content_chars, actions, targets) == (fields["thought"].metadata[0].max_length,
                                                            fields["content"].metadata[0].max_length,
                                                            STEP_ACTIONS, None):
        return StepSchema
    extra: dict[str, Any] = {"action": (Literal[actions or ("wait",)],
                                        Field(description=fields["action"].description))}
    uses = [use for kinds, use in TO_USES if set(kinds) & set(actions)]
    to_text = ", ".join(uses) if uses else "not used: leave empty"
    extra["to"] = ((Literal[targets or ("",)], Field(default="", description=to_text)) if targets is not None
                   else (str, Field(default="", max_length=fields["to"].metadata[0].max_length, description=to_text)))
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
