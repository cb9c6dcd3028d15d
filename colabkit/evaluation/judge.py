"""The judge: one model, asked versioned questions, whose every answer is kept and may fail.

Scores are only as honest as the judge behind them, so this module fixes what every judged
metric relies on: temperature 0 (`judge_config`), structured output validated by the
gateway (one repair request, then failure), every call cached like any model call (a
rescoring replays instead of paying twice), and **fail closed**: an error or an answer that
does not validate gives a `Verdict` whose `value` is None and whose `flag` says why. No
caller ever turns such a verdict into a score (Co-Gym's evaluator scores a nonsense
hypothesis 1.0 when its judge fails; DiscoveryBench's can score -1 or +1 on two parse
failures).

A `JudgePrompt` is a question with an id and a version; its text is rendered here from
named fields (as JSON, so quotes in a hypothesis cannot break the payload), and the version
travels with each verdict and into each scorer's identity. Repeat k asks with sample index k
(seed + k), so repeats are different, reproducible draws.

The embedded 135M model can answer (the machinery runs offline) but cannot judge: it is
accepted only with a loud warning, and everything it scores is marked `judge_grade="plumbing"`.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Collection, Mapping
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from colabkit.errors import one_line
from colabkit.hashing import sha256_hex
from colabkit.llm import (
    DEFAULT_MODEL,
    BudgetExceeded,
    CallRecord,
    Gateway,
    ModelConfig,
    ProviderError,
    ProviderUnavailable,
    StructuredOutputError,
)
from colabkit.llm.schema import AnswerBounds

T = TypeVar("T", bound=BaseModel)
JudgeGrade = Literal["capable", "plumbing"]
_log = logging.getLogger(__name__)
PLUMBING_WARNING = (
    "JUDGE WARNING: the embedded 135M model is judging. It exercises the scoring machinery "
    "but its verdicts are not measurements; every score it gives is marked "
    "judge_grade='plumbing'. Pass a capable judge (--judge MODEL) for study results.")


class JudgePrompt(BaseModel):
    """One versioned judge question: bump `version` whenever `instructions` change meaning."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    version: int = Field(ge=1)
    instructions: str
    """What to judge, the definitions, the answer's meaning: the system message, or with
    `context_fields` the part of the user message between the context and the item."""
    preamble: str = ""
    """With `context_fields`: the system message, the same for a family of questions."""
    context_fields: tuple[str, ...] = ()
    """Fields that are the same for every question of a family about one task (its query
    and datasets): rendered before the instructions, so all the family's questions about it
    share the preamble and them as one prompt prefix (see `render`)."""

    def render(self, fields: Mapping[str, Any], shared: Collection[str] = ()) -> list[dict[str, str]]:
        """The chat messages for this question about `fields` (sent as JSON).

        `shared` names the fields that are the same for every question of one batch (one
        session's cells, its persona cards): they come first, so those questions share the
        instructions and them as one prompt prefix, which the embedded model's KV context
        and a provider's prefix cache serve instead of prefilling or billing it again. The
        other fields follow; each part, and every nested object, in key order. Without
        `shared` the payload is in key order throughout.

        A prompt with `context_fields` goes further: its system message is the family's
        `preamble`, and the user message holds those fields first, then the instructions,
        then the rest, so different questions of the family (HMS's decomposition, context,
        variable and relation questions) share the context as well: the embedded judge
        prefills only each question's instructions and item.
        """
        if not self.context_fields:
            return [{"role": "system", "content": self.instructions},
                    {"role": "user", "content": _payload(fields, shared)}]
        context = {key: fields[key] for key in self.context_fields if key in fields}
        item = {key: value for key, value in fields.items() if key not in self.context_fields}
        return [{"role": "system", "content": self.preamble},
                {"role": "user", "content": f"CONTEXT:\n{_payload(context, ())}\n\nQUESTION:\n{self.instructions}"
                                            f"\n\nINPUT:\n{_payload(item, shared)}"}]

    @property
    def ref(self) -> str:
        return f"{self.id}@{self.version}"


def _payload(fields: Mapping[str, Any], shared: Collection[str]) -> str:
    """`fields` as indented JSON: the `shared` ones first, each part in key order."""
    keys = sorted(fields, key=lambda key: (key not in shared, key))
    return json.dumps({key: _key_ordered(fields[key]) for key in keys}, ensure_ascii=False, indent=1, default=str)


