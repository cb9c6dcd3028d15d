"""`colabkit prompts lint CONFIG`: check that every prompt states the rules the engine enforces.

Renders every kind of prompt (the memory build's propose, consolidate, ratify and amend; a
task step; a decision step; a closing step) for every variant and seat of the experiment,
under its own observation profile and the full one, from scripted histories through the
engine's own code, and checks them (`colabkit.runner.prompt_lint`): the valid-actions list
is the answer schema's enum, every id named resolves, every stated budget is the scheduler's,
no internal name of the suite's code appears, every section fits its budget. Exits 1 on any
finding. `colabkit prompts rules` prints the rules as a member reads them (docs/rules.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("prompts", help="lint the prompts every member is given against the engine's rules",
                                   description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="prompts_command", metavar="ACTION", required=True)
    lint = commands.add_parser("lint", help="render every kind of prompt of an experiment and check it")
    lint.add_argument("config", type=Path, metavar="CONFIG", help="experiment YAML, e.g. experiments/paper.yaml")
    lint.add_argument("--task", metavar="ID", help="task id (default: the experiment's first)")
    lint.add_argument("--data-root", type=Path, metavar="DIR",
                      help="DiscoveryBench root (replaces the config's tasks.data_root)")
    lint.set_defaults(func=_lint)
    rules = commands.add_parser("rules", help="print the rules as a member reads them (docs/rules.md)")
    rules.set_defaults(func=_rules)


def _lint(args: argparse.Namespace) -> int:
    from colabkit.runner import load_experiment
    from colabkit.runner.prompt_lint import lint_experiment

    report = lint_experiment(load_experiment(args.config, data_root=args.data_root), task_id=args.task)
    print(report.render())
    return 0 if report.ok else 1


def _rules(args: argparse.Namespace) -> int:
    from colabkit.runner.rules_page import rules_page

    print(rules_page(), end="")
    return 0
