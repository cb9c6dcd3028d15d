"""Who answers for a participant: its model, or a person at a desk (`PersonSeat`).

Every answer a participant gives (a ReAct step, a memory proposal, a ratification) is a
`Question` put to its seat: the persona prompt and observation as messages, the structured
schema the answer must fit and, for task steps, the typed `Observation` the messages were
rendered from. A model seat asks the gateway (`react.ask`); a `PersonSeat` shows the same
question to a person through a `Desk` (the UI, a layer above) and awaits the answer the way
the engine awaits a model's, so the scheduler, the budgets and the log are the same.

Replay: a person's answer is stored in the gateway's response cache under the key a model's
answer to the same question would have (`cache_key` of the seat's config, the exact
messages, the schema and the sample), plus a companion entry holding its `PersonStep`.
Asked the same question again, the seat answers from the cache without a desk, so a
session with a person replays exactly and offline. A question with no stored answer and no
desk is refused (`NoPerson`): a batch never waits for a person.

Timeouts (`SeatTerms.timeout_s`, none by default): the desk's form is withdrawn and the
fallback takes the step: a wait, or the persona's own model (whose call is cached like any
model call). The companion entry says which, so a replay takes the same fallback.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel

from colabkit.errors import ColabkitError
from colabkit.hashing import sha256_hex
from colabkit.llm import Gateway, ModelConfig
from colabkit.llm.cache import CachedAnswer, cache_key
from colabkit.llm.schema import bounded_schema, parse_as
from colabkit.session.actions import StepSchema
from colabkit.session.prompting.observation import Observation
from colabkit.session.seats.person import InvalidAttempt, PersonStep, SeatTerms, Stamp, is_person, seat_terms
from colabkit.session.seats.react import Answer, ask

T = TypeVar("T", bound=BaseModel)
Stage = Literal["step", "propose", "ratify", "consolidate", "amend"]


def stamp() -> Stamp:
    return Stamp(wall=time.time(), monotonic=time.monotonic())


@dataclass(frozen=True)
class Question(Generic[T]):
    """One answer a participant owes: what its model would be sent, and what it may answer."""

    participant: str
    stage: Stage
    config: ModelConfig
    messages: list[dict[str, str]]
    schema: type[T]
    sample: int
    team: tuple[str, ...]
    observation: Observation | None = None  # task steps; the build shows its messages' user text


@dataclass(frozen=True)
class SeatAnswer(Generic[T]):
    answer: Answer[T]
    person: PersonStep | None = None


class NoPerson(ColabkitError):
    """A person seat was asked a question nobody is there to answer."""


@dataclass
class Presentation(Generic[T]):
    """A question on a desk: the future its form resolves, and what the form observed."""

    future: asyncio.Future[T]
    rendered_hash: str | None
    first_interaction: Stamp | None = None
    invalid_attempts: list[InvalidAttempt] = field(default_factory=list)


class Desk(Protocol):
    """Where a person sees a question and answers it (the seat layer's widgets, a test's stand-in).

    `present` renders the question and returns at once; the form resolves `future` with a
    valid answer (invalid input is shown and added to `invalid_attempts`, never sent).
    `withdraw` takes a form away unanswered (a timeout).
    """

    def present(self, question: Question[Any]) -> Presentation[Any]: ...

    def withdraw(self, presentation: Presentation[Any], reason: str) -> None: ...


class Seat(Protocol):
    async def answer(self, question: Question[T], gateway: Gateway) -> SeatAnswer[T]: ...


def _keys(question: Question[Any]) -> tuple[str, str]:
    """The answer's cache key (as a model's, with the person mode) and its companion's."""
    fmt = {"schema": bounded_schema(question.schema), "mode": "person"}
    key = cache_key(question.config, question.messages, fmt, question.sample)
    return key, sha256_hex({"person_step_of": key})


