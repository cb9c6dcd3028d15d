"""Shared Group Memory: what the team agrees on before the task, frozen for the whole session.

The four slots follow the study (and transactive-memory theory): who knows what
(expertise), who is trusted with what (responsibility), how work is coordinated (plan) and
which evidence standards the answer must meet; Scaffolded teams also write a gate table.

The session layer runs the build protocol (each member proposes, the AI agent consolidates,
each human ratifies or names one amendment, the AI agent applies the amendments once) with
the schemas here as structured outputs, then calls `memory_from_consolidation` to get the
immutable `MemoryRecord`. Slot lengths are bounded in the schemas (they appear as maxLength
in the JSON schema given to the model) at what the session's observation profile allows:
`SLOT_MAX_CHARS` for the embedded model (compact profile), more for models with large
windows; a ratification's amendment is bounded like one slot. `render(max_chars=...)` fits a
tighter observation budget by trimming the slots evenly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from colabkit.hashing import sha256_hex
from colabkit.team.datachange import DATA_CHANGING_RULE
from colabkit.team.gates import GATEABLE_ACTIONS, NOTE_MAX_CHARS, GateRule, GateScope, GateTable
from colabkit.team.personas import Persona
from colabkit.team.textfit import fit_all

SLOT_MAX_CHARS = 280  # the schema's default slot length; the session's profile sets the one used (compact: 160)
SLOT_CEILING = 4000  # what a frozen record may hold, whatever the profile
AMENDMENT_MAX_CHARS = SLOT_MAX_CHARS  # an amendment changes a slot, so it may be as long as one
SIGNATORY_CHARS = 20  # a sized gate table's signatory: an id or a name ("the Data Analyst")
MAX_GATES = 8  # the schema's default; a model may write a few gates that mapping then drops
# Distinct gates that can take effect: the first rule for an action decides, except that
# execute_code may have a data_changing rule before an `all` one (see GateTable.rule_for).
ENFORCEABLE_GATES = len(GATEABLE_ACTIONS) + 1
SLOTS = ("expertise", "responsibility", "plan", "evidence_standards")

_SLOT_HELP = {
    "expertise": "Who knows what: each member's knowledge relevant to this task.",
    "responsibility": "Who is trusted with what: which member does or checks which part.",
    "plan": "How the work is coordinated: steps, order, who talks to whom.",
    "evidence_standards": "What the final answer must meet to be accepted (checks, definitions).",
}
# Words a model may use for an action type, after lower-casing and joining with "_".
_ACTION_SYNONYMS = {
    "edit": "edit_result", "editor_update": "edit_result", "update_result": "edit_result",
    "write_result": "edit_result", "result": "edit_result", "edit_hypothesis": "edit_result",
    "code": "execute_code", "run_code": "execute_code", "execute": "execute_code",
    "execute_jupyter_cell": "execute_code", "run": "execute_code",
    "message": "send_message", "send": "send_message", "send_teammate_message": "send_message",
    "finish_task": "finish", "submit": "finish", "end": "finish",
}


def _without_class_text(schema: dict[str, Any]) -> None:
    """Leave a class's docstring out of its JSON schema: it is written for the code's readers
    (it may name internal functions) and would otherwise reach the model as a description."""
    schema.pop("description", None)


MODEL_FACING = ConfigDict(json_schema_extra=_without_class_text)
"""The config of every class a member's model answers in: only field descriptions reach it."""


def _slot(name: str) -> Any:
    return Field(max_length=SLOT_MAX_CHARS, description=_SLOT_HELP[name])


class MemorySlots(BaseModel):
    """Structured output for a proposal or consolidation without gates (Memory-only)."""

    model_config = MODEL_FACING

    expertise: str = _slot("expertise")
    responsibility: str = _slot("responsibility")
    plan: str = _slot("plan")
    evidence_standards: str = _slot("evidence_standards")


class GateItem(BaseModel):
    """One gate as a model writes it; validated and mapped by `memory_from_consolidation`."""

    model_config = MODEL_FACING

    action: str = Field(max_length=40, description="one of: " + ", ".join(GATEABLE_ACTIONS))
    signatory: str = Field(max_length=40, description="id of the member who must approve")
    scope: GateScope = Field("all", description="all, or data_changing (execute_code only: code that changes data)")
    note: str = Field("", max_length=NOTE_MAX_CHARS, description="optional: what the signatory should check")


class MemoryProposal(MemorySlots):
    """Structured output for a proposal or consolidation with a gate table (Scaffolded)."""

    gates: list[GateItem] = Field(
        default_factory=list, max_length=MAX_GATES,
        description="actions that need approval, and who signs; actions not listed stay ungated",
    )


