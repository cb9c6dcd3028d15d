"""The analysis plan: what is tested, at which level, in which family, fixed before the data.

A reviewer can only trust an adjusted p-value whose family was fixed in advance. So the
families are built from the experiment's *planned* variants and a fixed metric list, never
from what the score table holds: a test whose variants or scores are missing still counts,
as p = 1, in its family (`colabkit.analysis.inference.families.holm`), so one failed variant
never makes the others easier, and the same test has the same adjusted p whatever subset of
metrics or pairs a table shows.

- **Primary endpoint** (`primary`): Performance, Scaffolded - Default, per composition (three
  tests, one Holm family: `primary`).
- **Secondary families**: `scaffolded-default` (the same pair on the other metrics),
  `decomposition` (the four diagnostic components on every metric), `living-memory` (Dynamic -
  Scaffolded on every metric, when planned).
- **Gatekeeping** (`gate`): secondary families are declared significant only when the
  primary family rejected - every one of its tests (`all`, serial gatekeeping: with Holm
  inside each family, the familywise error of the primary and of each secondary family stays
  at alpha) or at least one (`any`, looser, said so in the table). Their p-values are shown
  either way.
- **Tests**: the task-clustered t (CR1 SE, t on G - 1 df) decides; a studentized sign-flip
  test over tasks (`sign_flips` random flips from `sign_flip_seed`, or every flip when 2^G is
  at most `exact_flips`) stands beside it; the random-slope mixed model corroborates,
  unadjusted. A contrast with no spread between tasks (within `zero_tolerance`) has no t; it
  is decided by its exact sign-flip p, and flagged.
- **Power** is planned at the level of the primary family's first Holm step
  (`first_step_alpha`: alpha / its size), at `power_target`, for `power_delta`.
- **Termination sensitivity**: a rule x variant interaction per metric, equivalent when its
  90% CI lies inside +/- the metric's margin (`equivalence_margins`, TOST at alpha).

`plan_hash` identifies a plan by content; every table carries it (`with_plan`) and every figure
names it, so a result says which plan it was made under. `colabkit plan-analysis CONFIG`
writes `analysis_plan.json` into the experiment's results folder before it runs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from colabkit.analysis.inference.families import FAMILIES
from colabkit.analysis.scores import COMPOSITIONS, STRUCTURES, STUDY_METRICS
from colabkit.errors import ColabkitError
from colabkit.evaluation import metric_columns
from colabkit.hashing import sha256_hex

PLAN_SCHEMA_VERSION: Literal[1] = 1
PLAN_FILE = "analysis_plan.json"
ALL_VARIANTS = ("single", *(f"{s}-{c}" for s in STRUCTURES[1:] for c in COMPOSITIONS[1:]))
"""Every variant the suite knows: the default plan's (all families complete)."""
DEFAULT_MARGINS = {"h_init_norm": 0.05, "s_hyp": 0.05, "performance": 0.05, "hms": 0.05, "w_total": 0.1,
                   "w_human": 0.1, "delivered": 0.05}
"""Termination sensitivity: the change of a contrast between session-end rules deemed negligible."""


class Endpoint(BaseModel):
    """One contrast on one metric: structure `a` - structure `b`, per composition."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    metric: str = "performance"
    a: str = "scaffolded"
    b: str = "default"


class AnalysisPlan(BaseModel):
    """An experiment's analysis plan (module docstring); build with `analysis_plan`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: Literal[1] = PLAN_SCHEMA_VERSION
    experiment: str = ""
    variants: tuple[str, ...] = ALL_VARIANTS
    primary: Endpoint = Endpoint()
    metrics: tuple[str, ...] = STUDY_METRICS
    alpha: float = Field(default=0.05, gt=0, lt=1)
    gate: Literal["all", "any"] = "all"
    tests: str = ("task-clustered t (CR1, t on tasks - 1 df) decides; studentized sign-flip over tasks beside it; "
                  "random-slope mixed model corroborates (unadjusted); Holm within each family")
    sign_flips: int = Field(default=100_000, ge=1000)
    sign_flip_seed: int = 0
    exact_flips: int = Field(default=2**16, ge=2)
    zero_tolerance: float = Field(default=1e-9, gt=0)
    power_delta: float = Field(default=0.05, gt=0)
    power_target: float = Field(default=0.8, gt=0, lt=1)
    tasks_available: int | None = None
    equivalence_margins: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_MARGINS))

    @field_validator("metrics")
    @classmethod
    def _metrics_known(cls, metrics: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(metrics) - set(STUDY_METRICS))
        if unknown:  # beyond the study's: any column a built-in or an installed plugin metric fills
            known = {*STUDY_METRICS, *metric_columns()}
            unknown = sorted(set(metrics) - known)
        if unknown:
            raise ValueError(f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(sorted(known))} "
                             "(a metric plugin's columns once it is installed, colabkit.metrics)")
        return metrics

    @property
    def plan_hash(self) -> str:
        """The plan's content hash (sha256 of its canonical JSON), shortened to 12 hex digits."""
        return sha256_hex(self)[:12]

    @property
    def first_step_alpha(self) -> float:
        """The per-test level of the primary family's first Holm step: what power is planned at."""
        return self.alpha / max(1, int((planned_tests(self)["family"] == "primary").sum()))


