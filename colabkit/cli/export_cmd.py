"""`colabkit export RESULTS --format inspect`: stored sessions as Inspect AI `.eval` logs.

One log per variant of the experiment in RESULTS (or one per session with `--per-session`),
one sample per session, written into `--out` (default RESULTS/inspect); open them with
`inspect view --log-dir DIR`, Docent or Inspect Scout. Gold answers are left out unless
`--with-gold` asks for them as each sample's target. Needs `pip install colabkit[inspect]`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from colabkit.errors import ColabkitError

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
                        help="DiscoveryBench data folder the sessions ran on (default: the demo tasks)")
    parser.set_defaults(func=_export)


def _export(args: argparse.Namespace) -> int:
    if not args.results.is_dir():
        raise ColabkitError(f"results folder not found: {args.results}")
    try:
        from colabkit.export import export_inspect
    except ImportError as exc:
        raise ColabkitError(f"the inspect export needs inspect_ai: pip install 'colabkit[inspect]' ({exc})") from None
    logs = export_inspect(args.results, args.out, per_session=args.per_session, with_gold=args.with_gold,
                          data_root=args.data_root)
    for log in logs:
        print(f"{log.path}  {log.variant}: {len(log.session_ids)} session(s)")
    print(f"open with: inspect view start --log-dir {logs[0].path.parent} --host 127.0.0.1")
    return 0
