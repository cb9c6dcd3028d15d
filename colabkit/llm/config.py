"""Which model a role talks to, as a value that can be stored, compared and hashed.

Every participant and judge carries its own `ModelConfig`; the study's reproducibility rests
on knowing exactly which model string and sampling settings produced each answer, so the
config is frozen, serialisable (`model_dump`) and has a stable identity (sha256 of its
canonical JSON) that the response cache and the result store key on.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from colabkit.hashing import sha256_hex

DEFAULT_MODEL = "local/smollm2-135m"
# Sampling defaults for local (llama.cpp) models, written into `extra` so they are part of the
# config's identity and the response cache key. Without a repetition penalty SmolLM2-135M
# loops ("2023-10-01T18:51:48.852-166.900-23.11" over and over) until the schema's length
# bound closes each string: on one memory build, 1,539 completion tokens instead of 406, at a
# token per digit (benchmarks/README.md, "Embedded model speed").
LOCAL_SAMPLING: dict[str, Any] = {"repeat_penalty": 1.15}


class ModelConfig(BaseModel):
    """A litellm model string plus the sampling settings sent with every call.

    `model` is any litellm model string: `local/smollm2-135m` (embedded, offline, free),
    `local/<path to a .gguf>`, `deepseek/deepseek-chat`, `openai/gpt-4o`, ... Keys come from
    the provider's usual environment variables; `api_base` points at a local server.
    `max_tokens=None` lets the gateway size the budget from the schema's string bounds for
    structured calls (and a provider default for free text). `extra` holds further litellm
    keyword arguments (e.g. `{"top_p": 0.9}`) and is part of the identity; a `local/...` model
    gets `LOCAL_SAMPLING` there unless it sets those keys itself.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = DEFAULT_MODEL
    temperature: float = 0.7
    max_tokens: int | None = Field(default=None, gt=0)
    seed: int | None = 0
    api_base: str | None = None
    timeout: float = Field(default=120.0, gt=0)
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _local_sampling(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        model = data.get("model", DEFAULT_MODEL)
        if isinstance(model, str) and model.startswith("local/"):
            data = {**data, "extra": {**LOCAL_SAMPLING, **(data.get("extra") or {})}}
        return data

    def identity(self) -> str:
        """Stable sha256 hex of the canonical JSON of every field."""
        return sha256_hex(self.model_dump(mode="json"))

    def output_identity(self) -> str:
        """Identity of what determines the answer: every field but the timeout.

        The response cache keys on this, so raising a timeout for a resumed batch does not
        throw away answers already paid for.
        """
        return sha256_hex(self.model_dump(mode="json", exclude={"timeout"}))

    def __hash__(self) -> int:
        return hash(self.identity())

    @property
    def provider(self) -> str:
        """The part of the model string before the first '/', or '' when there is none."""
        head, sep, _ = self.model.partition("/")
        return head if sep else ""
