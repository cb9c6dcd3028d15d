"""`colabkit demo`: the first thing a new user runs (`make demo`).

For now it checks and lists the tasks (the shipped demo tasks unless `--data-root` is
given) and says what it did; running sessions on them is added by the session layer.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from colabkit.tasks import load_tasks, validate_tasks


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="validate and list the demo tasks",
                                   description=__doc__.split("\n")[0])
    parser.add_argument("--data-root", type=Path, default=None, metavar="DIR",
                        help="DiscoveryBench data folder or repository clone (default: the demo tasks)")
    parser.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    report = validate_tasks(args.data_root)
    for problem in report.problems:
        print(problem.line())
    print(f"validated {report.summary()}")
    if not report.ok:
        print("demo stopped: fix the errors above (see `colabkit tasks validate`)")
        return 1
    suite = load_tasks(args.data_root)
    print(f"loaded {len(suite.tasks)} tasks ({len(suite.gold)} with gold answers, kept for scoring):")
    for task in suite.tasks:
        print(f"  {task.id}  [{task.question_type}] {task.query}")
    print("done: tasks validated and listed; sessions are not part of this demo yet")
    return 0
