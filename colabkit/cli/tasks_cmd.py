"""`colabkit tasks list|show|validate`: look at a data root before running a study on it.

Without `--data-root` these act on the shipped demo tasks. `list` prints every task that
loads and reports the others on stderr (exit 0: listing worked); `validate` is the check
that exits 1 on errors. `show` hides the gold answer
unless `--with-gold` is given, so a researcher can paste its output into a prompt or a
note without leaking the answer by accident.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from colabkit.tasks import Gold, Task, load_tasks, validate_tasks


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    root = argparse.ArgumentParser(add_help=False)
    root.add_argument("--data-root", type=Path, default=None, metavar="DIR",
                      help="DiscoveryBench data folder or repository clone, or plain task folders (task.yaml) (default: the demo tasks)")
    parser = subparsers.add_parser("tasks", help="list, show or validate tasks (DiscoveryBench or task.yaml folders)",
                                   description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="tasks_command", metavar="ACTION", required=True)

    listing = commands.add_parser("list", parents=[root], help="one line per task: id, type, query")
    listing.add_argument("--split", help='e.g. "real/test", or "real" / "test" for several')
    listing.add_argument("--domain", action="append", dest="domains", metavar="NAME",
                         help="metadata domain or dataset folder (repeatable)")
    listing.add_argument("--id", action="append", dest="ids", metavar="ID",
                         help="task id or <folder>/<metadata id> prefix (repeatable)")
    listing.set_defaults(func=_list)

    show = commands.add_parser("show", parents=[root], help="everything a participant sees of a task")
    show.add_argument("task_id", metavar="ID", help="task id, e.g. archaeology/3/0 (or a prefix)")
    show.add_argument("--with-gold", action="store_true", help="also print the gold answer")
    show.add_argument("--json", action="store_true", help="print one JSON object per task (JSON Lines)")
    show.set_defaults(func=_show)

    check = commands.add_parser("validate", parents=[root],
                                help="report problems one per line; exit 1 on errors")
    check.set_defaults(func=_validate)


def _list(args: argparse.Namespace) -> int:
    suite = load_tasks(args.data_root, split=args.split, domains=args.domains, ids=args.ids)
    width = max(len(t.id) for t in suite.tasks)
    for task in suite.tasks:
        print(f"{task.id:<{width}}  [{task.question_type or '-'}] {task.query}")
    for problem in suite.problems:
        print(problem.line(), file=sys.stderr)
    left_out = f"; tasks of {len(suite.errors)} error(s) above were left out" if suite.errors else ""
    print(f"{len(suite.tasks)} tasks in {suite.root}{left_out}", file=sys.stderr)
    return 0


def _show(args: argparse.Namespace) -> int:
    suite = load_tasks(args.data_root, ids=[args.task_id])
    for task in suite.tasks:
        gold = suite.gold_for(task.id) if args.with_gold else None
        if args.json:
            record: dict[str, object] = {"task": task.model_dump(mode="json")}
            if args.with_gold:
                record["gold"] = gold.model_dump(mode="json") if gold else None
            print(json.dumps(record, ensure_ascii=False))
        else:
            print(_render(task, gold, args.with_gold))
    return 0


def _render(task: Task, gold: Gold | None, with_gold: bool) -> str:
    lines = [
        f"id: {task.id}",
        f"split: {task.split}",
        f"domain: {task.domain}",
        f"question type: {task.question_type}",
        f"query: {task.query}",
        f"workflow tags: {', '.join(task.workflow_tags)}",
        f"domain knowledge: {task.domain_knowledge or '(none)'}",
        "datasets:",
    ]
    for dataset in task.datasets:
        lines.append(f"  - {dataset.name}: {dataset.description}")
        lines.append(f"    path: {dataset.path}")
        lines.extend(f"    {c.name}: {c.description}" for c in dataset.columns)
    if not with_gold:
        lines.append("gold: hidden (pass --with-gold to show it)")
    elif gold is None:
        lines.append("gold: none in this data")
    else:
        lines.append(f"gold hypothesis: {gold.hypothesis}")
        if gold.workflow:
            lines.append(f"gold workflow: {gold.workflow}")
    return "\n".join(lines) + "\n"


def _validate(args: argparse.Namespace) -> int:
    report = validate_tasks(args.data_root)
    for problem in report.problems:
        print(problem.line())
    print(report.summary())
    return 0 if report.ok else 1
