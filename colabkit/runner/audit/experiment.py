"""The audit of an experiment: per settings arm, its variants rendered and run (`colabkit audit`)."""

from __future__ import annotations

from collections.abc import Sequence

from colabkit.errors import ColabkitError
from colabkit.runner.audit.behaviour import audit_behaviour
from colabkit.runner.audit.render import AuditReport, audit_specs
from colabkit.runner.build import build_spec
from colabkit.runner.experiment import Experiment
from colabkit.session import SessionSpec
from colabkit.tasks import Task


def audit_experiment(exp: Experiment, *, task_id: str | None = None, seed: int | None = None,
                     variants: Sequence[str] | None = None, behaviour: bool = True) -> dict[str, AuditReport]:
    """The audit of `exp`'s variants on one task (default: its first) and seed (default: its
    first), one report per settings arm and simulator ("arm/simulator", either part left out
    when the experiment has none; "" with neither): within one only the design may differ;
    between them the settings or the simulated humans' models differ by design. With
    `behaviour` each report also holds the behavioural audit of the same specs."""
    suite = exp.load_suite()
    task = suite.get(task_id) if task_id is not None else suite.tasks[0]
    names = tuple(variants) if variants else exp.variants
    unknown = [v for v in names if v not in exp.variants]
    if unknown:
        raise ColabkitError(f"variant(s) {', '.join(map(repr, unknown))} not in experiment {exp.name!r}")
    chosen_seed = exp.seeds[0] if seed is None else seed
    reports = {}
    for arm, settings in exp.arm_settings().items():
        for simulator, models in exp.simulator_models().items():
            specs = [build_spec(task.id, name, chosen_seed, models=models, settings=settings) for name in names]
            reports["/".join(part for part in (arm, simulator) if part)] = audit(specs, task, behaviour=behaviour)
    return reports


def audit(specs: Sequence[SessionSpec], task: Task, *, behaviour: bool = True) -> AuditReport:
    """The rendering audit of `specs` and, with `behaviour`, the behavioural one inside it."""
    report = audit_specs(specs, task)
    if behaviour:
        report.behaviour = audit_behaviour(specs, task)
    return report
