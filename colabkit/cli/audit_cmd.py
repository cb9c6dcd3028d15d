"""`colabkit audit CONFIG`: check that an experiment's variants differ only by design.

Renders what every participant of every variant is given on one task and seed (no model is
called) and compares the variants section by section; then plays one scripted trajectory in
every variant (the audit's own test double answers for every model, through the engine and
the real gateway) and compares the runs: the requests as sent, the AI's steps, the end, the
closing pass (`colabkit.runner.audit`). Prints the differences the design explains (team,
persona prompts, memory, gates and who chose them) and every other difference; exits 1
when there is any other difference. Without CONFIG,
`--variants` (default: all 13) on `--task` (default: the first task) under the default
settings and model.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("audit", help="check that variants differ only in personas and structure",
                                   description=__doc__.split("\n")[0])
    parser.add_argument("config", type=Path, nargs="?", metavar="CONFIG",
                        help="experiment YAML, e.g. experiments/paper.yaml (optional)")
    parser.add_argument("--task", metavar="ID", help="task id (default: the first selected task)")
    parser.add_argument("--seed", type=int, metavar="N", help="seed (default: the experiment's first, else 0)")
    parser.add_argument("--variants", metavar="A,B", help="only these variants (default: all of them)")
    parser.add_argument("--data-root", type=Path, metavar="DIR",
                        help="DiscoveryBench root (replaces the config's tasks.data_root; default: demo tasks)")
    parser.set_defaults(func=_audit)


def _audit(args: argparse.Namespace) -> int:
    from colabkit.errors import ColabkitError
    from colabkit.runner import load_experiment
    from colabkit.runner.audit import audit, audit_experiment
    from colabkit.runner.build import build_spec
    from colabkit.tasks import load_tasks
    from colabkit.team import VARIANT_NAMES

    variants = [v.strip() for v in args.variants.split(",") if v.strip()] if args.variants else None
    if args.variants is not None and not variants:
        raise ColabkitError(f"--variants names no variant: {args.variants!r}")
    if args.config is not None:
        exp = load_experiment(args.config, data_root=args.data_root)
        reports = audit_experiment(exp, task_id=args.task, seed=args.seed, variants=variants)
    else:
        suite = load_tasks(args.data_root)
        task = suite.get(args.task) if args.task else suite.tasks[0]
        seed = 0 if args.seed is None else args.seed
        specs = [build_spec(task.id, name, seed) for name in variants or VARIANT_NAMES]
        reports = {"": audit(specs, task)}
    for arm, report in reports.items():
        if arm:
            print(f"== arm {arm}")
        print(report.render())
    return 0 if all(report.ok for report in reports.values()) else 1
