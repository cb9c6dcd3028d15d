"""Approval gating: which actions need whose signature before they take effect.

A gate table is a list of rules `action -> signatory` with a structured `scope` and a free
text `note`. The session layer asks `GateTable.rule_for(...)` for each proposed action; a
returned rule means the action becomes a pending request routed to `rule.signatory`, `None`
means it takes effect at once.

Scope is what the machine enforces, deterministically: `all` gates every action of the
type; `data_changing` (only for `execute_code`) gates only code that changes data by the
operational rule of `colabkit.team.datachange` (a cell that assigns to or changes a name that
existed before it, or writes a file), the rule every member of such a variant is shown, so a
team (or the preassigned table) can gate data handling without gating every exploratory cell. The note is words a team wrote during the memory build ("if
it changes the time bins"); words cannot be judged cheaply and deterministically, so the
note never narrows a gate: it is shown to the signatory with the request, who decides.

A gate means exactly what was chosen, with no silent rerouting (issue 8, item 5):
- when the named signatory is the proposer, the action is ungated: nobody signs their own
  work, and nobody else was chosen;
- a rule naming someone not on the team is dropped before the session (`for_team`), and the
  drop is reported: in the memory's mapping report for a team's own gates, in the variant's
  table for preassigned ones (see `DEFAULT_PREASSIGNED_GATES`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from colabkit.errors import ColabkitError
from colabkit.team.datachange import data_changes

ACTION_TYPES = ("send_message", "execute_code", "edit_result", "approve", "reject", "finish", "wait")
# Deciding on a request or doing nothing cannot itself wait for a decision.
GATEABLE_ACTIONS = tuple(a for a in ACTION_TYPES if a not in ("approve", "reject", "wait"))
GateScope = Literal["all", "data_changing"]
NOTE_MAX_CHARS = 120


def is_data_changing(code: str, existing: Iterable[str] = ()) -> bool:
    """Whether `code` changes data, given the names that existed before it: the one operational
    rule of `colabkit.team.datachange` (`data_changes` says why)."""
    return bool(data_changes(code, existing))


class GateRule(BaseModel):
    """`action` by anyone but `signatory` needs `signatory`'s approval, within `scope`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: str
    signatory: str = Field(min_length=1)
    scope: GateScope = "all"
    note: str = Field("", max_length=NOTE_MAX_CHARS)

    @field_validator("action")
    @classmethod
    def _gateable(cls, action: str) -> str:
        if action not in GATEABLE_ACTIONS:
            raise ColabkitError(f"gate action {action!r} cannot be gated; valid: {', '.join(GATEABLE_ACTIONS)}")
        return action

    @model_validator(mode="after")
    def _scope_fits_action(self) -> GateRule:
        if self.scope == "data_changing" and self.action != "execute_code":
            raise ColabkitError(f"gate scope 'data_changing' applies to execute_code only, not {self.action!r}")
        return self

    def applies(self, content: str | None, existing: Iterable[str] = ()) -> bool:
        """Whether this rule's scope covers an action with this content (the code), given the
        names that existed before it (`existing`, for the data-changing rule).

        Without content a `data_changing` scope is assumed to apply, so a forgotten payload
        errs towards gating.
        """
        if self.scope == "data_changing" and content is not None:
            return is_data_changing(content, existing)
        return True

    def terms(self) -> str:
        """The scope and note as the signatory reads them with a request ('' for neither)."""
        parts = ["data-changing code only"] if self.scope == "data_changing" else []
        if self.note:
            parts.append(f"note: {self.note}")
        return "; ".join(parts)

    def describe(self) -> str:
        """One line for observations, e.g. `execute_code (data-changing code only) -> D`."""
        terms = self.terms()
        return f"{self.action}{f' ({terms})' if terms else ''} -> {self.signatory}"


class GateTable(BaseModel):
    """An ordered list of gate rules; the first rule that applies to an action decides."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rules: tuple[GateRule, ...] = ()

    def rule_for(self, action_type: str, proposer: str, *, content: str | None = None,
                 existing: Iterable[str] = ()) -> GateRule | None:
        """The rule gating this proposal, or None when it takes effect at once.

        The first rule for the action whose scope covers `content` (with the names `existing`
        before it, `colabkit.team.datachange`) decides; if it names the
        proposer as signatory, the action is ungated (see the module docstring). The table
        is assumed restricted to the team (`for_team`).
        """
        if action_type not in ACTION_TYPES:
            raise ColabkitError(f"unknown action type {action_type!r}; valid: {', '.join(ACTION_TYPES)}")
        for rule in self.rules:
            if rule.action == action_type and rule.applies(content, existing):
                return None if rule.signatory == proposer else rule
        return None

    def for_team(self, team: Sequence[str]) -> tuple[GateTable, tuple[str, ...]]:
        """This table without the rules whose signatory is not on `team`, and a report line per drop."""
        kept = tuple(rule for rule in self.rules if rule.signatory in team)
        report = tuple(f"gate {rule.describe()} dropped: {rule.signatory} is not on the team"
                       for rule in self.rules if rule.signatory not in team)
        return GateTable(rules=kept), report

    def render(self) -> str:
        """The table as one line per rule, or a sentence saying nothing is gated."""
        if not self.rules:
            return "none: every action takes effect directly"
        return "; ".join(rule.describe() for rule in self.rules)


DEFAULT_PREASSIGNED_GATES = GateTable(
    rules=(
        GateRule(action="edit_result", signatory="R"),
        GateRule(action="finish", signatory="R"),
        GateRule(action="execute_code", signatory="D", scope="data_changing"),
    )
)
"""The study's preassigned gating: R signs the result and the end (evidence standards), D
signs code that changes data (data handling). Messages stay ungated. Each preassigned
variant enforces this table restricted to its team (`GateTable.for_team`): preassigned-dr
all three rules; preassigned-r only R's (data-changing code is ungated, as no Data Analyst
is there to check it); preassigned-d only D's (edits and the finish are ungated). Nobody is
drafted in for an absent signatory, so the gate still means "the expert for this signs"."""