class Accept(BaseModel):
    """A ratification that accepts the draft as it is."""

    model_config = MODEL_FACING

    decision: Literal["accept"] = Field(description="accept the memory as it is")


class Amend(BaseModel):
    """A ratification that names the one change its member needs."""

    model_config = MODEL_FACING

    decision: Literal["amend"]
    amendment: str = Field(min_length=1, max_length=AMENDMENT_MAX_CHARS,
                           description="the one change you need, in your own words")

    @field_validator("amendment")
    @classmethod
    def _named(cls, amendment: str) -> str:
        if not amendment.strip():
            raise ValueError("decision 'amend' needs the amendment text")
        return amendment


_REPLY_HELP = "accept the draft, or amend it with the one change you need"


class Ratification(BaseModel):
    """Structured output of one member's ratification: accept the draft, or name one amendment.

    The reply is a union on `decision`, so the schema itself (and with it the embedded model's
    decoding grammar) allows no 'amend' without its text; a flat {decision, amendment} pair let
    a model answer 'amend' with nothing: a failed step in two of six measured builds.
    """

    model_config = MODEL_FACING

    reply: Accept | Amend = Field(discriminator="decision", description=_REPLY_HELP)

    @property
    def decision(self) -> Literal["accept", "amend"]:
        return self.reply.decision

    @property
    def amendment(self) -> str:
        return self.reply.amendment if isinstance(self.reply, Amend) else ""


@cache  # one class per size, however many sessions a process runs (as `step_schema`)
def memory_schema(with_gates: bool, slot_chars: int = SLOT_MAX_CHARS, max_gates: int = MAX_GATES,
                  note_chars: int = NOTE_MAX_CHARS) -> type[MemorySlots]:
    """The structured-output schema for the build phase of a memory variant, sized by the profile.

    `slot_chars` per slot; with gates, at most `max_gates` gates with notes of `note_chars`.
    The gate bounds only shorten what a model may write, never what can be enforced as long
    as `max_gates >= ENFORCEABLE_GATES`. A sized gate table (the compact profile's) also takes
    its actions from the list (an enum) and short signatories: the embedded model, decoding
    under the schema's grammar, otherwise filled the free-text fields to their bounds with
    digits (a token per character) that mapping then dropped as gates. The default table keeps
    free text, mapped and reported (`memory_from_consolidation`), so a large model's wording
    ("run code", "the Researcher") costs one gate at most, never the whole answer.
    """
    base = MemoryProposal if with_gates else MemorySlots
    fields: dict[str, Any] = {}
    if slot_chars != SLOT_MAX_CHARS:
        fields.update({slot: (str, Field(max_length=min(slot_chars, SLOT_CEILING), description=_SLOT_HELP[slot]))
                       for slot in SLOTS})
    if with_gates and (max_gates, note_chars) != (MAX_GATES, NOTE_MAX_CHARS):
        help_ = GateItem.model_fields
        item = create_model(
            f"GateItem{note_chars}", __base__=GateItem,
            action=(Literal[GATEABLE_ACTIONS], Field(description=help_["action"].description)),  # type: ignore[arg-type]
            signatory=(str, Field(max_length=SIGNATORY_CHARS, description=help_["signatory"].description)),
            note=(str, Field("", max_length=min(note_chars, NOTE_MAX_CHARS), description=help_["note"].description)),
            __validators__={"canonical_action": field_validator("action", mode="before")(_canonical_action)})
        gates = MemoryProposal.model_fields["gates"]
        fields["gates"] = (list[item], Field(default_factory=list, max_length=max_gates,
                                             description=gates.description))
    if not fields:
        return base
    name = f"{base.__name__}{slot_chars}" + (f"g{max_gates}n{note_chars}" if "gates" in fields else "")
    return cast(type[MemorySlots], create_model(name, __base__=base, **fields))


@cache
def ratification_schema(slot_chars: int = SLOT_MAX_CHARS) -> type[Ratification]:
    """The ratification's structured output with an amendment of up to one slot (`slot_chars`).

    Sized by the same profile as the slots, so a member with a large-window model may name
    an amendment as long as the slot it changes, and the embedded model keeps short answers.
    """
    if slot_chars == AMENDMENT_MAX_CHARS:
        return Ratification
    amendment = Field(min_length=1, max_length=min(slot_chars, SLOT_CEILING),
                      description=Amend.model_fields["amendment"].description)
    amend = create_model(f"Amend{slot_chars}", __base__=Amend, amendment=(str, amendment))
    reply = Field(discriminator="decision", description=_REPLY_HELP)
    return cast(type[Ratification], create_model(f"Ratification{slot_chars}", __base__=Ratification,
                                                 reply=(Accept | amend, reply)))


