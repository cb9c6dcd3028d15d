"""The team layer: personas, hidden-profile briefings, approval gates, Shared Group Memory, variants.

Pure values and pure functions only (no LLM calls, no workspace): the session layer combines
them into running sessions. See each module for the design reasons.
"""

from colabkit.team.briefing import DEFAULT_MAX_CHARS, private_briefing
from colabkit.team.datachange import DATA_CHANGING_RULE, data_changes, names_defined
from colabkit.team.gates import (
    ACTION_TYPES,
    DEFAULT_PREASSIGNED_GATES,
    GATEABLE_ACTIONS,
    GateRule,
    GateScope,
    GateTable,
    is_data_changing,
)
from colabkit.team.memory import (
    BuildStage,
    GateItem,
    MemoryProposal,
    MemoryRecord,
    MemorySlots,
    Ratification,
    build_request,
    build_rules,
    memory_from_consolidation,
    memory_schema,
    ratification_schema,
)
from colabkit.team.memory_update import (
    UPDATE_SLOTS,
    MemoryUpdate,
    MemoryUpdateError,
    apply_update,
    gate_changes,
    parse_update,
)
from colabkit.team.personas import AI_ID, PERSONA_IDS, Persona, persona
from colabkit.team.variants import (
    SOLO_VARIANT_NAMES,
    SOLO_VARIANTS,
    STUDY_VARIANT_NAMES,
    VARIANT_NAMES,
    VARIANTS,
    StructureRef,
    VariantConfig,
    variant,
)

__all__ = [
    "ACTION_TYPES",
    "AI_ID",
    "DATA_CHANGING_RULE",
    "DEFAULT_MAX_CHARS",
    "DEFAULT_PREASSIGNED_GATES",
    "GATEABLE_ACTIONS",
    "PERSONA_IDS",
    "SOLO_VARIANTS",
    "SOLO_VARIANT_NAMES",
    "STUDY_VARIANT_NAMES",
    "UPDATE_SLOTS",
    "VARIANTS",
    "VARIANT_NAMES",
    "BuildStage",
    "GateItem",
    "GateRule",
    "GateScope",
    "GateTable",
    "MemoryProposal",
    "MemoryRecord",
    "MemorySlots",
    "MemoryUpdate",
    "MemoryUpdateError",
    "Persona",
    "Ratification",
    "StructureRef",
    "VariantConfig",
    "apply_update",
    "build_request",
    "build_rules",
    "data_changes",
    "gate_changes",
    "is_data_changing",
    "memory_from_consolidation",
    "memory_schema",
    "names_defined",
    "parse_update",
    "persona",
    "private_briefing",
    "ratification_schema",
    "variant",
]
