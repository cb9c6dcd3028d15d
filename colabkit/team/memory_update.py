"""A living Shared Group Memory: what a proposed update says, and the record it leads to.

The study froze its memory after the build phase and names that as a limitation ("frozen
group memory ... leaving room for dynamic updating"). The Dynamic variants keep the build
of Scaffolded and add one task-phase action, `propose_memory_update`: a member names a slot
(one of the four, or the gate table), the new text or gate rule, and a reason. The session
layer makes it a team act (every other member approves or rejects; see
`colabkit.session.structure.memory_updates`); this module is the pure part: parsing what the member
wrote into a typed `MemoryUpdate` and applying an accepted one to a `MemoryRecord`.

A slot update replaces that slot's text. A gate update is one rule written as
`action -> signatory`, optionally followed by `data_changing` (execute_code only), which
adds the rule or replaces the one for the same action and scope; `action -> none` removes
every rule for that action. Actions and signatories are read as in the build phase (common
wordings and member names are mapped), so a member's update is understood exactly as its
build proposal would have been.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from colabkit.team.gates import GateRule, GateScope, GateTable
from colabkit.team.memory import SLOT_CEILING, SLOTS, MemoryRecord, map_action, map_signatory, signatory_aliases
from colabkit.team.personas import Persona

UPDATE_SLOTS = (*SLOTS, "gates")
UpdateSlot = Literal["expertise", "responsibility", "plan", "evidence_standards", "gates"]
_REMOVE = {"none", "nobody", "no_one", "remove", "ungated"}
_GATE = re.compile(r"^\s*(?P<action>[^>]+?)\s*-+>\s*(?P<who>.+?)\s*$")


class MemoryUpdateError(ValueError):
    """An update that names no slot the memory has, or a gate rule that cannot be read."""


class MemoryUpdate(BaseModel):
    """One proposed change to the memory, typed: which slot, the new text, and why.

    For the gate table, `rule` is the parsed rule to add (or replace) and `remove` names an
    action whose rules are dropped; exactly one of them is set.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    slot: UpdateSlot
    text: str = Field(min_length=1, max_length=SLOT_CEILING)
    reason: str = ""
    rule: GateRule | None = None
    remove: str | None = None

    def describe(self) -> str:
        """One line for observations and the log, e.g. `plan: "D checks units first"`."""
        text = " ".join(self.text.split())
        return f"{self.slot}: {text!r}" + (f" (reason: {self.reason})" if self.reason else "")


def parse_slot(raw: str) -> UpdateSlot:
    """The slot a member named ("Evidence standards", "gate table", "plan")."""
    key = re.sub(r"[^a-z0-9]+", "_", raw.lower()).strip("_")
    key = {"gate": "gates", "gate_table": "gates", "gate_rules": "gates", "evidence": "evidence_standards",
           "standards": "evidence_standards"}.get(key, key)
    if key not in UPDATE_SLOTS:
        raise MemoryUpdateError(f"unknown memory slot {raw!r}; use one of {', '.join(UPDATE_SLOTS)}")
    return key  # type: ignore[return-value]  # checked against UPDATE_SLOTS just above


def parse_update(slot: str, text: str, reason: str, team: Sequence[Persona], *, with_gates: bool) -> MemoryUpdate:
    """What a member proposed, validated against this team and memory; `MemoryUpdateError` if unreadable."""
    name = parse_slot(slot)
    text = text.strip()
    if not text:
        raise MemoryUpdateError(f"a memory update of {name} needs the new text in content")
    if name != "gates":
        return MemoryUpdate(slot=name, text=text, reason=reason.strip())
    if not with_gates:
        raise MemoryUpdateError("this team's memory has no gate table to update")
    match = _GATE.match(text.splitlines()[0])
    if match is None:
        raise MemoryUpdateError(f"a gate update reads 'action -> signatory' (or 'action -> none'), got {text!r}")
    action = map_action(match["action"])
    if action is None:
        raise MemoryUpdateError(f"action {match['action']!r} cannot be gated")
    words = match["who"].split()
    scope: GateScope = "data_changing" if words[-1].lower().strip("()") == "data_changing" else "all"
    who = " ".join(words[:-1] if scope == "data_changing" and len(words) > 1 else words)
    if re.sub(r"[^a-z]+", "_", who.lower()).strip("_") in _REMOVE:
        return MemoryUpdate(slot="gates", text=text, reason=reason.strip(), remove=action)
    signatory = map_signatory(who, signatory_aliases(team))
    if signatory is None:
        raise MemoryUpdateError(f"signatory {who!r} is not on the team")
    if scope == "data_changing" and action != "execute_code":
        raise MemoryUpdateError("scope data_changing applies to execute_code only")
    rule = GateRule(action=action, signatory=signatory, scope=scope)
    return MemoryUpdate(slot="gates", text=text, reason=reason.strip(), rule=rule)


def apply_update(memory: MemoryRecord, update: MemoryUpdate) -> MemoryRecord:
    """The memory with `update` applied (a new record: records are values)."""
    if update.slot != "gates":
        return memory.model_copy(update={update.slot: update.text[:SLOT_CEILING]})
    rules = list(memory.gates.rules if memory.gates is not None else ())
    if update.remove is not None:
        rules = [r for r in rules if r.action != update.remove]
    elif update.rule is not None:
        same = [i for i, r in enumerate(rules) if (r.action, r.scope) == (update.rule.action, update.rule.scope)]
        if same:
            rules[same[0]] = update.rule
        else:
            rules.append(update.rule)
    return memory.model_copy(update={"gates": GateTable(rules=tuple(rules))})


def gate_changes(before: MemoryRecord, after: MemoryRecord) -> tuple[list[str], list[str]]:
    """The gate rules `after` adds and removes relative to `before`, each as its one-line description."""
    old = {r.describe() for r in (before.gates.rules if before.gates else ())}
    new = {r.describe() for r in (after.gates.rules if after.gates else ())}
    return sorted(new - old), sorted(old - new)
