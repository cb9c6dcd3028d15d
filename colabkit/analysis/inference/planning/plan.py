"""The analysis plan: what is claimed, how alpha is spent over the claims, fixed before the data.

A reviewer can only trust a decision whose procedure was fixed in advance. The plan names:

- **Hypotheses** (`hypotheses`): the study's claims (`colabkit.analysis.inference.planning.hypotheses`:
  H1 process loss, H2 structure, H3 decomposition, H4 redistribution, H5 living memory where
  planned), each with its variants, metric and direction, or a researcher's own list.
- **One study-wise error rate**: the graphical procedure of Bretz et al. (2009)
  (`colabkit.analysis.inference.planning.graph`) over the hypotheses and, last, every other planned
  test of the families (`exploratory`, Holm among themselves): the familywise error over *all*
  of them is at most `alpha`, strongly. Every row shows the procedure-adjusted p and the
  decision; there is no within-family p that could be read as a decision.
- **Tests**: the task-clustered t (CR1 SE, t on G - 1 df), one-sided tests as the two-sided p
  when the estimate lies in the claimed direction (else 1); equivalence by the standardised
  TOST (`margin_sd` of the between-task SD); a studentized sign-flip test over tasks stands
  beside it (unadjusted, robustness); the random-slope mixed model corroborates, unadjusted.
  A contrast with no spread between tasks (within `zero_tolerance`) has no t; it is decided
  by its exact sign-flip p, and flagged.
- **Power** (`colabkit.analysis.inference.power_analysis.simulate`): the whole procedure simulated at the
  planned tasks x seeds on the study's data shape, for `effects` (default: the paper's).

`plan_hash` identifies a plan by content; every table carries it (`with_plan`). The plan file
(`colabkit.analysis.inference.planning.plan_file`) adds when it was written, how many sessions existed
then, and its version and reason when it amends an earlier one.
"""

from __future__ import annotations

from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from colabkit.analysis.inference.planning.families import FAMILIES
from colabkit.analysis.inference.planning.hypotheses import Hypothesis, check_hypotheses, default_hypotheses
from colabkit.analysis.scores import COMPOSITIONS, STRUCTURES, STUDY_METRICS
from colabkit.errors import ColabkitError
from colabkit.evaluation import metric_columns
from colabkit.hashing import sha256_hex

PLAN_SCHEMA_VERSION: Literal[2] = 2
PLAN_FILE = "analysis_plan.json"
NO_PLAN = "no plan: the default plan (no analysis_plan.json was written)"
ALL_VARIANTS = ("single", *(f"{s}-{c}" for s in STRUCTURES[1:] for c in COMPOSITIONS[1:]))
"""Every variant the suite knows: the default plan's (all families complete)."""


