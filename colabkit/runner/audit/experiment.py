"""The audit of an experiment: per settings arm, its variants rendered and hunted (`colabkit audit`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from colabkit.errors import ColabkitError
from colabkit.runner.audit.hunt import hunt
from colabkit.runner.audit.render import AuditReport, audit_specs
from colabkit.runner.build import build_spec
from colabkit.runner.experiment import Experiment
from colabkit.session import SessionSpec
from colabkit.tasks import Task

QUICK_EXAMPLES = 0
"""`--quick` (a hook's audit): the known scenarios only, in-memory."""
FULL_EXAMPLES = 12
"""The full search: the known scenarios, one of them on a real kernel, then this many generated ones."""
HUNT_TASKS = 2
"""How many of the experiment's tasks the hunt draws from."""


def audit_experiment(exp: Experiment, *, task_id: str | None = None, seed: int | None = None,
                     variants: Sequence[str] | None = None, hunting: bool = True, quick: bool = True,
                     examples: int | None = None, workdir_root: Path | None = None) -> dict[str, AuditReport]:
    """The audit of `exp`'s variants on one task (default: its first) and seed (default: its
    first), one report per settings arm and simulator ("arm/simulator", either part left out
    when the experiment has none; "" with neither): within one only the design may differ;
    between them the settings or the simulated humans' models differ by design. With
    `hunting` the first simulator's report of each arm also holds the hunt over its variants
    (`hunt`; the double answers for every model, so one per arm suffices): `quick` plays the
    known scenarios only, otherwise `examples` (default `FULL_EXAMPLES`) generated ones too
    and one on a real kernel."""
    suite = exp.load_suite()
    task = suite.get(task_id) if task_id is not None else suite.tasks[0]
    names = tuple(variants) if variants else exp.variants
    unknown = [v for v in names if v not in exp.variants]
    if unknown:
        raise ColabkitError(f"variant(s) {', '.join(map(repr, unknown))} not in experiment {exp.name!r}")
    chosen_seed = exp.seeds[0] if seed is None else seed
    tasks = {t.id: t for t in [task, *(t for t in suite.tasks if t.id != task.id)][:1 if quick else HUNT_TASKS]}
    reports = {}
    for arm, settings in exp.arm_settings().items():
        for k, (simulator, models) in enumerate(exp.simulator_models().items()):
            specs = [build_spec(task.id, exp.variant_config(name), chosen_seed, models=models, settings=settings)
                     for name in names]
            name = "/".join(part for part in (arm, simulator) if part)
            reports[name] = audit(specs, task, hunting=hunting and k == 0, quick=quick, examples=examples,
                                  tasks=tasks, arm=name, workdir_root=workdir_root)
    return reports


def audit(specs: Sequence[SessionSpec], task: Task, *, hunting: bool = True, quick: bool = True,
          examples: int | None = None, tasks: dict[str, Task] | None = None, arm: str = "",
          workdir_root: Path | None = None) -> AuditReport:
    """The rendering audit of `specs` and, with `hunting`, the hunt inside it."""
    report = audit_specs(specs, task)
    if hunting:
        count = QUICK_EXAMPLES if quick else FULL_EXAMPLES if examples is None else examples
        report.hunt = hunt(specs, tasks or {task.id: task}, arm=arm, examples=count, real=not quick,
                           workdir_root=workdir_root)
    return report
