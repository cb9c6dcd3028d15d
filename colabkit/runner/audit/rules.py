"""The rendering audit's rules: for each section of what a participant is given, the design
causes allowed to decide whether it is shown and what it says (`render` compares by them;
`trace` reads the composition's part of a prompt from them)."""

from __future__ import annotations

from dataclasses import dataclass

CAUSES = {
    "team": "(a) which personas are on the team",
    "personas": "(a) the persona prompts",
    "memory": "(b) the memory and its build phase",
    "gated": "(c) the gate rules",
    "gate_chooser": "(c) who chose the gates",
    "living": "(b) the memory lives: members may update it during the task (Dynamic, beyond the study)",
}
BUILD_STAGES = ("propose", "consolidate", "ratify", "amend")


@dataclass(frozen=True)
class Rule:
    """The causes allowed to decide whether a section is shown, and what it says."""

    presence: frozenset[str] = frozenset()
    text: frozenset[str] = frozenset()


def _rule(presence: str = "", text: str = "") -> Rule:
    return Rule(frozenset(presence.split()), frozenset(text.split()))


# Keys are "<stage>: <section>"; stages are "task", the build stages and "facts".
RULES: dict[str, Rule] = {
    "task: system 1": _rule(text="personas"),  # the persona prompt
    "task: Your private briefing": _rule(text="personas"),  # what the persona knows
    "task: Shared Group Memory": _rule(presence="memory", text="living"),  # "frozen" or "living, version N"
    "task: Gate rules": _rule(presence="gated", text="team"),
    "task: Gate rules (set by line)": _rule(presence="gated", text="gate_chooser"),
    "task: Team": _rule(text="team"),
    "task: Valid actions": _rule(text="team living"),  # living: propose_memory_update
    "task: Now": _rule(text="team"),  # whose budget: "you" or "D and R together"
    "facts: valid actions": _rule(text="team living"),
    "facts: persona version": _rule(text="personas"),
    **{f"{stage}: {section}": rule for stage in BUILD_STAGES for section, rule in {
        "system 1": _rule(presence="memory", text="personas"),
        "system 2": _rule(presence="memory"),
        "Task": _rule(presence="memory"),
        "Your private briefing": _rule(presence="memory", text="personas"),
        "Memory build": _rule(presence="memory", text="living"),  # its last sentence: frozen, or living
        "Memory build (team line)": _rule(presence="memory", text="team"),
        "Memory build (gates line)": _rule(presence="memory gated"),
        "Proposals so far": _rule(presence="memory team", text="team gated"),
        "Consolidated memory (draft)": _rule(presence="memory", text="team gated"),
        "Consolidated memory (draft, JSON)": _rule(presence="memory", text="team gated"),
        "Amendments": _rule(presence="memory", text="team"),
        "Your part now": _rule(presence="memory", text="gated"),
    }.items()},
}
NO_CAUSE = Rule()