class MemoryRecord(BaseModel):
    """The frozen Shared Group Memory; `gates` is None when the variant has no self-selected gates."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    expertise: str = Field(max_length=SLOT_CEILING)
    responsibility: str = Field(max_length=SLOT_CEILING)
    plan: str = Field(max_length=SLOT_CEILING)
    evidence_standards: str = Field(max_length=SLOT_CEILING)
    gates: GateTable | None = None

    def digest(self) -> str:
        """sha256 of the canonical JSON: the memory's identity in the session record."""
        return sha256_hex(self)

    def render(self, max_chars: int | None = None, *, draft: bool = False, gates: bool = True,
               state: str | None = None) -> str:
        """The read-only block shown in every task-phase observation (or, `draft`, for ratifying).

        With `max_chars`, the four slots are trimmed evenly (longest first) so the block fits
        while every slot keeps its opening; the gate line, which is enforced, stays whole.
        `gates=False` leaves the gate line out: the task phase shows the gates in force in
        their own section, worded the same whoever chose them (`session.gating.gate_rules_text`).
        `state` replaces the header's "read-only, frozen <digest>" (a living memory says its
        version and last change there).
        """
        if state is None:
            state = "draft, not frozen yet" if draft else f"read-only, frozen {self.digest()[:8]}"
        header = f"Shared Group Memory ({state}):"
        labels = [f"- {slot.replace('_', ' ').capitalize()}: " for slot in SLOTS]
        values = [getattr(self, slot) or "(none)" for slot in SLOTS]
        gate_line = [f"- Gates: {self.gates.render()}"] if self.gates is not None and gates else []
        if max_chars is not None:
            fixed = len(header) + sum(len(label) + 1 for label in labels) + sum(len(g) + 1 for g in gate_line)
            values = fit_all(values, max_chars - fixed)
        return "\n".join([header, *(label + value for label, value in zip(labels, values)), *gate_line])


BuildStage = Literal["propose", "consolidate", "ratify", "amend"]
TEAM_LINE = "Team:"
GATES_LINE = "The team also chooses gates:"
LIVING_RULE = ("Then the memory is in force for the task; during it any member may propose an update of one slot "
               "(or of the gate table), which takes effect only when every other member approves it.")


def build_rules(team: Sequence[Persona], with_gates: bool, slot_chars: int = SLOT_MAX_CHARS, *,
                living: bool = False, budgets: str = "", gate_cost: str = "", independent: bool = False) -> str:
    """What the build is, the same text for every member at every stage of it.

    `living` (the Dynamic variants) changes only the last sentence: the memory stays in force
    but members may propose updates during the task, applied when every other member approves.
    `independent` says that nobody sees another's proposal (`SessionSettings.memory_proposals`).

    Every call of the build shows this before what its stage adds, and the stage's own
    request (`build_request`) comes last, so a member's later call repeats its earlier
    prompt up to there and the provider's (or llama.cpp's) prefix cache serves that part.
    One line per part, the team (`TEAM_LINE`) and the gates (`GATES_LINE`) each on their own,
    so the variant audit compares the rest across every memory variant. `budgets` (every
    member's task steps) joins the team line and `gate_cost` (what a held action costs in
    turns) the gates line: the session layer writes both from the scheduler's rules
    (`colabkit.session.rules`), so a team chooses its gates knowing what they cost.
    """
    members = ", ".join(f"{p.id} = {p.name}" for p in team)
    lines = [
        f"{TEAM_LINE} {members}." + (f" {budgets}" if budgets else ""),
        f"Before the task starts, the team writes a shared memory in four slots of at most {slot_chars} "
        "characters each: expertise, responsibility, plan, evidence_standards.",
    ]
    if with_gates:
        lines.append(
            f"{GATES_LINE} which actions ({', '.join(GATEABLE_ACTIONS)}) need approval, which member "
            "signs each, the scope (all, or data_changing: only execute_code that changes data) and an "
            "optional note for the signatory. A member's own actions are never held by its own gate; "
            f"unlisted actions stay ungated. {DATA_CHANGING_RULE}" + (f" {gate_cost}" if gate_cost else "")
        )
    lines.append(
        "Steps: every member proposes " + ("(nobody sees another's proposal); " if independent else
                                          "(each seeing the proposals made before it); ")
        + "the AI agent merges the proposals into one draft; every simulated human "
        "accepts the draft or names one amendment; the AI agent applies the amendments once. "
        + (LIVING_RULE if living else "Then the memory is frozen for the whole task.")
    )
    return "\n".join(lines)


