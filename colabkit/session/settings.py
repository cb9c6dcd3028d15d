"""What a session is: the task, the team variant, the seed, the models and the knobs.

A `SessionSpec` is the unit of reproducibility: its identity (sha256 of its canonical JSON)
names the session's folder in the store, and the session id is derived from it, so the same
spec always produces the same ids and, given the same model answers, the same event log.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from colabkit.errors import ColabkitError
from colabkit.hashing import sha256_hex
from colabkit.llm import ModelConfig
from colabkit.team import PERSONA_IDS, VariantConfig
from colabkit.workspace import Limits


class SessionSettings(BaseModel):
    """How long a session may run and how its kernel is limited.

    `action_budget` counts task-phase steps other than `wait` (failed steps included, so a
    participant stuck on malformed output cannot spin forever); `idle_rounds` is K in
    "everyone waited or had nothing new for K consecutive rounds".
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    action_budget: int = Field(default=30, ge=1)
    idle_rounds: int = Field(default=3, ge=1)
    max_rounds: int = Field(default=60, ge=1)
    limits: Limits = Limits()

    def identity(self) -> str:
        return sha256_hex(self.model_dump(mode="json"))


class SessionSpec(BaseModel):
    """One task x one team variant x one seed, with the model each role talks to.

    `models` keys are participant roles ("ai", "D", "R") or "default"; a role without an
    entry uses `models["default"]`, else the embedded default `ModelConfig()`. A judge is not
    a role here: scoring is configured in the evaluation layer, so changing the judge never
    changes a session's identity (and never reruns a session).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str = Field(min_length=1)
    variant: VariantConfig
    seed: int
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    settings: SessionSettings = SessionSettings()

    @field_validator("models")
    @classmethod
    def _session_roles_only(cls, models: dict[str, ModelConfig]) -> dict[str, ModelConfig]:
        roles = ("default", *PERSONA_IDS)
        for role in models:
            if role not in roles:
                where = " (judges are set in the evaluation layer, not the session spec)" if role == "judge" else ""
                raise ColabkitError(f"model role {role!r} is not a session role{where}; valid: {', '.join(roles)}")
        return models

    def identity(self) -> str:
        """sha256 hex of the canonical JSON: the run's identity (folder = first 16 hex)."""
        return sha256_hex(self.model_dump(mode="json"))

    @property
    def session_id(self) -> str:
        return self.identity()[:16]

    @property
    def participants(self) -> tuple[str, ...]:
        """The AI agent first, then the variant's simulated humans, in config order."""
        return ("ai", *self.variant.humans)

    def model_for(self, role: str) -> ModelConfig:
        """The model config `role` uses, after the defaulting rule above."""
        return self.models.get(role) or self.models.get("default") or ModelConfig()
