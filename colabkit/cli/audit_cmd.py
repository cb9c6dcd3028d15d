"""`colabkit audit CONFIG`: check that an experiment's variants differ only by design.

First renders what every participant of every variant is given on one task and seed (no
model is called) and compares the variants section by section. Then hunts: plays generated
scenarios (every member may run code, message, edit, wait, finish, propose, approve or
reject, flood requests and fail; the build phase with self-chosen gates; budgets 2 to 30;
both profiles; a cost cap) in every variant through the engine with the audit's own test
double, reached over HTTP, and checks the invariants (same trace: a variant and its Default
twin leave the same whole trace once the structure's declared parts are projected out; AI
opportunity, nothing lost, gates transparent, same capacity, same turn order, prompts as sent,
same rendering); a violation is shrunk to a minimal scenario and printed with the invariant and
the variants (`colabkit.runner.audit`).
Exits 1 on any unexplained difference or violation. `--quick` plays the known scenarios
only (seconds: for a hook). Without CONFIG, `--variants` (default: all 13) on `--task`
(default: the first task) under the default settings and model.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from colabkit.runner.audit import AuditReport


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
    parser.add_argument("--quick", action="store_true",
                        help="hunt with the known scenarios only, in-memory (seconds; for a hook)")
    parser.add_argument("--examples", type=int, metavar="N",
                        help="generated scenarios per arm in the full search (default: 12)")
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
    if args.examples is not None and args.examples < 0:
        raise ColabkitError(f"--examples must be 0 or more, got {args.examples}")
    if args.config is not None:
        exp = load_experiment(args.config, data_root=args.data_root)
        reports = audit_experiment(exp, task_id=args.task, seed=args.seed, variants=variants, quick=args.quick,
                                   examples=args.examples)
    else:
        suite = load_tasks(args.data_root)
        task = suite.get(args.task) if args.task else suite.tasks[0]
        seed = 0 if args.seed is None else args.seed
        specs = [build_spec(task.id, name, seed) for name in variants or VARIANT_NAMES]
        reports = {"": audit(specs, task, quick=args.quick, examples=args.examples)}
    for arm, report in reports.items():
        if arm:
            print(f"== arm {arm}")
        print(render_explained(report))
    return 0 if all(report.ok for report in reports.values()) else 1


def hunt_gloss() -> str:
    """What the hunt's lines mean, printed just above them."""
    from colabkit.runner.audit import INVARIANTS
    from colabkit.runner.audit.conduct import CONDUCT

    twins = [name for name in INVARIANTS if name not in CONDUCT]
    return ("(the hunt: generated scenarios played through the real engine in every variant, each member's steps "
            "scripted by the audit's own test double: no model, no key; a run is one scenario in one variant; the "
            f"invariants ({', '.join(twins)}) say what may never differ between a variant and its Default "
            f"twin beyond what its structure declares, and {', '.join(CONDUCT)} hold each run to the documented "
            "rules; a violation is shrunk to a minimal scenario. --quick plays the known scenarios only, "
            "--examples N more generated ones)")


def render_explained(report: AuditReport) -> str:
    """The report as `AuditReport.render` writes it, with the hunt explained where it is printed."""
    if report.hunt is None:
        return report.render()
    return f"{dataclasses.replace(report, hunt=None).render()}\n\n{hunt_gloss()}\n{report.hunt.render()}"
