"""What a scoring job is, as a value an experiment config can hold: judge, metrics, repeats.

The judge is configured here (and by `colabkit score --judge`), never in a session's spec:
the same sessions are scored again whenever the judge or a prompt changes. The config is
frozen and hashable like every other config, so an experiment can record which scoring
produced its tables.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from colabkit.evaluation.judge import judge_config
from colabkit.evaluation.reliability import SANITY_TASKS
from colabkit.hashing import sha256_hex
from colabkit.llm import ModelConfig


class ScoringConfig(BaseModel):
    """One scoring job's settings; `judge` always runs at temperature 0."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge: ModelConfig = Field(default_factory=judge_config)
    """The judge model (default: the embedded model, plumbing grade only)."""
    metrics: tuple[str, ...] | None = None
    """Metric names to score (None: every registered scorer)."""
    repeats: int = Field(default=1, ge=1)
    """How many times each judge question is asked (different samples)."""
    sanity_tasks: int = Field(default=SANITY_TASKS, ge=1)
    """Tasks the judge's sanity check runs on."""

    @field_validator("judge")
    @classmethod
    def _deterministic(cls, judge: ModelConfig) -> ModelConfig:
        return judge if judge.temperature == 0 else judge.model_copy(update={"temperature": 0.0})

    def identity(self) -> str:
        return sha256_hex(self.model_dump(mode="json"))

    def with_overrides(self, **values: Any) -> ScoringConfig:
        """This config with every non-None value of `values` replacing its field."""
        given = {k: v for k, v in values.items() if v is not None}
        return ScoringConfig.model_validate({**self.model_dump(), **given}) if given else self
