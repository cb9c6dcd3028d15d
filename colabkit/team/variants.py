"""Team variants: who is on the team, whether it builds a memory, and where gates come from.

The study's 13 variants form a 2x2 design per team composition plus a baseline: memory
(yes/no) x gating (yes/no), with D, R or both as humans -- Default (neither), Memory-only
(memory, no gates), Preassigned (fixed gates, no memory) and Scaffolded (memory with gates
the team chose itself) -- and `single` (the AI agent alone). Preassigned therefore carries no
memory, so that Scaffolded vs Preassigned contrasts who chose the gates together with the
memory, while Preassigned vs Default isolates gating; a Preassigned variant with memory is one
`VariantConfig` away.

Beyond the study, the Dynamic variants (`dynamic-d`, `dynamic-r`, `dynamic-dr`) are Scaffolded
with `memory_updates`: a living memory the team may amend during the task by a team act
(`colabkit.team.memory_update`, `colabkit.session.structure.memory_updates`). They are registered beside
the study's 13 (`STUDY_VARIANT_NAMES`), so `--variant dynamic-dr` works, while the reference
grid stays the study's.

Beyond the study too, the solo variants (`solo-d`, `solo-r`, issue 47): one simulated human
working alone in the workspace, no AI agent (`ai=False`), holding the session clock the AI
holds when it works alone (the same steps; the session ends at its last step or its finish).
They are what a team is compared with to ask whether it beats its best member alone (strong
synergy, `colabkit.analysis.synergy`). They are found by `variant` but kept out of
`VARIANT_NAMES` (`SOLO_VARIANT_NAMES`), so every grid, audit and plan of the study stays as it was.

A user-defined variant is just another `VariantConfig`: other personas (`personas`, which
also override the shipped ones by id), other gate tables, more humans. The config carries
everything the session needs, so its `identity()` (sha256 of its canonical JSON) names the
experimental condition. The shipped persona prompts are referenced by id only; the session
record must store their versions (`persona(pid).version`) next to the identity. Coordination
structures beyond the study's (`structures`: plugins by name or import path, with options) are
recorded here as `StructureRef`s; the session layer finds and plays them
(`colabkit.session.structure`). A variant without any keeps the identity it had before them.
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from colabkit.errors import ColabkitError
from colabkit.hashing import sha256_hex
from colabkit.team.gates import DEFAULT_PREASSIGNED_GATES, GateTable
from colabkit.team.personas import AI_ID, PERSONA_IDS, Persona, persona

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


# Names the session layer already gives a meaning: the event log's system participant and the
# chat's broadcast recipient. A persona with one of them would be ambiguous in every record.
RESERVED_IDS = frozenset({"system", "all"})


class StructureRef(BaseModel):
    """A coordination structure a variant plays beyond the study's own (a plugin): its name (a
    built-in one's, an entry point's in `colabkit.structures`, or an import path `module:Class`)
    and its options. Resolved and checked by the session layer (`colabkit.session.structure.registry`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)


