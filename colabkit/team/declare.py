"""Personas and variants declared in a file: a researcher's own study without editing the package.

An experiment file (`variants:` and `personas:`, see `colabkit.runner.experiment`) or a
variant file (`colabkit run --variant-file F.yaml --variant NAME`) declares them in YAML:

    personas:
      - id: E
        name: Ethicist
        role: human
        prompt_file: personas/ethicist.md   # beside the file; or `prompt:` inline text;
        knows: [domain_knowledge]           # or role_line/knowledge_line on the shipped frame
    variants:
      - default-dr                          # a registered variant, by name
      - name: preassigned-dre               # an inline one
        structure: preassigned
        humans: [D, R, E]
        gates: [{action: finish, signatory: E}]

A declared persona's version is its content hash (`persona_version`): the session record
stores it beside the shipped personas' versions, so a session says exactly which prompt ran.
`role_line` + `knowledge_line` build a human prompt on the shipped humans' frame (every line
of it but "You are ..." and "You know ..."), so the new persona differs from D and R only in
who it is and what it knows, as the like-for-like audit demands.

`structure:` names a study structure (`STRUCTURES`), a plugin structure (a built-in one such
as `evidence-checklist`, an entry point of the group `colabkit.structures`, or an import path
`module:Class`; see `colabkit.session.structure.registry`), or a list of them: at most one study
structure and any plugins, played in that order (`structure: [scaffolded, evidence-checklist]`).
`options:` are the plugin's options (with several plugins, a mapping from each plugin's name to
its options). The team layer records plugins as `StructureRef`s; the session layer finds and
checks them (the experiment's loader asks it at once). Every mistake is one `ColabkitError` line naming the file and the
field (`exp.yaml: variants.1 ('pre-e').gates.0.signatory: 'Q' is not on the team (ai, D, R)`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from colabkit.errors import ColabkitError
from colabkit.hashing import sha256_hex
from colabkit.team.gates import DEFAULT_PREASSIGNED_GATES, GateRule, GateTable
from colabkit.team.personas import AI_ID, KNOWLEDGE_LINE, PERSONA_IDS, ROLE_LINE, Knowledge, Persona, persona
from colabkit.team.variants import VARIANT_NAMES, StructureRef, VariantConfig

STRUCTURES: dict[str, dict[str, Any]] = {
    "default": {"memory": False, "gate_source": "none"},
    "memory": {"memory": True, "gate_source": "none"},
    "scaffolded": {"memory": True, "gate_source": "self"},
    "preassigned": {"memory": False, "gate_source": "preassigned"},
    "dynamic": {"memory": True, "gate_source": "self", "memory_updates": True},
}
"""The study's coordination structures a declaration may name, and the fields each one sets."""
_PLUGIN_NAME = re.compile(r"^[A-Za-z0-9_.-]+(:[A-Za-z_][A-Za-z0-9_]*)?$")


class _Decl(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


_DeclT = TypeVar("_DeclT", bound=_Decl)


class PersonaDecl(_Decl):
    """A persona as a file declares it; exactly one of prompt, prompt_file, role_line/knowledge_line."""

    id: str = Field(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9_-]+$")
    name: str = Field(min_length=1)
    role: Literal["ai", "human"] = "human"
    prompt: str | None = None
    prompt_file: str | None = None
    role_line: str | None = None
    knowledge_line: str | None = None
    knows: tuple[Knowledge, ...] = ()
    """The private briefing facts this persona holds (the hidden profile's slices)."""


class VariantDecl(_Decl):
    """An inline variant: a shipped `structure` (or the raw fields), its team and its gates."""

    name: str
    structure: str | tuple[str, ...] | None = None
    """A study structure, a plugin, or a list: at most one study structure, then plugins."""
    options: dict[str, Any] = Field(default_factory=dict)
    """The plugin's options; with several plugins, {plugin name: its options}."""
    humans: tuple[str, ...] = ()
    memory: bool | None = None
    gate_source: Literal["none", "self", "preassigned"] | None = None
    gates: tuple[GateRule, ...] | None = None
    """The preassigned gate table (structure `preassigned`; default: the study's, for the team)."""
    memory_updates: bool | None = None
    personas: tuple[str | PersonaDecl, ...] = ()
    """Personas only this variant uses: declarations, or ids of the file's `personas:`."""


def persona_version(p: Persona) -> str:
    """A declared persona's version: the hash of everything it is (name, role, prompt, knows)."""
    return "sha256:" + sha256_hex(p.model_dump(exclude={"version"}))[:16]


def declared_persona(decl: PersonaDecl, base: Path, where: str) -> Persona:
    """The `Persona` a declaration means, its prompt read from `base` when it names a file."""
    given = [k for k in ("prompt", "prompt_file") if getattr(decl, k) is not None]
    lines = [k for k in ("role_line", "knowledge_line") if getattr(decl, k) is not None]
    if len(given) + bool(lines) != 1:
        raise ColabkitError(f"{where}: give exactly one of prompt, prompt_file, or role_line with knowledge_line")
    if decl.prompt_file is not None:
        path = Path(decl.prompt_file).expanduser()
        path = path if path.is_absolute() else base / path
        try:
            text = path.read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError):
            raise ColabkitError(f"{where}.prompt_file: not found: {path}") from None
        first, _, rest = text.partition("\n")
        prompt = (rest if first.startswith("version:") else text).strip()  # the hash is the version
        if not prompt:
            raise ColabkitError(f"{where}.prompt_file: {path} is empty")
    elif lines:
        prompt = _on_the_shipped_frame(decl, where)
    else:
        prompt = (decl.prompt or "").strip()
        if not prompt:
            raise ColabkitError(f"{where}.prompt: empty")
    made = Persona(id=decl.id, name=decl.name, role=decl.role, version="-", prompt=prompt, knows=decl.knows)
    return made.model_copy(update={"version": persona_version(made)})