def _key_ordered(value: Any) -> Any:
    """`value` with every nested dict in key order (what `json.dumps(sort_keys=True)` does)."""
    if isinstance(value, Mapping):
        return {key: _key_ordered(value[key]) for key in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [_key_ordered(item) for item in value]
    return value


def prompt_version(prompts: tuple[JudgePrompt, ...]) -> str:
    """A scorer's prompt version: the sorted `id@version` list of the prompts it asks."""
    return ",".join(sorted(p.ref for p in prompts)) or "none"


def judge_config(model: str = DEFAULT_MODEL, **settings: Any) -> ModelConfig:
    """The judge's model config: always temperature 0 (deterministic where the provider is)."""
    return ModelConfig(model=model, **{**settings, "temperature": 0.0})


def grade_of(config: ModelConfig) -> JudgeGrade:
    """'plumbing' for the embedded 135M model, 'capable' for any model chosen on purpose."""
    return "plumbing" if config.model == DEFAULT_MODEL else "capable"


# The judge's profile: how much it may write, by grade. A capable judge gets each answer
# schema's own bounds. The embedded model's answers are plumbing whatever they say, and it
# writes free-text fields to their bound (a decomposition ran to ~400 tokens at ~33 tokens/s)
# and lists to their length (each sub-hypothesis or claim is more questions): 80 characters
# keep each field (reasons, explanations, claims, sub-hypotheses) a sentence, 3 items keep
# every list's follow-up questions few. Only what is generated is bounded: the questions are
# the same.
JUDGE_PROFILES: dict[JudgeGrade, AnswerBounds | None] = {
    "capable": None, "plumbing": AnswerBounds(text_chars=80, list_items=3)}


def answer_bounds(config: ModelConfig) -> AnswerBounds | None:
    """The bounds on what `config`'s judge may write (None: each schema's own), by its grade;
    what a stored score's identity records (`storage.scorer_id`)."""
    return JUDGE_PROFILES[grade_of(config)]


class Verdict(BaseModel, Generic[T]):
    """One answer of the judge to one question: the parsed value, or None and a flag."""

    prompt_id: str
    prompt_version: int
    model: str
    repeat: int
    value: T | None
    flag: str | None = None
    """Why `value` is None: 'judge_error: ...' (no answer) or 'judge_invalid: ...'."""
    raw: str | None = None
    """The model's text as received (None when no answer came back)."""
    calls: list[CallRecord] = []


class Judge:
    """Asks `config`'s model versioned questions through `gateway`; never raises on a bad answer.

    `BudgetExceeded` and `ProviderError` still propagate: a spent budget or a provider that
    refuses every request (bad key, unknown model) means stop the scoring job, not flag every
    remaining question of every session one by one (the unscored rest is redone on rerun).
    """

    def __init__(self, gateway: Gateway, config: ModelConfig | None = None):
        self.gateway = gateway
        self.config = config if config is not None else judge_config()
        if self.config.temperature != 0:
            self.config = self.config.model_copy(update={"temperature": 0.0})
        self.grade: JudgeGrade = grade_of(self.config)
        if self.grade == "plumbing":
            warnings.warn(PLUMBING_WARNING, stacklevel=2)
            _log.warning(PLUMBING_WARNING)

    def describe(self) -> dict[str, Any]:
        return {"config": self.config.model_dump(mode="json"), "grade": self.grade,
                "answer_bounds": bounds._asdict() if (bounds := JUDGE_PROFILES[self.grade]) else None}

    async def verdict(self, prompt: JudgePrompt, fields: Mapping[str, Any], schema: type[T], *,
                      repeat: int = 0, shared: Collection[str] = ()) -> Verdict[T]:
        """Ask `prompt` about `fields`, expecting `schema`; failures come back flagged.

        `shared`: the fields this question shares with the others of its batch (see
        `JudgePrompt.render`).
        """
        messages = prompt.render(fields, shared)
        base = {"prompt_id": prompt.id, "prompt_version": prompt.version,
                "model": self.config.model, "repeat": repeat}
        try:
            value, raw, calls = await self.gateway.structured_with_text(
                self.config, messages, schema, caller=f"judge:{prompt.id}", sample=repeat,
                bounds=JUDGE_PROFILES[self.grade])
        except ProviderUnavailable as exc:  # no answer came back: missing and flagged, redone on rerun
            return Verdict[schema](**base, value=None, flag=f"judge_error: {one_line(exc, 300)}",  # type: ignore[valid-type]
                                   calls=exc.records)
        except (BudgetExceeded, ProviderError):
            raise
        except StructuredOutputError as exc:
            kind = "judge_invalid" if exc.raw is not None else "judge_error"
            return Verdict[schema](**base, value=None, flag=f"{kind}: {one_line(exc, 300)}",  # type: ignore[valid-type]
                                   raw=exc.raw, calls=exc.records)
        except Exception as exc:  # the gateway promises not to raise others; fail closed anyway
            return Verdict[schema](**base, value=None,  # type: ignore[valid-type]
                                   flag=f"judge_error: {type(exc).__name__}: {one_line(exc, 300)}")
        return Verdict[schema](**base, value=value, raw=raw, calls=calls)  # type: ignore[valid-type]


def judge_id(config: ModelConfig | None) -> str | None:
    """Short hash naming a judge configuration in file names (None: no judge)."""
    return None if config is None else sha256_hex(config.output_identity())[:12]