class VariantConfig(BaseModel):
    """One team condition; validation rejects configs whose parts contradict each other."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    humans: tuple[str, ...] = ()
    memory: bool = False
    gate_source: Literal["none", "self", "preassigned"] = "none"
    preassigned: GateTable | None = None
    personas: tuple[Persona, ...] = Field(default=(), description="custom personas; override shipped ones by id")
    memory_updates: bool = Field(False, description="members may amend the memory during the task (Dynamic)")
    structures: tuple[StructureRef, ...] = Field(default=(), description="plugin structures, played after the "
                                                 "study's (memory, gates, updates) in this order")
    ai: bool = Field(True, description="the AI agent is on the team (False: one human alone, the solo variants)")

    @model_validator(mode="after")
    def _consistent(self) -> VariantConfig:
        where = f"variant {self.name!r}"
        if not _NAME.match(self.name):
            raise ColabkitError(f"variant name {self.name!r} must be letters, digits, '.', '_' or '-'")
        ids = [p.id for p in self.personas]
        if len(set(ids)) != len(ids):
            raise ColabkitError(f"{where}: persona ids repeat: {ids}")
        reserved = sorted(RESERVED_IDS & (set(ids) | set(self.humans)))
        if reserved:
            raise ColabkitError(f"{where}: persona ids {reserved} are reserved (the log's 'system', the chat's 'all')")
        if len(set(self.humans)) != len(self.humans):
            raise ColabkitError(f"{where}: humans repeat: {self.humans}")
        for pid in self.humans:
            if self.persona(pid).role != "human":
                raise ColabkitError(f"{where}: {pid!r} is listed as a human but its persona role is 'ai'")
        if self.persona(AI_ID).role != "ai":
            raise ColabkitError(f"{where}: persona {AI_ID!r} must have role 'ai'")
        if self.name == "single" and self.humans:
            raise ColabkitError(f"{where}: the single-agent variant has no humans, got {self.humans}")
        if self.gate_source == "self" and not self.memory:
            raise ColabkitError(f"{where}: gate_source 'self' needs memory=True (the gates are written in the memory)")
        if (self.gate_source == "preassigned") != (self.preassigned is not None):
            raise ColabkitError(f"{where}: a preassigned gate table goes with gate_source 'preassigned' and only with it")
        absent = sorted({r.signatory for r in self.preassigned.rules} - set(self.team)) if self.preassigned else []
        if absent:
            raise ColabkitError(f"{where}: preassigned gates name {', '.join(absent)}, not on the team "
                                "(GateTable.for_team drops such gates)")
        if self.memory_updates and not (self.memory and self.humans):
            raise ColabkitError(f"{where}: memory_updates needs memory=True and at least one human "
                                "(an update is a team act: every other member approves it)")
        plugins = [ref.name for ref in self.structures]
        if len(set(plugins)) != len(plugins):
            raise ColabkitError(f"{where}: structures repeat: {plugins}")
        if not self.ai and (len(self.humans) != 1 or self.memory or self.gate_source != "none" or self.structures):
            raise ColabkitError(f"{where}: without the AI agent a variant is one human alone, with no structure "
                                "(the solo variants)")
        if self.gate_source != "none" and not self.humans:
            raise ColabkitError(f"{where}: gating needs at least one human (nobody signs their own request)")
        return self

    @model_serializer(mode="wrap")
    def _without_frozen_default(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A frozen memory (`memory_updates` False) is left out of the dump, so the study's 13
        variants keep the identities (and session ids) they had before Dynamic existed; no
        plugin structures (`structures` empty) likewise, for all 16."""
        data: dict[str, Any] = handler(self)
        if not self.memory_updates:
            data.pop("memory_updates", None)
        if not self.structures:  # likewise: a variant without plugins keeps its identity
            data.pop("structures", None)
        if self.ai:  # likewise: every variant with the AI agent keeps its identity
            data.pop("ai", None)
        return data

    @property
    def team(self) -> tuple[str, ...]:
        """Every participant id: the AI agent first (unless a solo variant), then the humans in config order."""
        return (AI_ID, *self.humans) if self.ai else self.humans

    def persona(self, pid: str) -> Persona:
        """The persona for `pid` in this variant: a custom one if given, else the shipped one."""
        for p in self.personas:
            if p.id == pid:
                return p
        if pid not in PERSONA_IDS:
            known = sorted({*PERSONA_IDS, *(p.id for p in self.personas)})
            raise ColabkitError(f"variant {self.name!r}: unknown persona {pid!r}; known: {', '.join(known)}")
        return persona(pid)

    def team_personas(self) -> tuple[Persona, ...]:
        """The personas of `team`, in the same order."""
        return tuple(self.persona(pid) for pid in self.team)

    def identity(self) -> str:
        """Stable sha256 hex of the canonical JSON of this config."""
        return sha256_hex(self)


def _registry() -> dict[str, VariantConfig]:
    compositions = {"d": ("D",), "r": ("R",), "dr": ("D", "R")}
    families = {
        "default": {"memory": False, "gate_source": "none"},
        "scaffolded": {"memory": True, "gate_source": "self"},
        "memory": {"memory": True, "gate_source": "none"},
        "preassigned": {"memory": False, "gate_source": "preassigned"},
        "dynamic": {"memory": True, "gate_source": "self", "memory_updates": True},
    }
    configs = [VariantConfig(name="single")]
    for family, settings in families.items():
        for suffix, humans in compositions.items():
            # The study's table without the rules whose signatory is absent (see DEFAULT_PREASSIGNED_GATES).
            gates = DEFAULT_PREASSIGNED_GATES.for_team((AI_ID, *humans))[0] if family == "preassigned" else None
            configs.append(VariantConfig(name=f"{family}-{suffix}", humans=humans, preassigned=gates, **settings))
    return {c.name: c for c in configs}


VARIANTS: MappingProxyType[str, VariantConfig] = MappingProxyType(_registry())
VARIANT_NAMES: tuple[str, ...] = tuple(VARIANTS)
STUDY_VARIANT_NAMES: tuple[str, ...] = tuple(name for name in VARIANT_NAMES if not name.startswith("dynamic-"))
"""The study's 13 variants (the reference grid's), without the Dynamic extension."""


SOLO_VARIANTS: MappingProxyType[str, VariantConfig] = MappingProxyType(
    {f"solo-{pid.lower()}": VariantConfig(name=f"solo-{pid.lower()}", humans=(pid,), ai=False) for pid in ("D", "R")})
SOLO_VARIANT_NAMES: tuple[str, ...] = tuple(SOLO_VARIANTS)
"""Each persona alone (module docstring): found by `variant`, outside `VARIANT_NAMES`."""


def variant(name: str) -> VariantConfig:
    """The registered variant `name` (case and surrounding spaces ignored), a solo one included."""
    key = name.strip().lower()
    found = VARIANTS.get(key) or SOLO_VARIANTS.get(key)
    if found is None:
        raise ColabkitError(f"unknown variant {name!r}; valid: {', '.join((*VARIANT_NAMES, *SOLO_VARIANT_NAMES))}")
    return found