def _on_the_shipped_frame(decl: PersonaDecl, where: str) -> str:
    if decl.role != "human":
        raise ColabkitError(f"{where}.role_line: the shipped frame is the humans'; an AI persona needs a prompt")
    if decl.role_line is None or decl.knowledge_line is None:
        raise ColabkitError(f"{where}: role_line and knowledge_line go together")
    role, knowledge = " ".join(decl.role_line.split()), " ".join(decl.knowledge_line.split())
    for field, line, start in (("role_line", role, ROLE_LINE), ("knowledge_line", knowledge, KNOWLEDGE_LINE)):
        if not line.startswith(start):
            raise ColabkitError(f"{where}.{field}: must start with {start.strip()!r} (the persona contract)")
    frame = persona("D").prompt.splitlines()
    return "\n".join(role if line.startswith(ROLE_LINE) else knowledge if line.startswith(KNOWLEDGE_LINE)
                     else line for line in frame)


def declared_variant(decl: VariantDecl, personas: Mapping[str, Persona], base: Path, where: str) -> VariantConfig:
    """The `VariantConfig` an inline declaration means (`personas`: the file's, by id)."""
    own: dict[str, Persona] = {}
    for i, item in enumerate(decl.personas):
        if isinstance(item, str):
            if item not in personas:
                raise ColabkitError(f"{where}.personas.{i}: no persona {item!r} declared in the file's personas")
            found = personas[item]
        else:
            found = declared_persona(item, base, f"{where}.personas.{i}")
        if found.id in own:
            raise ColabkitError(f"{where}.personas.{i}.id: repeated persona id {found.id!r}")
        own[found.id] = found
    fields = _structure_fields(decl, where)
    team = (AI_ID, *decl.humans)
    for i, pid in enumerate(decl.humans):
        if pid not in own and pid in personas:
            own[pid] = personas[pid]
        elif pid not in own and pid not in PERSONA_IDS:
            known = sorted({*PERSONA_IDS, *personas} - {AI_ID})
            raise ColabkitError(f"{where}.humans.{i}: unknown persona {pid!r}; declared or shipped: {', '.join(known)}")
    if AI_ID in personas and AI_ID not in own:
        own[AI_ID] = personas[AI_ID]
    if fields.get("gate_source") == "preassigned":
        fields["preassigned"] = _gate_table(decl, team, where)
    elif decl.gates is not None:
        raise ColabkitError(f"{where}.gates: a gate table goes with structure 'preassigned' only")
    try:
        return VariantConfig(name=decl.name, humans=decl.humans, personas=tuple(own.values()), **fields)
    except ColabkitError as exc:
        raise ColabkitError(f"{where}: {str(exc).removeprefix(f'variant {decl.name!r}: ')}") from None


def _structure_fields(decl: VariantDecl, where: str) -> dict[str, Any]:
    raw = {k: v for k in ("memory", "gate_source", "memory_updates") if (v := getattr(decl, k)) is not None}
    named = (decl.structure,) if isinstance(decl.structure, str) else decl.structure or ()
    study = [n for n in named if n in STRUCTURES]
    plugins = [n for n in named if n not in STRUCTURES]
    if len(study) > 1:
        raise ColabkitError(f"{where}.structure: one study structure at most, got {', '.join(study)}")
    if len(set(plugins)) != len(plugins):
        raise ColabkitError(f"{where}.structure: a plugin is named twice: {', '.join(plugins)}")
    for name in plugins:
        if not _PLUGIN_NAME.match(name):
            raise ColabkitError(f"{where}.structure: {name!r} is neither a study structure ({', '.join(STRUCTURES)}) "
                                "nor a plugin name or module:Class")
    if decl.options and not plugins:
        raise ColabkitError(f"{where}.options: options belong to a plugin structure; "
                            f"{'the study structure ' + repr(study[0]) + ' takes none' if study else 'name one'}")
    options: dict[str, dict[str, Any]] = {plugins[0]: dict(decl.options)} if len(plugins) == 1 else {}
    if len(plugins) > 1:
        stray = sorted(set(decl.options) - set(plugins))
        if stray or not all(isinstance(v, Mapping) for v in decl.options.values()):
            raise ColabkitError(f"{where}.options: with several plugins, a mapping from each plugin's name "
                                f"({', '.join(plugins)}) to its options" + (f"; not a plugin: {stray[0]}" if stray else ""))
        options = {k: dict(v) for k, v in decl.options.items()}
    refs = {"structures": tuple(StructureRef(name=n, options=options.get(n, {})) for n in plugins)} if plugins else {}
    if not study:
        return {**raw, **refs}
    fields = {"memory_updates": False, **STRUCTURES[study[0]]}
    clash = sorted(k for k, v in raw.items() if fields[k] != v)
    if clash:
        raise ColabkitError(f"{where}.{clash[0]}: contradicts structure {study[0]!r} "
                            f"({clash[0]} is {fields[clash[0]]!r} there)")
    return {**fields, **refs}


