"""The worked example of a plugin structure: an evidence checklist the finish is gated on.

Group psychology's evidence checklist (a team agrees beforehand what a result must show, and a
member checks it before the team commits) written against `Structure` (`base`) in one class:

- every member's observation holds an "Evidence checklist" section: the items and who checks
  them (the signatory's own copy says how to decide);
- a finish by anyone but the signatory is held (`hold`) as a request `req-N` in the engine's
  ledger, addressed to the signatory, who approves it (the finish takes effect, the editor is
  submitted) or rejects it naming the missing item (the session goes on). Everything else about
  a request is the engine's: the signatory sees it with the cells it depends on, and the
  closing pass decides it before any end.

Options (`VariantConfig.structures`, in YAML `structure: [default, evidence-checklist]` with
`options:`): `signatory` (a human on the team; default R when on the team, else the first
human) and `items` (the checklist; default `DEFAULT_ITEMS`, at most `MAX_ITEMS` lines of at most
`ITEM_CHARS` characters). It adds no action and no build phase, so the audit allows exactly its
section (and, as it holds the finish, the held requests' sections and decisions) to differ from
the Default twin.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from colabkit.session.actions import Action
from colabkit.session.structure.base import Context, Structure, View
from colabkit.team import GateRule, VariantConfig

TITLE = "Evidence checklist"
DEFAULT_ITEMS = (
    "the hypothesis names the variables it relates and the direction of the relation",
    "a code cell in the notebook computed the statistic the hypothesis rests on",
    "the hypothesis states the condition or subgroup it holds for, or that it holds for all",
)
MAX_ITEMS = 6
ITEM_CHARS = 160
NOTE = "evidence checklist"


class EvidenceChecklist(Structure):
    """A finish takes effect only once the signatory has checked the result against the list."""

    name = "evidence-checklist"
    sections = (TITLE,)
    holds = ("finish",)

    def __init__(self, variant: VariantConfig, options: Mapping[str, Any] | None = None) -> None:
        super().__init__(variant, options)
        humans = variant.humans
        default = "R" if "R" in humans else (humans[0] if humans else "")
        self.signatory = str(self.options.get("signatory", default))
        if self.signatory not in humans:
            raise ValueError(f"signatory: {self.signatory or '(none)'!r} is not a human on the team "
                             f"({', '.join(humans) or 'no humans'}); the checklist needs a human to check it")
        items = self.options.get("items", DEFAULT_ITEMS)
        if isinstance(items, str) or not items or len(items) > MAX_ITEMS \
                or not all(isinstance(i, str) and 0 < len(i.strip()) <= ITEM_CHARS for i in items):
            raise ValueError(f"items: 1 to {MAX_ITEMS} lines of text, each at most {ITEM_CHARS} characters")
        self.items = tuple(" ".join(i.split()) for i in items)

    def check_options(self) -> None:
        extra = sorted(set(self.options) - {"signatory", "items"})
        if extra:
            raise ValueError(f"unknown option(s) {', '.join(extra)}; it takes signatory and items")

    def view(self, ctx: Context, pid: str) -> View:
        lines = [f"A finish takes effect only after {self.signatory} checks the result editor against this list "
                 "and approves; until then it is held as a request.", *(f"- {item}" for item in self.items)]
        if pid == self.signatory:
            lines.append("You check the finish: approve it only if the result editor meets every item; otherwise "
                         "reject it and name the missing item.")
        return {"sections": ((TITLE, "\n".join(lines)),)}

    def hold(self, ctx: Context, action: Action, proposer: str) -> GateRule | None:
        if action.type != "finish" or proposer == self.signatory:
            return None
        return GateRule(action="finish", signatory=self.signatory, note=NOTE)