def build_request(stage: BuildStage, with_gates: bool, slot_chars: int = SLOT_MAX_CHARS) -> str:
    """What this call of the build asks for (shown last, after the material it refers to)."""
    if stage == "propose":
        return "Propose the team's shared memory for this task" + (", gates included." if with_gates else ".")
    if stage == "consolidate":
        return "Merge the members' proposals above into one shared memory; keep what they agree on."
    if stage == "ratify":
        return ("Reply with decision 'accept' if you can work with the draft above, or 'amend' and the one change "
                f"you need (at most {slot_chars} characters).")
    return "Reply with the memory above with every amendment applied (the same JSON fields); keep the rest as it is."


def _canonical_action(cls: type, raw: Any) -> Any:
    """A known wording of an action ("edit", "run code") as its action type; anything else as it is."""
    return (map_action(raw) or raw) if isinstance(raw, str) else raw


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def map_action(raw: str) -> str | None:
    key = _norm(raw)
    key = _ACTION_SYNONYMS.get(key, key)
    return key if key in GATEABLE_ACTIONS else None


def signatory_aliases(team: Sequence[Persona]) -> dict[str, str]:
    """Alias -> persona id, from ids, full names and distinctive name words; ambiguous aliases removed."""
    owners: dict[str, set[str]] = {}
    for p in team:
        words = {w for w in _norm(p.name).split("_") if len(w) > 2}
        for alias in {_norm(p.id), _norm(p.name), *words}:
            owners.setdefault(alias, set()).add(p.id)
    return {alias: next(iter(ids)) for alias, ids in owners.items() if len(ids) == 1}


def map_signatory(raw: str, aliases: Mapping[str, str]) -> str | None:
    key = _norm(raw).removeprefix("the_")
    if key in aliases:
        return aliases[key]
    found = {aliases[t] for t in key.split("_") if t in aliases}
    return found.pop() if len(found) == 1 else None


def memory_from_consolidation(
    output: MemorySlots | Mapping[str, Any], team: Sequence[Persona], *, with_gates: bool
) -> tuple[MemoryRecord, tuple[str, ...]]:
    """Turn the consolidation's structured output into the frozen record, plus a report.

    Pure and deterministic. Gates are kept only `with_gates` (Scaffolded); each gate's action
    is mapped from common wordings ("edit", "run code") to an action type and its signatory
    from a member id or name ("Researcher" -> R) on this team. Gates with an action that
    cannot be gated, a signatory not on the team (nobody is drafted in instead), or repeating
    an earlier (action, scope) are dropped; a `data_changing` scope on another action than
    execute_code is widened to `all`. Every drop or mapping is a line in the report so the
    session log shows what the team wrote versus what is enforced.
    """
    parsed = output if isinstance(output, MemorySlots) else MemoryProposal.model_validate(output)
    report: list[str] = [f"slot {s} is empty" for s in SLOTS if not getattr(parsed, s).strip()]
    items: Sequence[GateItem] = getattr(parsed, "gates", [])
    rules: list[GateRule] = []
    if not with_gates:
        if items:
            report.append(f"{len(items)} gate(s) ignored: this variant has no self-selected gates")
    else:
        aliases = signatory_aliases(team)
        seen: set[tuple[str, str]] = set()
        for i, item in enumerate(items, 1):
            action, signatory = map_action(item.action), map_signatory(item.signatory, aliases)
            scope: GateScope = item.scope if action == "execute_code" else "all"
            if action is None:
                report.append(f"gate {i} dropped: action {item.action!r} cannot be gated")
            elif signatory is None:
                report.append(f"gate {i} dropped: signatory {item.signatory!r} is not on the team")
            elif (action, scope) in seen:
                report.append(f"gate {i} dropped: repeats an earlier gate for {action}")
            else:
                if (action, signatory) != (item.action, item.signatory):
                    report.append(f"gate {i} mapped: {item.action!r} -> {action}, {item.signatory!r} -> {signatory}")
                if scope != item.scope:
                    report.append(f"gate {i} widened: scope data_changing is for execute_code only; "
                                  f"every {action} is gated")
                seen.add((action, scope))
                rules.append(GateRule(action=action, signatory=signatory, scope=scope, note=item.note.strip()))
    record = MemoryRecord(
        **{s: getattr(parsed, s).strip() for s in SLOTS},
        gates=GateTable(rules=tuple(rules)) if with_gates else None,
    )
    return record, tuple(report)