def _gate_table(decl: VariantDecl, team: tuple[str, ...], where: str) -> GateTable:
    if decl.gates is None:
        return DEFAULT_PREASSIGNED_GATES.for_team(team)[0]
    for i, rule in enumerate(decl.gates):
        if rule.signatory not in team:
            raise ColabkitError(f"{where}.gates.{i}.signatory: {rule.signatory!r} is not on the team "
                                f"({', '.join(team)})")
    return GateTable(rules=decl.gates)


def declare(variants: Sequence[Any], personas: Sequence[Any], base: Path,
            source: Path | str) -> tuple[tuple[str, ...], tuple[VariantConfig, ...]]:
    """Resolve a file's `variants:` (names and inline declarations) and `personas:`.

    Returns the variant names in file order and the inline variants' configs; raises one
    line naming `source` and the field for any mistake.
    """
    known: dict[str, Persona] = {}
    for i, raw in enumerate(personas):
        pdecl = _parse(PersonaDecl, raw, f"{source}: personas.{i}")
        if pdecl.id in known:
            raise ColabkitError(f"{source}: personas.{i}.id: repeated persona id {pdecl.id!r}")
        known[pdecl.id] = declared_persona(pdecl, base, f"{source}: personas.{i} ({pdecl.id!r})")
    names: list[str] = []
    inline: list[VariantConfig] = []
    for i, raw in enumerate(variants):
        decl = raw if isinstance(raw, str) else _parse(VariantDecl, raw, f"{source}: variants.{i}")
        name = decl if isinstance(decl, str) else decl.name
        if name in names:
            raise ColabkitError(f"{source}: variants.{i}: repeated variant {name!r}")
        names.append(name)
        if isinstance(decl, VariantDecl):
            where = f"{source}: variants.{i} ({name!r})"
            if name in VARIANT_NAMES:
                raise ColabkitError(f"{where}.name: {name!r} is a registered variant; give yours another name")
            inline.append(declared_variant(decl, known, base, where))
    return tuple(names), tuple(inline)


def declare_in(raw: dict[str, Any], base: Path, source: Path) -> None:
    """A file's fields with its inline variants and personas resolved: `variants` the names,
    `declared` the inline configs (as `Experiment` holds them), `personas` consumed."""
    variants, personas = raw.get("variants"), raw.pop("personas", None) or []
    if isinstance(variants, list) and (personas or not all(isinstance(v, str) for v in variants)):
        names, inline = declare(variants, personas, base, source)
        raw["variants"], raw["declared"] = list(names), [*raw.get("declared", ()), *inline]
    elif personas:
        raise ColabkitError(f"{source}: personas: declared personas need inline variants that use them")


def _parse(model: type[_DeclT], raw: Any, where: str) -> _DeclT:
    if not isinstance(raw, Mapping):
        raise ColabkitError(f"{where}: expected a mapping of fields, got {type(raw).__name__}")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(part) for part in err["loc"])
        message = f"{where}{'.' + field if field else ''}: {err['msg'].removeprefix('Value error, ')}"
    except ColabkitError as exc:  # a gate rule's own check (an action that cannot be gated)
        message = f"{where}.gates: {exc}"
    raise ColabkitError(message)


def read_yaml(path: Path, what: str) -> Any:
    """The YAML document of `path`; a missing file or bad YAML is one line naming it (`what`: the
    kind of file, e.g. "variant file")."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ColabkitError(f"{what} not found: {path}") from None
    except yaml.YAMLError as exc:
        raise ColabkitError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None


def load_variant_file(path: Path | str) -> dict[str, VariantConfig]:
    """The inline variants of a variant file (`personas:` and `variants:`), by name."""
    path = Path(path)
    raw = read_yaml(path, "variant file")
    if not isinstance(raw, dict) or not isinstance(raw.get("variants"), list):
        raise ColabkitError(f"{path}: a variant file is a mapping with a `variants:` list (and `personas:`)")
    extra = sorted(set(raw) - {"variants", "personas"})
    if extra:
        raise ColabkitError(f"{path}: {extra[0]}: not a field of a variant file (variants, personas)")
    _, inline = declare(raw["variants"], raw.get("personas") or [], path.resolve().parent, path)
    return {v.name: v for v in inline}


def variant_from_file(path: Path | str, name: str) -> VariantConfig:
    """The variant `name` declared in a variant file; a missing one lists those there."""
    found = load_variant_file(path)
    if name not in found:
        raise ColabkitError(f"{path}: no inline variant {name!r}; declared: {', '.join(found) or 'none'}")
    return found[name]
