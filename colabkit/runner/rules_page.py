"""docs/rules.md, "the rules as a member reads them": cut from prompts the engine renders.

Nothing here is written twice: every quoted block is a section of a prompt rendered by
`prompt_lint.render_all` (the engine's own code, on the bundled demo task, under the default
settings and the embedded model's profile), or the text a setting puts in its place
(`colabkit.session.rules`, `SessionSettings.end_rule`). `colabkit prompts rules` prints the
page, and a test keeps docs/rules.md equal to it, so the page cannot drift from the prompts.
"""

from __future__ import annotations

from colabkit.runner.build import build_spec
from colabkit.runner.prompt_lint import Rendered, render_all
from colabkit.session.rules import GATE_COSTS, budget_line
from colabkit.session.scheduler import Scheduler
from colabkit.session.settings import SessionSettings, Side
from colabkit.tasks import load_tasks

TASK_ID = "demo_archaeology/0/0"
SIDES: dict[str, Side] = {"ai": "ai", "D": "human", "R": "human"}

INTRO = """# The rules as a member reads them

Every rule the engine enforces is stated to the members it binds, in the words below. This page
is generated (`colabkit prompts rules`) from prompts the engine renders for a Scaffolded team of
the AI agent (ai), the Data Analyst (D) and the Researcher (R) on the bundled demo task, under
the default settings and the embedded model's profile, so its numbers (30 steps, 160-character
slots) are those; a test keeps it equal to what the engine renders. `colabkit prompts lint`
checks every prompt of an experiment against the engine's own figures
([fidelity](fidelity.md) says what the engine does)."""


def _quote(text: str) -> str:
    return "\n".join(f"    {line}" if line else "" for line in text.strip("\n").splitlines())


def _section(prompt: Rendered, title: str, *, skip_first: bool = False) -> str:
    body = prompt.sections()[title]
    return "\n".join(body.splitlines()[1:]) if skip_first else body


def _now(prompt: Rendered) -> str:
    return "# " + prompt.user.rsplit("\n\n# ", 1)[-1]


def rules_page() -> str:
    """The page's markdown (see the module docstring)."""
    task = load_tasks().get(TASK_ID)
    prompts = {p.where: p for p in render_all(build_spec(TASK_ID, "scaffolded-dr", 0), task)}
    cogym = SessionSettings(termination="either_side")
    parts = [
        INTRO,
        "## Before the task: the memory build\n\nEvery member of a memory variant reads the build's rules "
        "(here with the gates a Scaffolded team chooses), then what its stage asks:",
        _quote(_section(prompts["scaffolded-dr/D/propose"], "Memory build")),
        *(f"- {stage}: " + prompts[where].sections()["Your part now"] for stage, where in (
            ("propose (every member)", "scaffolded-dr/D/propose"),
            ("consolidate (the AI agent)", "scaffolded-dr/ai/consolidate"),
            ("ratify (every human)", "scaffolded-dr/D/ratify"),
            ("amend (the AI agent, if anyone amended)", "scaffolded-dr/ai/amend"))),
        "## The session's end and each member's steps\n\nEvery task step's \"Team\" section, after the team's "
        "names: the end rule (the same for every member and variant), then the member's own steps. The AI agent:",
        _quote(_section(prompts["scaffolded-dr/ai/step"], "Team", skip_first=True)),
        "A simulated human (D):",
        _quote(_section(prompts["scaffolded-dr/D/step"], "Team", skip_first=True).splitlines()[-1]),
        "## What a member may do now\n\nThe \"Valid actions\" list is exactly the actions the answer's schema "
        "offers at that step. R, with a request open for it:",
        _quote(_section(prompts["scaffolded-dr/R/step"], "Valid actions")),
        "A member's own step never offers approve or reject (it decides in decision steps, below), so the list "
        "is the Default twin's. Once its steps are spent a member takes no more steps but its decision steps; "
        "the AI agent alone may finish; `propose_memory_update` is offered only where the memory lives (Dynamic).",
        "## The gate rules\n\nEvery member of a gated variant reads the gates in force, what a held action "
        "costs, the data-changing rule with the names that exist now, the gates it signs and the held edits of "
        "the result it proposed or signs (the editor shows only the text in force). R, after two cells:",
        _quote(_section(prompts["scaffolded-dr/R/step"], "Gate rules")),
        "## Decision steps the engine adds\n\nAt its turn, before its own step, a member with a request open "
        "for it (under `gate_latency: at_once` also right after the proposal):",
        _quote(_section(prompts["scaffolded-dr/R/decision"], "Valid actions")),
        _quote(_now(prompts["scaffolded-dr/R/decision"])),
        "The closing pass (before the session ends, every open request is decided):",
        _quote(_now(prompts["scaffolded-dr/R/closing"])),
        "## What the settings change\n\n`gate_latency: at_once` replaces what a gate costs (in the build and the "
        "gate rules) with:",
        _quote(GATE_COSTS["at_once"]),
        "`memory_proposals: independent` makes the build's steps say \"every member proposes (nobody sees "
        "another's proposal)\".",
        "`termination: either_side` (Co-Gym's rule) makes the end rule and a human's steps read:",
        _quote(f"{cogym.end_rule()}\n{budget_line(Scheduler(cogym, SIDES), 'D')}"),
    ]
    return "\n\n".join(parts) + "\n"
