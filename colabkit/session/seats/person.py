"""A person in a seat: the seat's terms (in the spec) and what each person step records.

A seat played by a person is named in the `SessionSpec` like any other participant's model,
by a `ModelConfig` whose model string is `person/<participant id>` (`person_model`). So the
spec's identity (the session id), the stored record's `models` and every downstream table
say which seats were persons, and a spec with a person seat can never be mistaken for a
simulated one. The seat's terms (per-step timeout, fallback, the persona's model) ride in
the config's `extra`, hashed with it: a different timeout is a different condition.

`PersonStep` is what an event played by a person carries on top of the usual fields: the
pseudonymous participant id, the hash of the observation acted on (the exact text the
persona's model would have read) and of what was rendered for the person, wall-clock and
monotonic stamps (shown, first interaction, submitted), invalid attempts (shown to the
person and recorded, never sent) and, on a timeout, which fallback took the step.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from colabkit.errors import ColabkitError
from colabkit.llm import ModelConfig

PERSON_PROVIDER = "person"
Fallback = Literal["wait", "model"]


class SeatTerms(BaseModel):
    """How a person holds a seat.

    `timeout_s` None (the default) is turn-gated without limit: the others wait while the
    person deliberates, so latency is not a confound. With a timeout, a step not submitted in
    time is taken by the `fallback`: "wait", or "model" (the persona's own model,
    `persona_model`, takes that one step). `persona_model` also sizes the session's
    observation profile, so the seat sees what the simulated persona would have seen.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    participant_id: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_.-]+$")
    timeout_s: float | None = Field(default=None, gt=0)
    fallback: Fallback = "wait"
    persona_model: ModelConfig = ModelConfig()


def person_model(terms: SeatTerms) -> ModelConfig:
    """The `ModelConfig` that names a person seat in a spec."""
    return ModelConfig(model=f"{PERSON_PROVIDER}/{terms.participant_id}", temperature=0.0, seed=None,
                       extra={"seat": terms.model_dump(mode="json")})


def is_person(config: ModelConfig) -> bool:
    return config.provider == PERSON_PROVIDER


def seat_terms(config: ModelConfig) -> SeatTerms:
    """The terms a person seat's config carries; a clear error for a hand-written `person/...`."""
    raw: Any = config.extra.get("seat")
    if not is_person(config) or not isinstance(raw, dict):
        raise ColabkitError(f"model {config.model!r} is not a person seat made by person_model()")
    return SeatTerms.model_validate(raw)


class Stamp(BaseModel):
    """One moment, on the wall clock (comparable across machines) and the monotonic clock
    (durations that a clock change cannot distort)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    wall: float
    monotonic: float


class InvalidAttempt(BaseModel):
    """A submission the form refused: what was entered, why, and when."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    at: Stamp
    fields: dict[str, Any]
    error: str


class PersonStep(BaseModel):
    """What a step taken by (or for) a person adds to its event."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor_kind: Literal["person"] = "person"
    participant_id: str
    stage: Literal["step", "propose", "ratify", "consolidate", "amend"]
    observation_hash: str  # sha256 of the prompt the persona's model would have read
    rendered_hash: str | None  # sha256 of the HTML shown to the person
    shown: Stamp
    first_interaction: Stamp | None = None
    submitted: Stamp | None = None
    invalid_attempts: tuple[InvalidAttempt, ...] = ()
    timed_out: bool = False
    fallback: Fallback | None = None  # set when the step timed out