def analysis_plan(variants: tuple[str, ...] | list[str] = ALL_VARIANTS, **fields: object) -> AnalysisPlan:
    """A plan for `variants` (the experiment's planned grid) with any field replaced."""
    try:
        return AnalysisPlan.model_validate({"variants": tuple(variants), **fields})
    except ValueError as exc:
        raise ColabkitError(f"analysis plan: {' '.join(str(exc).split())}") from None


def family_of_test(plan: AnalysisPlan, structure_a: str, structure_b: str, metric: str) -> str:
    """The Holm family of one planned test (module docstring)."""
    if (structure_a, structure_b, metric) == (plan.primary.a, plan.primary.b, plan.primary.metric):
        return "primary"
    for name, pairs in FAMILIES.items():
        if any((a, b) == (structure_a, structure_b) for a, b, _ in pairs):
            return name
    raise ColabkitError(f"no family holds the contrast {structure_a} - {structure_b}")


PLANNED_COLUMNS = ("family", "composition", "metric", "a", "b", "component")


def planned_tests(plan: AnalysisPlan) -> pd.DataFrame:
    """Every test the plan fixes: one row per (family, composition, metric, A, B, component),
    for the pairs whose two variants are both planned."""
    planned, rows = set(plan.variants), list[dict[str, str]]()
    for pairs in FAMILIES.values():
        for structure_a, structure_b, label in pairs:
            for composition in COMPOSITIONS[1:]:
                a, b = f"{structure_a}-{composition}", f"{structure_b}-{composition}"
                if a in planned and b in planned:
                    rows.extend({"family": family_of_test(plan, structure_a, structure_b, metric),
                                 "composition": composition, "metric": metric, "a": a, "b": b,
                                 "component": label} for metric in plan.metrics)
    return pd.DataFrame(rows, columns=list(PLANNED_COLUMNS))


def with_plan(table: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """`table` with the hash of the plan it was made under (column `plan_hash`)."""
    return table.assign(plan_hash=plan.plan_hash)


def plan_document(plan: AnalysisPlan) -> str:
    """`analysis_plan.json`'s text: the plan, its hash, its families' sizes and the power level."""
    families = planned_tests(plan)["family"].value_counts().to_dict()
    return json.dumps({"plan": plan.model_dump(mode="json"), "plan_hash": plan.plan_hash,
                       "family_sizes": families, "first_step_alpha": plan.first_step_alpha}, indent=1) + "\n"


def read_plan(path: Path | str) -> AnalysisPlan:
    """The plan in an `analysis_plan.json` (a file or the folder holding it); its hash checked."""
    path = Path(path)
    path = path / PLAN_FILE if path.is_dir() else path
    try:
        document = json.loads(path.read_text())
        plan = AnalysisPlan.model_validate(document["plan"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ColabkitError(f"cannot read the analysis plan {path}: {' '.join(str(exc).split())}") from None
    if document.get("plan_hash") != plan.plan_hash:
        raise ColabkitError(f"analysis plan {path} was edited after it was written (hash "
                            f"{document.get('plan_hash')} != {plan.plan_hash}): write it again with plan-analysis")
    return plan


def plan_for(folder: Path | str, variants: Sequence[str] | None = None) -> tuple[AnalysisPlan, str]:
    """The plan an experiment's folder holds (written before the data), else the default plan
    for its planned `variants` (every variant when None), with a line saying which it is."""
    path = Path(folder) / PLAN_FILE
    if path.is_file():
        plan = read_plan(path)
        return plan, f"analysis plan {plan.plan_hash}, written before the data: {path}"
    plan = analysis_plan(tuple(variants) if variants is not None else ALL_VARIANTS)
    return plan, (f"NO {PLAN_FILE} in {folder}: the default plan {plan.plan_hash} for the planned variants "
                  "(write one before the data with `colabkit plan-analysis CONFIG`)")


def plan_summary(plan: AnalysisPlan) -> pd.DataFrame:
    """Per family: its planned tests, the level, and when it is tested (the gate)."""
    sizes = planned_tests(plan).groupby("family", sort=False).size()
    gate = "every" if plan.gate == "all" else "a"
    return pd.DataFrame({"planned tests": sizes, "alpha (Holm, familywise)": plan.alpha,
                         "tested": ["always" if f == "primary" else f"when {gate} primary test rejects"
                                    for f in sizes.index]}).rename_axis(f"plan {plan.plan_hash}")
