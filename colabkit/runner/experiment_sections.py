"""The parts of an experiment config: task selection, budgets, concurrency, executor, arms.

Each is a strict, frozen pydantic model (an unknown key is an error naming it), validated
where it is declared so `Experiment` only checks how they combine. Kept apart from
`runner.experiment` so the config's file reading and grid building stay readable there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from colabkit.llm import ModelConfig

SESSION_ROLES = ("default", "ai", "D", "R")
SIMULATED_ROLES = ("D", "R")


class StrictModel(BaseModel):
    """Frozen, and an unknown key is an error (a typo in a config never passes silently)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class TaskSelection(StrictModel):
    """Which tasks: by id (or metadata prefix), split and dataset folder, under `data_root`.

    `data_root: null` means the shipped demo tasks. The filters combine as in `load_tasks`.
    """

    data_root: Path | None = None
    ids: tuple[str, ...] | None = None
    split: str | None = None
    folders: tuple[str, ...] | None = None
    """Dataset folders (or metadata domains), e.g. ["archaeology"]."""


class LLMBudget(StrictModel):
    """Per-session caps on model spending; a session that reaches one ends `llm_budget`."""

    max_cost_per_session: float | None = Field(default=None, ge=0)
    max_tokens_per_session: int | None = Field(default=None, ge=1)


class Concurrency(StrictModel):
    """How much runs at once: sessions in one process, live kernels, notebook processes.

    A session holds its kernel for its whole life, so at most min(sessions, kernels)
    sessions run in one process; `notebooks` bounds `colabkit batch`'s parallel
    run_variant notebooks (each its own process). `kernels: null` (the default) derives the
    cap from the machine's memory and cores and the sandbox limits (`runner.capacity`).
    """

    sessions: int = Field(default=4, ge=1)
    kernels: int | None = Field(default=None, ge=1)
    notebooks: int = Field(default=2, ge=1)


class Executor(StrictModel):
    """Where sessions run: in this process (`local`) or as tasks on a Dask cluster."""

    kind: Literal["local", "dask"] = "local"
    scheduler: str | None = None
    """The Dask scheduler address (`tcp://host:8786`); required for `dask`."""

    @model_validator(mode="after")
    def _address(self) -> Executor:
        if self.kind == "dask" and not self.scheduler:
            raise ValueError("executor 'dask' needs a scheduler address (executor.scheduler)")
        return self


class SettingsArm(StrictModel):
    """One arm of an experiment: a name and the `SessionSettings` fields it replaces."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    settings: dict[str, Any] = Field(min_length=1)


class SimulatorArm(StrictModel):
    """One simulator of a sweep: a name and the models that play the simulated humans."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    models: dict[str, str | ModelConfig] = Field(min_length=1)
    """Model per simulated-human role ("D", "R"): a litellm string or ModelConfig fields."""

    @field_validator("models")
    @classmethod
    def _human_roles(cls, value: dict[str, str | ModelConfig]) -> dict[str, str | ModelConfig]:
        others = [r for r in value if r not in SIMULATED_ROLES]
        if others:
            raise ValueError(f"a simulator plays only {' and '.join(SIMULATED_ROLES)}, not {', '.join(map(repr, others))} "
                             "(the AI's model is the experiment's `models`)")
        return no_person_seats(value)


def no_person_seats(value: dict[str, str | ModelConfig]) -> dict[str, str | ModelConfig]:
    """`value` (models per role) when no role is a person's seat; else a ValueError naming them."""
    persons = [role for role, m in value.items() if (m if isinstance(m, str) else m.model).startswith("person/")]
    if persons:  # a batch runs headless (papermill, Dask): nobody would be at the seat
        raise ValueError(f"role(s) {', '.join(persons)} are person seats: a batch never waits for a person; "
                         "run a person's session with notebooks/take_a_seat.ipynb (colabkit seat)")
    return value


def unique(values: tuple, what: str) -> tuple:
    """`values` when none repeats; else a ValueError naming the repeated ones."""
    dupes = sorted({str(v) for v in values if values.count(v) > 1})
    if dupes:
        raise ValueError(f"repeated {what}(s): {', '.join(dupes)}")
    return values
