"""What a session is: the task, the team variant, the seed, the models and the knobs.

A `SessionSpec` is the unit of reproducibility: its identity (sha256 of its canonical JSON)
names the session's folder in the store, and the session id is derived from it, so the same
spec always produces the same ids and, given the same model answers, the same event log.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from colabkit.errors import ColabkitError
from colabkit.hashing import sha256_hex
from colabkit.llm import ModelConfig
from colabkit.session.prompting.profile import ObservationProfile, resolve_profile
from colabkit.team import PERSONA_IDS, VariantConfig
from colabkit.workspace import Limits

ENGINE_RULES: Literal[3] = 3
"""The version of the engine's session rules a spec runs under, hashed into its identity: 2 is
issue 33's (the AI's clock, the closing pass before every end, schemas listing only what is
valid now); 3 is issue 42's (noninterference by construction: decisions are machinery, off
budget and off the task's spend; an approved action waits only on the requests it depends on;
nothing proposed after a finish that took effect lands; the common `to` field is never
narrowed; bookkeeping lines apart from the common part of a prompt; the build phase on its own
budget). Sessions recorded under earlier rules keep their identities and are never reused,
resumed or rerun as sessions of these."""
Side = Literal["ai", "human"]  # a persona's role is its side
Termination = Literal["ai_budget", "either_side", "all_sides"]
GateLatency = Literal["in_turn", "at_once"]
"""When a signatory is asked to decide a request addressed to it (`SessionSettings.gate_latency`)."""
MemoryProposals = Literal["sequential", "independent"]
"""How the memory build's proposals are written (see `SessionSettings.memory_proposals`)."""
"""When spent budgets end a session (see `SessionSettings.termination`)."""
END_RULES: dict[str, str] = {
    "ai_budget": "The session ends when the AI agent (ai) has taken all its steps (every turn of the AI agent is "
                 "one of its steps, a wait included) or when its finish takes effect. Each member's steps are its "
                 "own; a member whose steps are used up may still approve or reject requests addressed to it. "
                 "Before the session ends, every open request is decided by its signatory.",
    "either_side": "The session ends as soon as the AI agent (ai) or the simulated humans (together) have used "
                   "all their steps, when someone's finish takes effect, or when nobody has acted for {idle} rounds.",
    "all_sides": "The session ends when every side has used all its steps, when someone's finish takes effect, "
                 "or when nobody has acted for {idle} rounds; a side whose steps are used up may still approve or "
                 "reject requests addressed to it.",
}
"""The end rule as every participant reads it (`SessionSettings.end_rule`)."""


