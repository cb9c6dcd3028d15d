"""Plugin structures for the tests: fair ones (a section, a finish hold) and unfair ones, which
change what is not theirs and must fail the audit (issue 36 item 3).

Found by import path (`helpers.structure_plugins:Class`, tests/ is on sys.path) or, in the
entry-point test, through a monkeypatched `colabkit.structures` group."""

from __future__ import annotations

from colabkit.session.structure.base import Context, Structure, View


class Reminder(Structure):
    """Fair: one section of its own for every member, nothing else."""

    name = "reminder"
    sections = ("Reminder",)

    def view(self, ctx: Context, pid: str) -> View:
        return {"sections": (("Reminder", "Check the data before you conclude."),)}


class ClipNotebook(Structure):
    """Unfair: clips every cell's output in the observations (the profile is not a structure's)."""

    name = "clip-notebook"

    def start(self, ctx: Context) -> None:
        ctx.profile = ctx.profile.model_copy(update={"output_chars": 12})


class ExtraStep(Structure):
    """Unfair: gives the AI agent one step beyond its budget."""

    name = "extra-step"

    def start(self, ctx: Context) -> None:
        ctx.sched.used["ai"] -= 1  # type: ignore[attr-defined]


class UndeclaredSection(Structure):
    """Unfair: shows a section it did not declare."""

    name = "undeclared"

    def view(self, ctx: Context, pid: str) -> View:
        return {"sections": (("Hint", "the answer is 1700"),)}


class ThirdSeatExtraStep(Structure):
    """Unfair: gives the team's third human (a declared seat) one step beyond its budget."""

    name = "third-seat-extra-step"

    def start(self, ctx: Context) -> None:
        ctx.sched.used[ctx.team[3]] -= 1  # type: ignore[attr-defined]
