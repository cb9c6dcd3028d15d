"""Experiment configs: one YAML file says which sessions a study runs and how.

An experiment is a grid (variants x tasks x seeds) plus what every session of it shares
(models per role, session settings such as action budgets and the observation profile, LLM
budgets) and how to run it (concurrency, executor) and score it (judge, metrics). The file
is validated by pydantic; a mistake is one `ColabkitError` line naming the file and every
problem (`experiments/x.yaml: unknown key sedes (did you mean seeds?)`; `config_errors`).

Its identity (`Experiment.identity`) hashes exactly what determines the sessions (the
selected task ids, not the filter or the data's path), so the folder `<results>/<name>-<hash8>/` holds one grid's sessions and nothing else; the judge,
metrics, concurrency and executor are left out, so re-scoring with another judge or running
on more workers finds the same sessions instead of rerunning them (and so are LLM spending
caps, so a raised cap retries the sessions that hit it). Relative paths resolve
against the config file's folder (so a notebook started anywhere reads the same paths), and
`$VARS` in paths are expanded.

Settings arms: `arms` (optional) runs the whole grid once per arm, each arm the common
`settings` with a few fields replaced (`experiments/sensitivity.yaml`: the 13 variants under
`termination: either_side` and under `all_sides`, same tasks and seeds). An arm's settings are
part of each of its sessions' spec, hence of the session identity: the two arms' sessions
never collide, and a later experiment asking for one arm finds the sessions already run. The
arm a session belongs to is read back from its spec (`SessionSettings`), never from a name.

Simulator sweep: `simulators` (optional) runs the grid once per simulator, each naming the
models that play D and R (`experiments/simulators.yaml`); the AI's model stays the
experiment's. The models are part of the spec, so each simulator's sessions are its own, and
a session whose team has no simulated human (the single agent) is the same session under
every simulator: it runs once. As with arms, the simulator of a session is read back from
its spec's models, never from a name.

Your own study: `variants` takes inline definitions beside registered names, and `personas`
declares the personas they add (`colabkit.team.declare`; docs/your-own-study.md); they are
resolved on load into `declared`, whose configs enter the identity. A metric plugin's import
path in `metrics` (`file.py:Class`) resolves against the config's folder. `contrasts` names
the comparisons the study is about (`[[preassigned-dre, default-dr]]`); the analysis estimates
them like the paper's (`colabkit.analysis.own_contrasts`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal

import yaml
from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from colabkit.errors import ColabkitError
from colabkit.evaluation import ScoringConfig, available_metrics
from colabkit.evaluation.plugins import is_import_path
from colabkit.hashing import sha256_hex
from colabkit.llm import DEFAULT_MODEL, ModelConfig
from colabkit.runner.build import build_spec, model_config
from colabkit.runner.config_errors import config_error
from colabkit.runner.executors.capacity import KernelCap, machine_kernel_cap
from colabkit.runner.experiment_sections import (
    SESSION_ROLES,
    Concurrency,
    Executor,
    LLMBudget,
    SettingsArm,
    SimulatorArm,
    StrictModel,
    TaskSelection,
    no_person_seats,
    unique,
)
from colabkit.session import SessionSettings, SessionSpec
from colabkit.session.structure.registry import structures_for
from colabkit.tasks import Task, TaskSuite, load_tasks
from colabkit.team import SOLO_VARIANT_NAMES, VARIANT_NAMES, VariantConfig
from colabkit.team import variant as registered_variant
from colabkit.team.declare import declare_in, read_yaml

EXPERIMENT_SCHEMA_VERSION: Final = 1
METRICS = available_metrics()
"""The metrics an experiment scores by default: the evaluation layer's default scorers."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class Experiment(StrictModel):
    """One experiment config (see the module docstring); build with `load_experiment`."""

    schema_version: Literal[1] = EXPERIMENT_SCHEMA_VERSION
    name: str
    description: str = ""
    tasks: TaskSelection = TaskSelection()
    declared: tuple[VariantConfig, ...] = ()
    """The inline variants (written in the file's `variants:`, their personas read; see
    `colabkit.team.declare`); `variants` names them among the registered ones."""
    variants: tuple[str, ...] = Field(min_length=1)
    contrasts: tuple[tuple[str, str], ...] = ()
    """The comparisons the study is about, `[A, B]` for A - B, each two of its variants; none:
    each variant the paper's families do not compare is compared with its Default twin when
    one ran (`colabkit.analysis.own_contrasts`). Not in the identity: they choose the analysis,
    not the sessions."""
    seeds: tuple[int, ...] = Field(min_length=1)
    models: dict[str, str | ModelConfig] = Field(default_factory=lambda: _embedded_for_all())
    """Model per role ("default", "ai", "D", "R"): a litellm string or ModelConfig fields."""
    settings: SessionSettings = SessionSettings()
    """Every session's settings (action budgets, rounds, observation profile, kernel limits)."""
    arms: tuple[SettingsArm, ...] = ()
    """Optional settings arms (see the module docstring); none: one grid under `settings`."""
    simulators: tuple[SimulatorArm, ...] = ()
    """Optional simulator sweep (see the module docstring); none: the humans play `models`."""
    llm_budget: LLMBudget = LLMBudget()
    judge: str | ModelConfig = DEFAULT_MODEL
    metrics: tuple[str, ...] = METRICS
    judge_repeats: int = Field(default=1, ge=1)
    """How many times the judge answers each question (2+ gives the agreement across repeats)."""
    concurrency: Concurrency = Concurrency()
    executor: Executor = Executor()
    results: Path = Path("results")
    """Results root; this experiment's sessions go to `<results>/<name>-<hash8>/`."""
    source: Path | None = None
    """The file it was read from (set by `load_experiment`; not part of the identity)."""
    _suite: TaskSuite | None = PrivateAttr(default=None)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"{value!r} must be letters, digits, '.', '_' or '-' (it names a folder)")
        return value

    @field_validator("variants")
    @classmethod
    def _variants(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        valid = (*VARIANT_NAMES, *SOLO_VARIANT_NAMES, *(v.name for v in info.data.get("declared", ())))
        unknown = [v for v in value if v not in valid]
        if unknown:
            raise ValueError(f"unknown variant(s) {', '.join(map(repr, unknown))}; valid: {', '.join(valid)}")
        return unique(value, "variant")

    @field_validator("contrasts", mode="before")
    @classmethod
    def _pairs(cls, value: object) -> object:
        if not isinstance(value, list | tuple) or not all(
                isinstance(pair, list | tuple) and len(pair) == 2 and all(isinstance(v, str) for v in pair)
                for pair in value):
            raise ValueError(f"{value!r}: a list of pairs [A, B] of variant names (A - B), e.g. "
                             "[[preassigned-dre, default-dr]]")
        return value

    @field_validator("contrasts")
    @classmethod
    def _contrasts(cls, value: tuple[tuple[str, str], ...], info: ValidationInfo) -> tuple[tuple[str, str], ...]:
        variants = info.data.get("variants")
        if variants is None:  # the variants have their own error
            return value
        for a, b in value:
            unknown = [v for v in (a, b) if v not in variants]
            if unknown:
                raise ValueError(f"[{a}, {b}]: {', '.join(map(repr, unknown))} not a variant of this experiment "
                                 f"({', '.join(variants)})")
            if a == b:
                raise ValueError(f"[{a}, {b}]: a variant compared with itself")
        repeated = sorted({f"[{a}, {b}]" for a, b in value if value.count((a, b)) > 1})
        if repeated:
            raise ValueError(f"repeated contrast(s): {', '.join(repeated)}")
        return value

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if any(s < 0 for s in value):
            raise ValueError("seeds must be non-negative integers")
        return unique(value, "seed")

    @field_validator("models")
    @classmethod
    def _roles(cls, value: dict[str, str | ModelConfig]) -> dict[str, str | ModelConfig]:
        unknown = [r for r in value if r not in SESSION_ROLES]
        if unknown:
            raise ValueError(f"unknown role(s) {', '.join(map(repr, unknown))}; valid: {', '.join(SESSION_ROLES)} "
                             "(the judge has its own field; a declared persona plays on the 'default' model, as "
                             "SessionSpec takes per-role models for ai, D and R only)")
        return no_person_seats(value)

    @model_validator(mode="after")
    def _arms(self) -> Experiment:
        unique(tuple(arm.name for arm in self.arms), "arm")
        unique(tuple(sim.name for sim in self.simulators), "simulator")
        self.arm_settings()  # every arm's fields must make valid settings
        return self

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        known = available_metrics(opt_in=True)  # the installed metric plugins included
        unknown = [m for m in value if m not in known and not is_import_path(m)]
        if unknown:
            raise ValueError(f"unknown metric(s) {', '.join(map(repr, unknown))}; valid: {', '.join(known)} "
                             "or an import path (module:Class, file.py:Class)")
        return unique(value, "metric")

    # -- what it runs ---------------------------------------------------------------------
    def arm_settings(self) -> dict[str, SessionSettings]:
        """Settings per arm name ({"": settings} without arms)."""
        if not self.arms:
            return {"": self.settings}
        out = {}
        for arm in self.arms:
            try:
                out[arm.name] = SessionSettings.model_validate({**self.settings.model_dump(), **arm.settings})
            except ValidationError as exc:
                raise ValueError(f"arm {arm.name!r}: {config_error(exc, SessionSettings)}") from None
        return out

    def judge_config(self) -> ModelConfig:
        return model_config(self.judge)

    def scoring(self, *, only: Sequence[str] | None = None, exclude: Sequence[str] = ()) -> ScoringConfig:
        """The scoring job this experiment asks for: its judge and repeats, over those of its
        metrics in `only` (all when None) and not in `exclude`; the notebooks that score split
        the metrics between them this way, so a metric the config leaves out is never judged."""
        metrics = tuple(m for m in self.metrics if (only is None or m in only) and m not in exclude)
        return ScoringConfig(judge=self.judge_config(), metrics=metrics, repeats=self.judge_repeats)

    def model_configs(self) -> dict[str, ModelConfig]:
        return {role: model_config(m) for role, m in self.models.items()}

    def simulator_models(self) -> dict[str, dict[str, ModelConfig]]:
        """The model map per simulator name ({"": models} without a sweep)."""
        base = self.model_configs()
        if not self.simulators:
            return {"": base}
        return {sim.name: {**base, **{role: model_config(m) for role, m in sim.models.items()}}
                for sim in self.simulators}

    def simulator_of(self, spec: SessionSpec) -> str | None:
        """The simulator whose models play `spec`'s simulated humans (None: it has none, or no
        simulator of this experiment plays them)."""
        for name, models in self.simulator_models().items():
            probe = build_spec(spec.task_id, spec.variant, spec.seed, models=models, settings=spec.settings)
            if spec.variant.humans and all(probe.model_for(r) == spec.model_for(r) for r in spec.variant.humans):
                return name
        return None

    def all_model_configs(self) -> list[ModelConfig]:
        """Every model a session of this experiment may talk to (each simulator's included)."""
        return [m for models in self.simulator_models().values() for m in models.values()]

    def kernel_cap(self) -> KernelCap:
        """The live-kernel cap: the config's, or derived from this machine and the sandbox limits."""
        if self.concurrency.kernels is not None:
            return KernelCap(kernels=self.concurrency.kernels, source="config")
        return machine_kernel_cap(self.settings.limits)

    def identity(self) -> str:
        """sha256 of what determines the sessions: the selected task ids, variants, seeds,
        models and settings.

        The tasks count by the ids they select (so the same tasks under another data root
        path, or selected another way, are the same experiment, and another data set under
        the same filter is not). LLM spending caps are left out: raising one and rerunning
        with `--retry-errors` must find the sessions that hit the old cap.
        """
        return sha256_hex({
            "v": EXPERIMENT_SCHEMA_VERSION, "name": self.name, "task_ids": self.load_suite().ids,
            "variants": self.variants,
            **({"declared": {v.name: v.identity() for v in self.declared}} if self.declared else {}),
            "seeds": self.seeds, "models": {r: m.model_dump(mode="json") for r, m in self.model_configs().items()},
            "settings": self.settings.model_dump(mode="json"),
            **({"arms": {name: s.model_dump(mode="json") for name, s in self.arm_settings().items()}}
               if self.arms else {}),
            **({"simulators": {name: {r: m.model_dump(mode="json") for r, m in models.items()}
                               for name, models in self.simulator_models().items()}}
               if self.simulators else {})})

    @property
    def experiment_id(self) -> str:
        return f"{self.name}-{self.identity()[:8]}"

    def folder(self) -> Path:
        """The folder holding this experiment's sessions, notebooks and tables."""
        return self.results / self.experiment_id

    def load_suite(self) -> TaskSuite:
        """The selected tasks (loaded once per config object)."""
        if self._suite is None:
            sel = self.tasks
            self._suite = load_tasks(sel.data_root, split=sel.split, domains=sel.folders, ids=sel.ids)
        return self._suite

    def sessions(self, variants: Sequence[str] | None = None,
                 suite: TaskSuite | None = None) -> list[tuple[SessionSpec, Task]]:
        """Every (spec, task) of the grid, variant by variant, then arm, then simulator, then task,
        then seed; a session the same under several simulators (no simulated human) once."""
        chosen = self.variants if variants is None else tuple(variants)
        unknown = [v for v in chosen if v not in self.variants]
        if unknown:
            raise ColabkitError(f"variant(s) {', '.join(map(repr, unknown))} not in experiment {self.name!r} "
                                f"({', '.join(self.variants)})")
        suite = suite or self.load_suite()
        arms, simulators = self.arm_settings().values(), self.simulator_models().values()
        items = [(build_spec(task.id, self.variant_config(name), seed, models=models, settings=settings), task)
                 for name in chosen for settings in arms for models in simulators
                 for task in suite.tasks for seed in self.seeds]
        return list({spec.session_id: (spec, task) for spec, task in items}.values())

    def variant_config(self, name: str) -> VariantConfig:
        """The variant `name` as this experiment means it: its inline one, else the registered one."""
        for config in self.declared:
            if config.name == name:
                return config
        return registered_variant(name)

    def session_ids(self) -> list[str]:
        """The ids of the grid's sessions: what the experiment's tables and statistics cover."""
        return [spec.session_id for spec, _ in self.sessions()]

    def uses_embedded_model(self) -> bool:
        configs = [*self.all_model_configs(), self.judge_config()]
        return any(m.provider == "local" for m in configs) or "default" not in self.models

    def dump_yaml(self) -> str:
        """The config as YAML with absolute paths (what batches hand to notebooks)."""
        data = self.model_dump(mode="json", exclude={"source"}, exclude_defaults=False)
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _embedded_for_all() -> dict[str, str | ModelConfig]:
    return {"default": DEFAULT_MODEL}


def _expand(value: Any, base: Path, field: str, source: Path) -> Path | None:
    if value is None:
        return None
    text = os.path.expandvars(str(value))
    if "$" in text:
        hint = " (set it, or give the data folder with --data-root DIR)" if field == "tasks.data_root" else ""
        raise ColabkitError(f"{source}: {field}: environment variable not set in {value!r}{hint}")
    path = Path(text).expanduser()
    return path if path.is_absolute() else (base / path).resolve()


def _plugin_path(metric: str, base: Path) -> str:
    module, _, attr = metric.rpartition(":")
    if not module.endswith(".py") or Path(module).expanduser().is_absolute():
        return metric
    return f"{(base / module).resolve()}:{attr}"


def load_experiment(path: Path | str, *, data_root: Path | str | None = None,
                    results: Path | str | None = None) -> Experiment:
    """Read and validate an experiment YAML file.

    `data_root` and `results`, when given (as on a command line), replace the file's and
    resolve against the current folder rather than the config's.
    """
    path = Path(path)
    raw = read_yaml(path, "experiment config")
    if not isinstance(raw, dict):
        raise ColabkitError(f"{path}: an experiment config is a mapping of fields, got {type(raw).__name__}")
    base = path.resolve().parent
    tasks = raw.get("tasks")
    if isinstance(tasks, dict):
        root = Path(data_root).resolve() if data_root is not None else \
            _expand(tasks.get("data_root"), base, "tasks.data_root", path)
        raw["tasks"] = {**tasks, "data_root": root}
    elif tasks is None and data_root is not None:
        raw["tasks"] = {"data_root": Path(data_root).resolve()}
    raw["results"] = Path(results).resolve() if results is not None else \
        _expand(raw.get("results", "results"), base, "results", path)
    declare_in(raw, base, path)
    if isinstance(raw.get("metrics"), list):  # a metric plugin's file resolves against the config's folder
        raw["metrics"] = [_plugin_path(m, base) if isinstance(m, str) and is_import_path(m) else m
                          for m in raw["metrics"]]
    try:
        exp = Experiment.model_validate({**raw, "source": path.resolve()})
    except ValidationError as exc:
        raise ColabkitError(f"{path}: {config_error(exc, Experiment)}") from None
    for config in exp.declared:  # a plugin structure that cannot be found fails the load, in one line
        try:
            structures_for(config)
        except ColabkitError as exc:
            raise ColabkitError(f"{path}: {exc}") from None
    return exp