class BuildBudget(BaseModel):
    """The build phase's own cap (tokens, dollars), apart from the task's (issue 42).

    A structure's build (the memory's propose, consolidate, ratify, amend) is machinery: it is
    charged here, never to the session's task cap, so a variant with a build gives the task
    the same budget as its Default twin. Its spend is recorded (`Totals.build_tokens`,
    `build_paid_cost`); reaching this cap ends the session `llm_budget` in the build phase.
    None for a field: no cap of the build's own (an experiment's cap still binds)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_tokens: int | None = Field(default=None, ge=0)
    max_cost: float | None = Field(default=None, ge=0)


class SessionSettings(BaseModel):
    """How long a session may run, how its kernel is limited, and how large its prompts are.

    Budgets are counted apart, as in Co-Gym, whose environment counts the agent's and the
    users' task-phase steps separately against one `max_steps` (30 in its simulated
    experiments): `action_budget` is the AI agent's; `human_action_budget` (None: the same
    number) is each simulated human's own cap under "ai_budget", the humans' pooled budget
    under the two Co-Gym rules. A step is any task-phase step other than `wait` (under
    "ai_budget" every turn of the AI agent, a wait included), failed steps included (so a
    participant stuck on malformed output cannot spin forever), and an
    approve/reject is its signatory's step, never its proposer's. `team_action_budget`, when
    set, is a further cap on all steps together (the old single team-wide budget).
    `termination` says when the session ends. "ai_budget" (the default) makes the AI agent's
    budget the session's one clock: the session ends at the AI's last step or when its finish
    takes effect, whatever the humans did (they cannot finish, and neither idleness nor
    `max_rounds` ends it), so every variant gives the AI the same opportunity (with two
    humans pooled, Co-Gym's rule let a DR team's humans end the session after half the AI's
    steps). "either_side" is the substrate's rule: Co-Gym's environment
    (`collaborative_gym/nodes/task_env.py`) ends the session as soon as the agent's steps or
    the users' (pooled) steps reach `max_steps`. "all_sides" goes on until every side has
    spent its budget. Under every rule a spent member still decides requests addressed to
    it. The rules live in `colabkit.session.scheduler`; `experiments/sensitivity.yaml` runs
    all three. Changing the default changed every session's identity (this model is hashed
    into it), so sessions stored under another rule are never reused for this one.
    `idle_rounds` is K in "everyone waited or had nothing new for K consecutive rounds" and
    `max_rounds` a cap on rounds, both under the Co-Gym rules only.
    `context_window` overrides the models' window (tokens) the observation profile is
    derived from. `build_budget` is the build phase's own cap: a build is never charged to
    the task's cap (the session's spending cap, set by the runner).
    `memory_proposals` is how the Shared Group Memory's proposals are written:
    "sequential" (the default: each member sees the proposals made before it, in a seed-drawn
    order) or "independent" (nobody sees another's proposal; the consolidation sees them all);
    docs/fidelity.md gives the reason for the default. `gate_latency` is when a signatory
    is first asked to decide a request addressed to it, always in a decision step that is
    machinery (none of its steps, off every budget; it may wait and be asked again at its next
    turn): "in_turn" (the default) at its next turn of the round order, before its own step;
    "at_once" right after the proposal. Both are in the
    identity when they are not the default.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    action_budget: int = Field(default=30, ge=1)
    human_action_budget: int | None = Field(default=None, ge=1)
    team_action_budget: int | None = Field(default=None, ge=1)
    termination: Termination = "ai_budget"
    idle_rounds: int = Field(default=3, ge=1)
    max_rounds: int = Field(default=60, ge=1)
    context_window: int | None = Field(default=None, ge=1)
    limits: Limits = Limits()
    build_budget: BuildBudget | None = Field(default=None, exclude_if=lambda budget: budget is None)
    """The build phase's own declared cap (`BuildBudget`); None: none of its own. Left out of the
    dump (and so of every identity) while None, so sessions without it keep their identities."""
    # Left out of the identity at its default, so sessions stored before it existed keep theirs.
    memory_proposals: MemoryProposals = Field(default="sequential", exclude_if=lambda value: value == "sequential")
    gate_latency: GateLatency = Field(default="in_turn", exclude_if=lambda value: value == "in_turn")

    def budget_for(self, side: Side) -> int:
        """The task-phase steps `side` ("ai" or "human") may take: under "ai_budget" each human's
        own cap, under the Co-Gym rules the humans' pooled budget."""
        if side == "ai":
            return self.action_budget
        return self.action_budget if self.human_action_budget is None else self.human_action_budget

    @property
    def per_member(self) -> bool:
        """Whether each simulated human has a budget of its own (else the humans share one)."""
        return self.termination == "ai_budget"

    def end_rule(self) -> str:
        """The end rule as a participant reads it (the same text in every variant)."""
        return END_RULES[self.termination].format(idle=self.idle_rounds)

    def identity(self) -> str:
        return sha256_hex(self.model_dump(mode="json"))


class SessionSpec(BaseModel):
    """One task x one team variant x one seed, with the model each role talks to.

    `models` keys are participant roles ("ai", "D", "R") or "default"; a role without an
    entry uses `models["default"]`, else the embedded default `ModelConfig()`. A judge is not
    a role here: scoring is configured in the evaluation layer, so changing the judge never
    changes a session's identity (and never reruns a session). `profile` is filled in from
    the models (see `colabkit.session.prompting.profile`) unless given, so it is part of the identity
    and of the record.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str = Field(min_length=1)
    variant: VariantConfig
    seed: int
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    settings: SessionSettings = SessionSettings()
    engine_rules: Literal[1, 2, 3] = ENGINE_RULES
    """The engine's session rules the spec runs under (`ENGINE_RULES`); 1 only in records stored
    before they changed (`colabkit.store.records`), which this engine refuses to run."""
    # Derived after `models` and `settings` are validated (a field that failed is absent from `data`).
    profile: ObservationProfile = Field(
        default_factory=lambda data: _derive_profile(data.get("models", {}), data.get("settings", SessionSettings())))

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
        """The AI agent first (none in a solo variant), then the variant's simulated humans, in config order."""
        return self.variant.team

    def model_for(self, role: str) -> ModelConfig:
        """The model config `role` uses, after the defaulting rule above."""
        return _model_for(self.models, role)


def _model_for(models: dict[str, ModelConfig], role: str) -> ModelConfig:
    return models.get(role) or models.get("default") or ModelConfig()


def _derive_profile(models: dict[str, ModelConfig], settings: SessionSettings) -> ObservationProfile:
    """The run's profile from every role's model, not only the variant's team (same for all variants)."""
    roles = (set(PERSONA_IDS) | set(models)) - {"default", "judge"}
    return resolve_profile([_model_for(models, role) for role in sorted(roles)], settings.context_window)
