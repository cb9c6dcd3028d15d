"""`colabkit fork`: rerun a stored session from event N with one change, under several seeds.

Without `--at` it lists the session's fork points (task-phase steps that start a turn).
With `--at N` it runs one continuation per seed with the change (`--change`, JSON of a
`colabkit.session.fork` change, e.g. '{"kind": "replace_message", "to": ["ai"]}'; default
none, the control) and, unless `--no-controls`, one control per seed; each is stored like a
session (default under `<parent results>/forks/`) and printed as one line. A session of an
experiment folder runs on the experiment's data root (its `experiment.yaml`) unless
`--data-root` says otherwise.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from colabkit.cli.run_cmd import parse_int
from colabkit.errors import ColabkitError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("fork", help="rerun a stored session from event N with one change",
                                   description=__doc__.split("\n")[0])
    parser.add_argument("session", type=Path, metavar="SESSION", help="a stored session's folder")
    parser.add_argument("--at", metavar="N", help="the fork point: event N (omit to list the fork points)")
    parser.add_argument("--change", default='{"kind": "none"}', metavar="JSON",
                        help='the change at N as JSON, e.g. \'{"kind": "flip_decision"}\' (default: none)')
    parser.add_argument("--seeds", default="0", metavar="A,B", help="continuation seeds (default 0)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="where continuations go (default: forks/ beside the session)")
    parser.add_argument("--lenient", action="store_true",
                        help="record prefix cells that replay differently instead of stopping")
    parser.add_argument("--no-controls", action="store_true", help="do not run the unchanged controls")
    parser.add_argument("--data-root", type=Path, default=None, metavar="DIR",
                        help="DiscoveryBench data the session ran on (default: the experiment's, else the demo tasks)")
    parser.set_defaults(func=_fork)


def next_step(session: Path, rows: list[dict]) -> str:
    """What to do after the list: the command that forks at one of its points."""
    from colabkit.session.fork import CHANGE_KINDS

    if not rows:
        return "no fork points: the session has no task-phase step that starts a turn"
    return (f"next: colabkit fork {session} --at N (N from the first column, e.g. --at {rows[0]['at']}) "
            f"--change '{{\"kind\": \"flip_decision\"}}' --seeds 0,1,2 runs the change and its controls; "
            f"change kinds: {', '.join(CHANGE_KINDS)} (docs/forks.md)")


def _fork(args: argparse.Namespace) -> int:
    from pydantic import TypeAdapter, ValidationError

    from colabkit.runner.fork import describe_points, fork
    from colabkit.runner.recorded import data_root_for
    from colabkit.session.fork import CHANGE_KINDS, Change
    from colabkit.store import SessionRecord

    if not (args.session / "events.jsonl").is_file():
        raise ColabkitError(f"{args.session}: not a stored session (no events.jsonl)")
    if args.at is None:
        points = describe_points(args.session)
        for row in points:
            print(f"{row['at']:>4}  r{row['round']} {row['participant']:<6} {row['action']:<13} "
                  f"{row['status']:<9} {row['result']}")
        print(next_step(args.session, points))
        return 0
    try:
        change = TypeAdapter(Change).validate_json(args.change)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])  # e.g. insert_message.text
        kinds = f"; kinds: {', '.join(CHANGE_KINDS)}" if problem["type"] != "union_tag_invalid" and not where else ""
        raise ColabkitError(f"--change {args.change!r}: {problem['msg']}{f' ({where})' if where else ''}"
                            f"{kinds}") from None
    seeds = [parse_int(s.strip(), "--seeds", minimum=0) for s in args.seeds.split(",") if s.strip()]
    forks = fork(args.session, at=parse_int(args.at, "--at", minimum=1), change=change, seeds=seeds,
                 out=args.out, verify="lenient" if args.lenient else "strict", controls=not args.no_controls,
                 data_root=data_root_for(args.session, args.data_root)[0])
    label = "control" if change.kind == "none" else "change"
    rows = [(label, f) for f in forks.changed] + [("control", f) for f in forks.controls
                                                     if f not in forks.changed]
    for kind, folder in rows:
        record = SessionRecord.model_validate_json((folder / "session.json").read_bytes())
        flags = len(record.fork.replay.mismatches) if record.fork else 0
        print(f"{kind} {folder} seed {record.seed}: ended by {record.ended_by}, {record.totals.actions} actions"
              + (f", {flags} prefix cell(s) replayed differently" if flags else "")
              + f"; hypothesis: {' '.join(record.final_hypothesis.split())[:60] or '(empty)'}")
    return 0