class AnalysisPlan(BaseModel):
    """An experiment's analysis plan (module docstring); build with `analysis_plan`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: Literal[2] = PLAN_SCHEMA_VERSION
    experiment: str = ""
    variants: tuple[str, ...] = ALL_VARIANTS
    hypotheses: tuple[Hypothesis, ...] = ()
    metrics: tuple[str, ...] = STUDY_METRICS
    alpha: float = Field(default=0.05, gt=0, lt=1)
    procedure: str = ("graphical (Bretz et al. 2009) over the hypotheses, then every other planned test "
                      "(exploratory, Holm among themselves): one study-wise FWER at alpha")
    tests: str = ("task-clustered t (CR1, t on tasks - 1 df) decides; one-sided as the two-sided p in the claimed "
                  "direction; equivalence by the standardised TOST; studentized sign-flip over tasks beside it "
                  "(unadjusted); random-slope mixed model corroborates (unadjusted)")
    sign_flips: int = Field(default=100_000, ge=1000)
    sign_flip_seed: int = 0
    exact_flips: int = Field(default=2**16, ge=2)
    zero_tolerance: float = Field(default=1e-9, gt=0)
    power_delta: float = Field(default=0.05, gt=0)
    power_target: float = Field(default=0.8, gt=0, lt=1)
    estimand: str = ("the mean paired difference (A - B, same task and seed) over the experiment's tasks and seeds; "
                     "for the study, all 38 DiscoveryBench real/test archaeology tasks (the whole domain split: a "
                     "population, not a sample), tasks treated as exchangeable for inference, at the study's "
                     "models, personas and budgets")
    tasks_available: int | None = None
    planned_tasks: int = Field(default=38, ge=2)
    planned_seeds: int = Field(default=3, ge=1)
    equivalence_margin_sd: float = Field(default=0.5, gt=0)
    """Termination and simulator equivalence: the margin in between-task SDs of the difference."""

    @model_validator(mode="before")
    @classmethod
    def _default_hypotheses(cls, data: object) -> object:
        """No hypotheses given: the paper's claims the planned variants can test."""
        if isinstance(data, dict) and not data.get("hypotheses"):
            return {**data, "hypotheses": default_hypotheses(tuple(data.get("variants", ALL_VARIANTS)))}
        return data

    @model_validator(mode="after")
    def _hypotheses_valid(self) -> AnalysisPlan:
        check_hypotheses(self.hypotheses, self.variants)
        return self

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

    _status: str = PrivateAttr(default=NO_PLAN)

    @property
    def status(self) -> str:
        """Where the plan came from (`colabkit.analysis.inference.planning.plan_file`); not part of its hash."""
        return self._status

    def with_status(self, status: str) -> AnalysisPlan:
        """This plan, labelled with where it came from."""
        plan = self.model_copy()
        plan._status = status
        return plan

    @property
    def label(self) -> str:
        """The plan in a few words for a caption: its version and hash, and whether it
        predates the data (from its status)."""
        if self._status == NO_PLAN:
            return f"no plan (the default, {self.plan_hash})"
        head = " ".join(self._status.split(",")[0].split()[:3])
        if "does not predate the data" in self._status:
            return f"{head}, does not predate the data"
        return f"{head}, predates the data" if "predates the data" in self._status else head

    @property
    def plan_hash(self) -> str:
        """The plan's content hash (sha256 of its canonical JSON), shortened to 12 hex digits."""
        return sha256_hex(self)[:12]

    @property
    def first_step_alpha(self) -> float:
        """The largest level any test starts at (alpha x the largest initial weight): what the
        closed-form power per test (`power_table`) is planned at; the simulation plans the rest."""
        return self.alpha * max((h.weight for h in self.hypotheses), default=0.0)


def analysis_plan(variants: tuple[str, ...] | list[str] = ALL_VARIANTS, **fields: object) -> AnalysisPlan:
    """A plan for `variants` (the experiment's planned grid) with any field replaced."""
    try:
        return AnalysisPlan.model_validate({"variants": tuple(variants), **fields})
    except ValueError as exc:
        raise ColabkitError(f"analysis plan: {' '.join(str(exc).split())}") from None


def family_of_test(structure_a: str, structure_b: str) -> str:
    """The family (a label: the procedure is one graph) of one planned test."""
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
                    rows.extend({"family": family_of_test(structure_a, structure_b),
                                 "composition": composition, "metric": metric, "a": a, "b": b,
                                 "component": label} for metric in plan.metrics)
    return pd.DataFrame(rows, columns=list(PLANNED_COLUMNS))


def with_plan(table: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """`table` with the hash of the plan it was made under (`plan_hash`) and what that plan is
    (`plan_status`: its version and whether it predates the data, from the sessions' record,
    or "no plan" when the default was used because none was written; `plan_label`: the same in
    a few words, for captions)."""
    return table.assign(plan_hash=plan.plan_hash, plan_status=plan.status, plan_label=plan.label)


def plan_summary(plan: AnalysisPlan) -> pd.DataFrame:
    """The plan's hypotheses: claim, test, initial share of alpha and where its level goes."""
    rows = [{"hypothesis": h.name, "family": h.family, "claim": h.claim, "test": f"{h.a} - {h.b} on {h.metric}",
             "direction": h.direction + (f" (margin {h.margin_sd:g} SD)" if h.direction == "equivalent" else ""),
             "initial alpha": plan.alpha * h.weight,
             "when declared, passes to": ", ".join(f"{k} {v:g}" for k, v in h.then.items()) or "exploratory tests"}
            for h in plan.hypotheses]
    columns = ["hypothesis", "family", "claim", "test", "direction", "initial alpha", "when declared, passes to"]
    return pd.DataFrame(rows, columns=columns).set_index("hypothesis").rename_axis(f"plan {plan.plan_hash}")
