"""`colabkit export RESULTS --format inspect`: stored sessions as Inspect AI `.eval` logs.

One log per variant of the experiment in RESULTS (or one per session with `--per-session`),
one sample per session, written into `--out` (default RESULTS/inspect); open them with
`inspect view --log-dir DIR`, Docent or Inspect Scout. Gold answers are left out unless
`--with-gold` asks for them as each sample's target; a session whose task has no gold there
(the wrong or a forgotten `--data-root`) is then an error, never an empty target. In an
experiment folder the data root not given is the experiment's (its `experiment.yaml`).
Needs `pip install colabkit[inspect]`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from colabkit.errors import ColabkitError

if TYPE_CHECKING:
    from colabkit.tasks import TaskSuite

FORMATS = ("inspect",)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("export", help="export stored sessions to another tool's format (Inspect logs)",
                                   description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path, metavar="RESULTS", help="results folder of `colabkit run`")
    parser.add_argument("--format", choices=FORMATS, default="inspect", help="the format to write (default inspect)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR", help="where to write (default RESULTS/inspect)")
    parser.add_argument("--per-session", action="store_true", help="one log per session instead of one per variant")
    parser.add_argument("--with-gold", action="store_true", help="put each task's gold hypothesis in the sample target")
    parser.add_argument("--data-root", type=Path, default=None, metavar="DIR",
                        help="DiscoveryBench data folder the sessions ran on (default: the experiment's, else the demo tasks)")
    parser.set_defaults(func=_export)


def _export(args: argparse.Namespace) -> int:
    if not args.results.is_dir():
        raise ColabkitError(f"results folder not found: {args.results}")
    try:
        from colabkit.export import export_inspect
    except ImportError as exc:
        raise ColabkitError(f"the inspect export needs inspect_ai: pip install 'colabkit[inspect]' ({exc})") from None
    from colabkit.runner.recorded import data_root_for
    from colabkit.tasks import load_tasks

    data_root, _ = data_root_for(args.results, args.data_root)
    suite = load_tasks(data_root)
    if args.with_gold:
        _check_gold(args.results, suite, data_root)
    logs = export_inspect(args.results, args.out, per_session=args.per_session, with_gold=args.with_gold,
                          suite=suite)
    for log in logs:
        print(f"{log.path}  {log.variant}: {len(log.session_ids)} session(s)")
    print(f"open with: inspect view start --log-dir {logs[0].path.parent} --host 127.0.0.1")
    return 0


def _check_gold(results: Path, suite: TaskSuite, data_root: Path | None) -> None:
    """Fail before writing when a finished session's task has no gold under this data root."""
    from colabkit.evaluation.gold import gold_hypotheses
    from colabkit.evaluation.storage import finished_sessions
    from colabkit.store import SESSION_FILE

    task_ids = sorted({json.loads((folder / SESSION_FILE).read_text(encoding="utf-8"))["task_id"]
                       for folder in finished_sessions(results)})
    missing = [t for t in task_ids if t not in gold_hypotheses(suite, task_ids)]
    if missing:
        where = f"under {data_root}" if data_root is not None else "among the demo tasks (no --data-root)"
        raise ColabkitError(f"--with-gold: no gold answer {where} for {len(missing)} of {len(task_ids)} task(s) "
                            f"(e.g. {missing[0]}): pass the --data-root the sessions ran on")
