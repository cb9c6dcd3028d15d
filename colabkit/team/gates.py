"""Approval gating: which actions need whose signature before they take effect.

A gate table is a list of rules `action -> signatory`, optionally with a condition. The
session layer asks `GateTable.rule_for(...)` for each proposed action; a returned rule means
the action becomes a pending request routed to `rule.signatory`, `None` means it takes
effect at once.

Conditions come in two kinds, because tables come from two sources:
- `DATA_CHANGING` is a machine condition, evaluated deterministically on the action's
  content (the code) by `is_data_changing`; the preassigned default uses it so that D only
  signs code that changes data, not every exploratory cell.
- Any other condition is words a team wrote during the memory build ("if it changes the
  time bins"). Words cannot be judged cheaply and deterministically, so such a rule gates
  every action of its type and the signatory, who sees the condition in the request, judges
  whether it applies.

Fallback when the named signatory cannot sign (not on the team, or is the proposer -- nobody
signs their own request): another human on the team who is not the proposer (the first in
team order); else the AI agent if the proposer is a human; else the action is ungated (an AI
proposal in a team with no other eligible human has nobody left to check it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from colabkit.errors import ColabkitError
from colabkit.team.personas import AI_ID

ACTION_TYPES = ("send_message", "execute_code", "edit_result", "approve", "reject", "finish", "wait")
# Deciding on a request or doing nothing cannot itself wait for a decision.
GATEABLE_ACTIONS = tuple(a for a in ACTION_TYPES if a not in ("approve", "reject", "wait"))
DATA_CHANGING = "data-changing"
GateScope = Literal["all", "data_changing"]
CONDITION_MAX_CHARS = 120

# File writes: pandas/numpy writers, open() in a write mode, path writers, deletions/moves.
_WRITES = re.compile(
    r"""\.to_(csv|excel|parquet|json|pickle|feather|hdf|sql|stata|orc)\s*\("""
    r"""|\bopen\s*\([^)]*['"][rbt]*[wax+][rbt+]*['"]"""
    r"""|\.write_(text|bytes)\s*\(|\bnp\.save(txt|z)?\s*\("""
    r"""|\bos\.(remove|unlink|rename|replace|rmdir)\s*\(|\bshutil\.|\.unlink\s*\("""
)
# In-place mutation of existing objects: item assignment (incl. .loc/.iloc), inplace=True,
# replacing columns/index, del of items or attributes, mutating methods.
_MUTATES = re.compile(
    r"""\]\s*(\*\*|//|[-+*/%&|^])?=(?!=)"""
    r"""|\binplace\s*=\s*True\b"""
    r"""|\.(columns|index)\s*=(?!=)"""
    r"""|\bdel\s+\w+\s*[\[.]"""
    r"""|\.(insert|pop|update|set_axis)\s*\("""
)
# Rebinding a name from itself (`df = df.dropna()`): the shared kernel's data changes.
_SELF_REBIND = re.compile(r"^[ \t]*([A-Za-z_]\w*)\s*(\*\*|//|[-+*/%&|^])?=(?!=)[^\n]*\b\1\b", re.M)
_STRINGS = re.compile("|".join((r"'''.*?'''", r'""".*?"""', r"'[^'\n]*'", r'"[^"\n]*"')), re.S)
_COMMENTS = re.compile(r"#[^\n]*")


def is_data_changing(code: str) -> bool:
    """Whether code writes files or mutates data already in the shared kernel.

    A cheap, deterministic regex judgement, deliberately conservative: new names bound to
    computed values (`m = df.groupby(...).mean()`), plots and prints are not data-changing;
    file writes, item/column assignment, `inplace=True`, `del`, mutating methods and
    rebinding a name from itself (`df = df[df.x > 0]`) are. String literals and comments are
    blanked first so that text like `print("a[0]=1")` does not count.
    """
    if _WRITES.search(code):
        return True
    bare = _COMMENTS.sub("", _STRINGS.sub('""', code))
    return bool(_MUTATES.search(bare) or _SELF_REBIND.search(bare))


class GateRule(BaseModel):
    """`action` by anyone needs `signatory`'s approval (when `condition` applies)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: str
    signatory: str = Field(min_length=1)
    condition: str = Field("", max_length=CONDITION_MAX_CHARS)

    @field_validator("action")
    @classmethod
    def _gateable(cls, action: str) -> str:
        if action not in GATEABLE_ACTIONS:
            raise ColabkitError(f"gate action {action!r} cannot be gated; valid: {', '.join(GATEABLE_ACTIONS)}")
        return action

    def applies(self, content: str | None) -> bool:
        """Whether this rule gates an action with this content (see module docstring)."""
        if self.condition == DATA_CHANGING and content is not None:
            return is_data_changing(content)
        return True

    @property
    def scope(self) -> GateScope:
        return "data_changing" if self.condition == DATA_CHANGING else "all"

    @property
    def note(self) -> str:
        return "" if self.condition == DATA_CHANGING else self.condition

    def describe(self) -> str:
        """One line for observations and requests, e.g. `execute_code (data-changing) -> D`."""
        cond = f" ({self.condition})" if self.condition else ""
        return f"{self.action}{cond} -> {self.signatory}"


class GateTable(BaseModel):
    """An ordered list of gate rules; the first rule that applies to an action decides."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rules: tuple[GateRule, ...] = ()

    def rule_for(
        self, action_type: str, proposer: str, team: Sequence[str], *, content: str | None = None
    ) -> GateRule | None:
        """The rule gating this proposal, with the signatory who will actually sign, or None.

        `team` lists every participant id (the AI agent included). `content` is the action's
        payload (the code for `execute_code`); without it a machine condition is assumed to
        apply, so a forgotten payload errs towards gating. The returned rule's `signatory`
        is the effective one after the fallback described in the module docstring; it is
        never the proposer.
        """
        if action_type not in ACTION_TYPES:
            raise ColabkitError(f"unknown action type {action_type!r}; valid: {', '.join(ACTION_TYPES)}")
        for rule in self.rules:
            if rule.action != action_type or not rule.applies(content):
                continue
            signatory = _effective_signatory(rule.signatory, proposer, team)
            if signatory is None:
                return None
            return rule if signatory == rule.signatory else rule.model_copy(update={"signatory": signatory})
        return None

    def render(self) -> str:
        """The table as one line per rule, or a sentence saying nothing is gated."""
        if not self.rules:
            return "none: every action takes effect directly"
        return "; ".join(rule.describe() for rule in self.rules)


def _effective_signatory(named: str, proposer: str, team: Sequence[str]) -> str | None:
    if named in team and named != proposer:
        return named
    for member in team:
        if member not in (AI_ID, proposer):
            return member
    if proposer != AI_ID and AI_ID in team:
        return AI_ID
    return None


DEFAULT_PREASSIGNED_GATES = GateTable(
    rules=(
        GateRule(action="edit_result", signatory="R"),
        GateRule(action="finish", signatory="R"),
        GateRule(action="execute_code", signatory="D", condition=DATA_CHANGING),
    )
)
"""The study's preassigned gating: R signs the result and the end (evidence standards), D
signs code that changes data (data handling). Messages stay ungated."""
