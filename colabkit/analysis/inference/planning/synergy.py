"""Synergy as exploratory tests of the plan: a team against its members working alone (issue 47).

Vaccaro, Almaatouq and Malone (2024) define **strong synergy** as a team above the best of its
members working alone and **weak synergy** as a team above a member alone (here: above the
average of its members alone); Steiner (1972) calls a team's shortfall against what its
members could do **process loss** (here: below the AI agent alone, `single`). A team's members
alone are the AI (`single`) and each of its personas alone (`solo-d`, `solo-r`): the same task,
seed, workspace and clock.

The tests are fixed by the plan's variants, never by the data, like the families'
(`families`): a team variant of the plan gets its three tests when `single` and the solo
variants of its personas are planned too, so a plan without solo variants (the paper's, the
default) plans none and is unchanged (its hash too). On Performance, one-sided:

- `strong`: team - member alone > 0 for every member (an intersection-union test: its p is
  the largest of the comparisons', its estimate and interval the binding comparison's, which
  is the best member's where the data separate them); no member is picked from the data;
- `weak`: team - the mean of its members alone > 0 (one contrast, task-clustered);
- `process-loss`: team - single < 0.

They are **exploratory**: they join the plan's exploratory tests, which the graph reaches only
with level the claims pass on and which pass nothing back (`hypotheses.study_graph`), so the
claims' decisions and the study-wise error rate over everything are what they were
(`decisions.decide`; a test checks it). A synergy test's decision is the procedure's like
every other row's: "not reached" when no level came to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from colabkit.analysis.inference.planning.hypotheses import Contrast

Kind = Literal["strong", "weak", "process-loss"]
KINDS: tuple[Kind, ...] = ("strong", "weak", "process-loss")
SYNERGY_FAMILY = "synergy"
SYNERGY_METRIC = "performance"
CLAIMS: dict[Kind, str] = {
    "strong": "strong synergy: the team above the best of its members alone",
    "weak": "weak synergy: the team above the average of its members alone",
    "process-loss": "process loss: the team below the AI agent alone",
}


class SynergyTest(BaseModel):
    """One planned synergy test of a team variant."""

    model_config = ConfigDict(frozen=True)

    team: str
    kind: Kind
    alone: tuple[str, ...]
    """The team's members working alone (variant names), `single` first."""
    direction: Literal["greater", "less"]
    contrasts: tuple[Contrast, ...]
    """One per comparison (several: an intersection, declared only when every one is)."""
    metric: str = SYNERGY_METRIC

    @property
    def claim(self) -> str:
        return CLAIMS[self.kind]


def members_alone(team: str, variants: Sequence[str]) -> tuple[str, ...] | None:
    """`single` and the solo variants of `team`'s personas, when all are in `variants` (else None).
    A team is a planned variant `<structure>-<composition>` with humans (d, r, dr)."""
    structure, _, composition = team.rpartition("-")
    if not structure or structure in ("single", "solo") or composition not in ("d", "r", "dr"):
        return None
    alone = ("single", *(f"solo-{pid}" for pid in composition))
    return alone if set(alone) <= set(variants) else None


def synergy_tests(variants: Sequence[str], metric: str = SYNERGY_METRIC) -> list[SynergyTest]:
    """Every synergy test the planned `variants` fix (module docstring), team by team in plan order."""
    tests = []
    for team in variants:
        alone = members_alone(team, variants)
        if alone is None:
            continue
        tests += [
            SynergyTest(team=team, kind="strong", alone=alone, direction="greater", metric=metric,
                        contrasts=tuple(((team, member, 1.0),) for member in alone)),
            SynergyTest(team=team, kind="weak", alone=alone, direction="greater", metric=metric,
                        contrasts=(tuple((team, member, 1.0 / len(alone)) for member in alone),)),
            SynergyTest(team=team, kind="process-loss", alone=alone, direction="less", metric=metric,
                        contrasts=(((team, "single", 1.0),),)),
        ]
    return tests
