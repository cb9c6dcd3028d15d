"""What a structure's declaration projects out of a request (the audit's `same-trace`, `trace`).

`declared` reads a variant's declared parts from its composition (`Structure`'s class
attributes: sections, actions, holds, the build, whether it decides requests of its own);
`project_prompt`, `project_choices` and `project_schema` take them out of a request's prompt,
a repair's listed choices and the answer schema, so what is left is the common part a Default
twin sends too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from colabkit.runner.audit.player import schema_of
from colabkit.session.structure.base import Structure
from colabkit.session.structure.registry import structures_for
from colabkit.team import VariantConfig

DECISIONS = ("approve", "reject")
_THOUGHT = re.compile(r"^(?:- r\d+ ([a-z_]+):|\[your private thought, r\d+ -> ([a-z_]+)\])")
_HEADING = re.compile(r"\n\n(?=# )")
_REQUEST_ID = re.compile(r"^(?:req|upd)-\d+$")
_LISTED = re.compile(r"Input should be ((?:'[^']*'(?:, | or )?)+)")
SHARED_SECTIONS = ("Code cells", "Activity", "Result editor", "Your last step")
"""The engine's sections (`structure.base.ENGINE_SECTIONS`, by the start of their titles) that
show what members did: a held action shows there once applied, so where a hold fired they are
compared only before it."""


@dataclass(frozen=True)
class Declared:
    """What a variant's structures declare (`Structure`'s class attributes), the only parts of a
    trace allowed to differ from its Default twin's."""

    sections: frozenset[str] = frozenset()
    actions: frozenset[str] = frozenset()
    holds: frozenset[str] = frozenset()
    decides: bool = False
    builds: bool = False
    fields: frozenset[str] = frozenset()
    """Answer fields that are the added actions' own (a team's `to`: the recipients of its messages)."""

    def __or__(self, other: Declared) -> Declared:
        return Declared(self.sections | other.sections, self.actions | other.actions, self.holds | other.holds, self.decides or other.decides, self.builds or other.builds,
                        self.fields | other.fields)

    @property
    def own_actions(self) -> frozenset[str]:
        """The actions whose turns are the structure's: its own, and decisions where it decides."""
        return self.actions | (frozenset(DECISIONS) if self.decides else frozenset())


def declared(variant: VariantConfig) -> Declared:
    """`variant`'s declared parts, read from its composition (the study's structures and plugins)."""
    out = Declared()
    for s in structures_for(variant):
        cls = type(s)
        out = out | Declared(frozenset(cls.sections), frozenset(cls.actions), frozenset(cls.holds), bool(cls.holds) or cls.open_ids is not Structure.open_ids,
                             cls.builds)
    return out


def sections_of(text: str) -> list[tuple[str, str]]:
    """A prompt as (section title, text), in order ("" for text before the first heading)."""
    out = []
    for part in _HEADING.split(text):
        if part.startswith("# "):
            title = part.split("\n", 1)[0][2:]
            out.append((re.split(r" \(|:|,", title)[0].strip(), part))
        else:
            out.append(("", part))
    return out


def project_prompt(text: str, dec: Declared, shared: bool) -> str:
    """A user prompt without the structure's sections (and, unless `shared`, the shared ones);
    in "Valid actions" without the lines of its actions."""
    kept = []
    for title, part in sections_of(text):
        if title in dec.sections or (not shared and title.startswith(SHARED_SECTIONS)):
            continue
        if title == "Valid actions":
            part = "\n".join(line for line in part.splitlines()
                             if not (line.startswith("- ") and line[2:].split(":")[0] in dec.own_actions))
        if dec.actions:  # the thought of a structure's own act is the act's (its twin's member could not act)
            lines = [line for line in part.splitlines() if not _thought_of(line, dec.actions)]
            if len(lines) == 1 and title == "Your recent thoughts":
                continue
            part = "\n".join(lines)
        kept.append(part)
    return "\n\n".join(kept)


def _thought_of(line: str, actions: frozenset[str]) -> bool:
    """Whether a prompt line is a member's thought of one of `actions` ("- r2 act: ..." in its
    thoughts, "[your private thought, r2 -> act]" in the timeline)."""
    found = _THOUGHT.match(line)
    return found is not None and (found.group(1) or found.group(2)) in actions


def project_choices(text: str, dec: Declared) -> str:
    """A repair prompt with the choices its validation error lists ("Input should be 'a', 'b' or
    'c'") as a set without the structure's actions."""
    def listed(found: re.Match[str]) -> str:
        values = sorted(set(re.findall(r"'([^']*)'", found.group(1))) - dec.own_actions)
        return "Input should be one of " + ", ".join(f"'{v}'" for v in values)
    return _LISTED.sub(listed, text)


def project_schema(params: dict[str, Any], dec: Declared) -> str:
    """The answer schema without the structure's enum values (its actions, request ids)."""
    name, schema = schema_of(params)
    own = dec.own_actions

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: strip(v) for k, v in node.items()}
            if isinstance(out.get("properties"), dict):
                out["properties"] = {k: v for k, v in out["properties"].items() if k not in dec.fields}
            if isinstance(out.get("description"), str):  # help text: its clauses naming the structure's actions go
                out["description"] = ", ".join(clause for clause in out["description"].split(", ")
                                               if not any(a in clause for a in dec.own_actions))
            if isinstance(out.get("enum"), list):
                out["enum"] = [v for v in out["enum"] if not (isinstance(v, str) and (v in own or _REQUEST_ID.match(v)))]
            return out
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return f"{name} {json.dumps(strip(schema), sort_keys=True)}"


def answer_action(answer: str) -> str:
    try:
        value = json.loads(answer)
    except ValueError:
        return ""
    return str(value.get("action", "")) if isinstance(value, dict) else ""
