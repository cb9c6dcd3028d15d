"""`colabkit contributions`: replay stored team sessions without each member, to measure its part.

For every stored team session under RESULTS (a session folder, an experiment folder or a
results root) it plans one replay per member (each human seat removed, and the structure
switched off where the variant has one) from the first task step (`--at N` for another fork
point), under `--seeds`, with controls from the same point and seeds; prints the plan and what
it will cost (model calls and dollars, read from the parents' logs) and, without
`--dry-run`, runs it with the fork machinery. Continuations go to `<session's results>/forks/`
unless `--out` is given; score them with `colabkit score`, then read
`colabkit.analysis.contributions` (docs/contributions.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from colabkit.cli.run_cmd import parse_int
from colabkit.errors import ColabkitError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("contributions", help="each member's counterfactual contribution by replay",
                                   description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path, metavar="RESULTS", help="a stored session, experiment or results folder")
    parser.add_argument("--seeds", default="0,1,2", metavar="A,B", help="continuation seeds (default 0,1,2)")
    parser.add_argument("--at", default=None, metavar="N", help="the fork point (default: the first task step)")
    parser.add_argument("--members", default=None, metavar="D,R,structure",
                        help="whom to remove (default: every human seat and the structure, where there is one)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR", help="where the continuations go")
    parser.add_argument("--data-root", type=Path, default=None, metavar="DIR",
                        help="DiscoveryBench data the sessions ran on (default: the experiment's, else the demo tasks)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and its cost, run nothing")
    parser.set_defaults(func=_contributions)


def _contributions(args: argparse.Namespace) -> int:
    from colabkit.runner import contributions
    from colabkit.runner.recorded import data_root_for

    sessions = contributions.stored_sessions(args.results)
    if not sessions:
        raise ColabkitError(f"{args.results}: no finished session")
    seeds = [parse_int(s.strip(), "--seeds", minimum=0) for s in args.seeds.split(",") if s.strip()]
    members = [m.strip() for m in args.members.split(",") if m.strip()] if args.members else None
    at = parse_int(args.at, "--at", minimum=1) if args.at is not None else None
    jobs = contributions.plan(sessions, seeds, at=at, members=members)
    for line in contributions.describe(jobs):
        print(line)
    for line in contributions.estimate(jobs).lines():
        print(line)
    if args.dry_run or not jobs:
        return 0
    data_root = data_root_for(sessions[0], args.data_root)[0]
    for job, forks in contributions.run(jobs, out=args.out, data_root=data_root, say=None).items():
        print(f"{job.session_id} without {job.member}: {len(forks.changed)} continuation(s), "
              f"{len(forks.controls)} control(s) in {forks.changed[0].parent if forks.changed else '-'}")
    print("next: colabkit score <the forks folder>, then colabkit.analysis.contributions (docs/contributions.md)")
    return 0
