"""`colabkit plan-analysis CONFIG`: write the experiment's analysis plan before any data exists.

The plan (`colabkit.analysis.inference.plan`) fixes the primary endpoint, the Holm families
(from the config's planned variants and a fixed metric list), alpha, the gate, the tests and
the power calculation, and is hashed; it goes to `<results>/<name>-<hash8>/analysis_plan.json`
(or `--out`), written atomically, and its hash is printed. The notebooks read it back
(`colabkit.analysis.read_plan`), and every table and figure names the hash.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from colabkit.errors import ColabkitError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("plan-analysis", help="write the analysis plan of an experiment (before its data)",
                                   description=__doc__.split("\n")[0])
    parser.add_argument("config", type=Path, metavar="CONFIG", help="experiment YAML")
    parser.add_argument("--metrics", metavar="A,B", help="the fixed metric list (default: the study's seven)")
    parser.add_argument("--alpha", metavar="A", help="familywise level of each family (default 0.05)")
    parser.add_argument("--gate", choices=("all", "any"), default="all",
                        help="secondary families are tested when all (default) or any primary tests reject")
    parser.add_argument("--power-delta", metavar="D", help="difference the power calculation detects (default 0.05)")
    parser.add_argument("--tasks-available", metavar="N", help="tasks that exist (default: the config's selection)")
    parser.add_argument("--data-root", type=Path, default=None, metavar="DIR",
                        help="DiscoveryBench root (replaces the config's tasks.data_root)")
    parser.add_argument("--out", type=Path, default=None, metavar="FILE", help="write here instead")
    parser.set_defaults(func=_plan_analysis)


def _number(text: str | None, flag: str, kind: type[float] | type[int]) -> float | int | None:
    if text is None:
        return None
    try:
        return kind(text)
    except ValueError:
        raise ColabkitError(f"{flag} must be a number, got {text!r}") from None


def _plan_analysis(args: argparse.Namespace) -> int:
    from colabkit.analysis.inference.plan import PLAN_FILE, analysis_plan, plan_document
    from colabkit.runner import load_experiment
    from colabkit.store.atomic import atomic_write_text

    if not args.config.is_file():
        raise ColabkitError(f"experiment config not found: {args.config}")
    exp = load_experiment(args.config, data_root=args.data_root)
    tasks = _number(args.tasks_available, "--tasks-available", int)
    if tasks is None:
        try:
            tasks = len(exp.load_suite().tasks)
        except ColabkitError:
            tasks = None  # the data is not here: the plan says so (no flag for more tasks than exist)
    fields: dict[str, object] = {"experiment": exp.name, "gate": args.gate, "tasks_available": tasks}
    if args.metrics:
        fields["metrics"] = tuple(m for m in args.metrics.split(",") if m)
    for flag, name in ((args.alpha, "alpha"), (args.power_delta, "power_delta")):
        if flag is not None:
            fields[name] = _number(flag, f"--{name.replace('_', '-')}", float)
    plan = analysis_plan(exp.variants, **fields)
    target = args.out or exp.folder() / PLAN_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, plan_document(plan))
    print(f"analysis plan {plan.plan_hash} -> {target}")
    return 0