class PersonSeat:
    """A seat played by a person at `desk` (None: replay only, from the stored answers)."""

    def __init__(self, terms: SeatTerms, desk: Desk | None = None) -> None:
        self.terms, self.desk = terms, desk

    async def answer(self, question: Question[T], gateway: Gateway) -> SeatAnswer[T]:
        key, companion = _keys(question)
        stored, record = gateway.cache.get(key), gateway.cache.get(companion)
        if record is not None:  # answered before: replay it, the same way
            step = PersonStep.model_validate_json(record.text)
            if step.timed_out:
                return await self._fallback(question, gateway, step)
            if stored is not None:
                return SeatAnswer(Answer(parse_as(question.schema, stored.text), ()), step)
        if self.desk is None:
            raise NoPerson(f"seat {question.participant} is a person ({question.config.model}) and nobody is at it "
                           f"for this {question.stage}: no recorded answer to replay (a batch never waits for a person)")
        return await self._ask_person(question, gateway, key, companion)

    async def _ask_person(self, question: Question[T], gateway: Gateway, key: str, companion: str) -> SeatAnswer[T]:
        assert self.desk is not None
        shown = stamp()
        presentation = self.desk.present(question)
        try:
            value = await asyncio.wait_for(asyncio.shield(presentation.future), self.terms.timeout_s)
        except TimeoutError:
            self.desk.withdraw(presentation, f"no answer within {self.terms.timeout_s:g} s: "
                                             f"the fallback ({self.terms.fallback}) took this step")
            step = self._record(question, presentation, shown, None)
            gateway.cache.put(companion, _text(step.model_dump_json()))
            return await self._fallback(question, gateway, step)
        step = self._record(question, presentation, shown, stamp())
        gateway.cache.put(key, _text(value.model_dump_json()))
        gateway.cache.put(companion, _text(step.model_dump_json()))
        return SeatAnswer(Answer(value, ()), step)

    def _record(self, question: Question[Any], presentation: Presentation[Any], shown: Stamp,
                submitted: Stamp | None) -> PersonStep:
        return PersonStep(
            participant_id=self.terms.participant_id, stage=question.stage,
            observation_hash=sha256_hex(question.messages), rendered_hash=presentation.rendered_hash,
            shown=shown, first_interaction=presentation.first_interaction, submitted=submitted,
            invalid_attempts=tuple(presentation.invalid_attempts), timed_out=submitted is None,
            fallback=None if submitted is not None else self.terms.fallback)

    async def _fallback(self, question: Question[T], gateway: Gateway, step: PersonStep) -> SeatAnswer[T]:
        """The timed-out step, taken by the persona's own model or by a wait (logged as such)."""
        if step.fallback == "model":
            answer = await ask(gateway, self.terms.persona_model, question.messages, question.schema,
                               caller=question.participant, sample=question.sample)
            return SeatAnswer(answer, step)
        if question.stage == "step":
            wait = question.schema.model_validate({"thought": "", "action": "wait"})
            assert isinstance(wait, StepSchema)
            return SeatAnswer(Answer(wait, ()), step)
        # A memory-build answer has no "wait": a missed proposal or ratification is missing, a
        # failed step, as a model's malformed answer is.
        return SeatAnswer(Answer(None, (), f"no answer within {self.terms.timeout_s:g} s"), step)


def _text(text: str) -> CachedAnswer:
    return CachedAnswer(text=text, prompt_tokens=0, completion_tokens=0, cost=0.0, finish_reason="stop")


async def answer(seats: Mapping[str, Seat], gateway: Gateway, question: Question[T]) -> SeatAnswer[T]:
    """The participant's answer from its seat: a person's if one holds it, else its model's."""
    seat = seats.get(question.participant)
    if seat is not None:
        return await seat.answer(question, gateway)
    return SeatAnswer(await ask(gateway, question.config, question.messages, question.schema,
                                caller=question.participant, sample=question.sample))


def check_seats(models: Mapping[str, ModelConfig], team: tuple[str, ...], seats: Mapping[str, Seat]) -> None:
    """Refuse a spec whose person seat nobody holds, before anything runs (one clear line)."""
    for pid in team:
        config = models[pid]
        if is_person(config) and pid not in seats:
            seat_terms(config)  # a hand-written person/... config is its own error
            raise NoPerson(f"seat {pid} is a person ({config.model}): a batch never waits for a person; "
                           "run it with notebooks/take_a_seat.ipynb (colabkit seat), or replay it with "
                           "colabkit.seat.replay_session")
        if pid in seats and not is_person(config):
            raise ColabkitError(f"seat {pid} has a person attached but its model is {config.model!r}: "
                                "name the seat with person_model() so the spec records it")
