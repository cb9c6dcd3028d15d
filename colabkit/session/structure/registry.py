"""Which structures a variant plays, and where a structure named in a declaration is found.

The study's own structures follow from a variant's fields (`VariantConfig.memory`,
`gate_source`, `memory_updates`; `shipped`), so the 16 registered variants keep their
identities. Beyond them a variant lists plugin structures (`VariantConfig.structures`: a name
and its options), found in this order:

1. the built-in registry (`BUILTIN`): the suite's own, so a checkout that was never installed
   works (the example `evidence-checklist` is one);
2. an entry point of an installed distribution in the group `colabkit.structures`
   (`[project.entry-points."colabkit.structures"] devil = "mylab.devil:DevilsAdvocate"`);
3. an import path `package.module:Class` (importable from the current environment; a file
   path is not taken, as it would enter the variant's identity).

Each must be a `Structure` subclass whose `name` is the name it was found by (an import
path's class keeps its own `name`); the study's structures cannot be named there (their
fields say them). Every refusal is one `ColabkitError` line naming the variant and the
structure.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from colabkit.errors import ColabkitError, one_line
from colabkit.session.structure.base import ENGINE_SECTIONS, Composition, Structure
from colabkit.session.structure.checklist import EvidenceChecklist
from colabkit.session.structure.shipped import MemoryUpdates, PreassignedGates, SelfGates, SharedMemory
from colabkit.team import StructureRef, VariantConfig

ENTRY_POINT_GROUP = "colabkit.structures"
STUDY: dict[str, type[Structure]] = {"default": Structure, "memory": SharedMemory, "self-gates": SelfGates,
                                     "preassigned-gates": PreassignedGates, "memory-updates": MemoryUpdates}
"""The study's structures, said by a variant's fields (never named in `structures`)."""
BUILTIN: dict[str, type[Structure]] = {EvidenceChecklist.name: EvidenceChecklist}
"""Plugin structures the suite ships (also declared as entry points in pyproject.toml)."""


def study_structures(variant: VariantConfig) -> list[Structure]:
    """The study's structures a variant's fields say, in the order they compose."""
    out: list[Structure] = []
    if variant.memory:
        out.append(SharedMemory(variant))
    if variant.gate_source == "self":
        out.append(SelfGates(variant))
    elif variant.gate_source == "preassigned":
        out.append(PreassignedGates(variant))
    if variant.memory_updates:
        out.append(MemoryUpdates(variant))
    return out


def structure_class(name: str, where: str = "") -> type[Structure]:
    """The class a declaration's structure name means (module docstring), checked."""
    where = f"{where}structure {name!r}"
    if name in STUDY:
        raise ColabkitError(f"{where}: a study structure, said by the variant's fields (or `structure:` "
                            "default, memory, scaffolded, preassigned, dynamic), not listed as a plugin")
    if name in BUILTIN:
        return BUILTIN[name]
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            found = getattr(importlib.import_module(module), attr)
        except Exception as exc:  # foreign code: one line, never a traceback
            raise ColabkitError(f"{where}: cannot import: {type(exc).__name__}: {one_line(exc)}") from None
        return _checked(found, where, None)
    eps = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not eps:
        # the study's own are installed entry points too, but never named as plugins (above)
        known = sorted({*BUILTIN, *(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))} - STUDY.keys())
        raise ColabkitError(f"{where}: unknown; built in or installed: {', '.join(known)}; or give module:Class")
    try:
        found = eps[0].load()
    except Exception as exc:
        raise ColabkitError(f"{where} (entry point {eps[0].value}): cannot load: {type(exc).__name__}: "
                            f"{one_line(exc)}") from None
    return _checked(found, f"{where} (entry point {eps[0].value})", name)


def _checked(found: object, where: str, expected: str | None) -> type[Structure]:
    if not (isinstance(found, type) and issubclass(found, Structure)):
        raise ColabkitError(f"{where}: not a colabkit.session.structure.base.Structure subclass")
    if expected is not None and found.name != expected:
        raise ColabkitError(f"{where}: the class is named {found.name!r}, not {expected!r}")
    taken = sorted(t for t in found.sections if t in ENGINE_SECTIONS or t.startswith("Code cells"))
    if taken:
        raise ColabkitError(f"{where}: sections {', '.join(map(repr, taken))} are the engine's or the study's; "
                            "give the structure's own sections their own titles")
    return found


def plugin(variant: VariantConfig, ref: StructureRef) -> Structure:
    """One plugin structure of `variant`, made with its options (a bad option is one line)."""
    where = f"variant {variant.name!r}: "
    cls = structure_class(ref.name, where)
    try:
        return cls(variant, ref.options)
    except (ValueError, TypeError, KeyError) as exc:
        raise ColabkitError(f"{where}structure {ref.name!r}: {one_line(exc)}") from None


def structures_for(variant: VariantConfig) -> tuple[Structure, ...]:
    """Every structure `variant` plays: the study's (its fields), then its plugins in order."""
    return (*study_structures(variant), *(plugin(variant, ref) for ref in variant.structures))


def plugin_structures(variant: VariantConfig) -> tuple[Structure, ...]:
    """`variant`'s plugin structures only (what the audit allows beyond the study's design factors)."""
    return tuple(plugin(variant, ref) for ref in variant.structures)


def composition(variant: VariantConfig) -> Composition:
    """The engine's handle on `variant`'s structures."""
    return Composition(structures_for(variant))
