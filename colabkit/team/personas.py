"""The team's members: the AI agent and the simulated humans D (Data Analyst) and R (Researcher).

A persona is the fixed private prompt pi_u of the study: the only thing (besides the
hidden-profile briefing) that makes D different from R. The prompts live as text files in
`prompts/` so they can be read and reviewed as prose; each starts with a `version:` line that
is carried into the `Persona`, so a session record can say exactly which prompt was used.
Editing a prompt means bumping its version.

The simulated humans' prompts share one frame (issue 16: "the only variables are the persona
prompts and the collaboration structure", so a persona differs from another only in who it is
and what it knows). The contract of a human prompt file: its role line starts with "You are ",
its knowledge line with "You know "; every other line (`persona_frame`) is the frame, word for
word the same in every human persona. Shared rules come from Co-Gym's simulated user
(`collaborative_gym/nodes/simulated_user.py`: answer even with "I don't know", one piece of
information at a time, no hallucination beyond the private info, no debugging for the agent).
`colabkit audit` and the tests check the contract.

`knows` names the slices of a task this persona privately holds (see `briefing.py`); it is
part of the persona so that user-defined personas can take any side of the hidden profile.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from colabkit.errors import ColabkitError

AI_ID = "ai"
Knowledge = Literal["domain_knowledge", "datasets"]

# id -> (display name, role, prompt file, private knowledge)
_BUILTIN: dict[str, tuple[str, Literal["ai", "human"], str, tuple[Knowledge, ...]]] = {
    AI_ID: ("AI agent", "ai", "ai.md", ()),
    "D": ("Data Analyst", "human", "data_analyst.md", ("datasets",)),
    "R": ("Researcher", "human", "researcher.md", ("domain_knowledge",)),
}
PERSONA_IDS: tuple[str, ...] = tuple(_BUILTIN)
_VERSION_LINE = re.compile(r"^version:\s*(\S+)\s*$")
ROLE_LINE = "You are "
KNOWLEDGE_LINE = "You know "


class Persona(BaseModel):
    """One team member's identity and fixed private prompt (a value: frozen)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9_-]+$")
    name: str = Field(min_length=1)
    role: Literal["ai", "human"]
    version: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    knows: tuple[Knowledge, ...] = ()


def parse_prompt_file(text: str, source: str) -> tuple[str, str]:
    """Split a prompt file into (version, prompt); the first line must be `version: <v>`."""
    first, _, rest = text.partition("\n")
    match = _VERSION_LINE.match(first.strip())
    if not match:
        raise ColabkitError(f"{source}: first line must be 'version: <version>', got {first[:60]!r}")
    prompt = rest.strip()
    if not prompt:
        raise ColabkitError(f"{source}: the prompt after the version line is empty")
    return match.group(1), prompt


@cache
def persona(pid: str) -> Persona:
    """The shipped persona `pid` ("ai", "D" or "R"), read once from its prompt file."""
    if pid not in _BUILTIN:
        raise ColabkitError(f"unknown persona {pid!r}; valid: {', '.join(PERSONA_IDS)}")
    name, role, filename, knows = _BUILTIN[pid]
    text = resources.files("colabkit.team").joinpath("prompts", filename).read_text(encoding="utf-8")
    version, prompt = parse_prompt_file(text, f"colabkit/team/prompts/{filename}")
    return Persona(id=pid, name=name, role=role, version=version, prompt=prompt, knows=knows)


def persona_frame(p: Persona) -> tuple[str, ...]:
    """The prompt's lines other than its role and knowledge lines (see the module docstring)."""
    lines = (line.strip() for line in p.prompt.splitlines())
    return tuple(line for line in lines if line and not line.startswith((ROLE_LINE, KNOWLEDGE_LINE)))
