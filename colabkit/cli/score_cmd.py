"""`colabkit score RESULTS`: score stored sessions after the fact, resumably.

Never runs a session: it reads the finished sessions under RESULTS, asks the judge (cached
in RESULTS/judge-cache), writes `<session>/scores/<scorer id>.json` and the parquet tables,
and prints a summary (exit status 1 when a spent budget or a provider refusing the judge stopped
the job early). Run again, it reuses every complete score; with another `--judge` it
scores again beside the old results. The embedded judge is accepted with a loud warning.
In an experiment folder (`colabkit batch` stored its `experiment.yaml` there) the data root,
judge, metrics and repeats not given on the command line are the experiment's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from colabkit.cli.run_cmd import parse_int
from colabkit.errors import ColabkitError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("score", help="score stored sessions (judge, metrics, tables)",
                                   description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path, metavar="RESULTS", help="results folder of `colabkit run`")
    parser.add_argument("--judge", metavar="M", help="litellm model string of the judge (default: the experiment's, "
                        "else the embedded model, plumbing grade only)")
    parser.add_argument("--metrics", nargs="+", metavar="NAME",
                        help="metrics to score (default: the experiment's, else the built-in defaults); a plugin by "
                        "its colabkit.metrics entry point name or import path (module:Class, file.py:Class)")
    parser.add_argument("--repeats", default=None, metavar="K",
                        help="ask every judge question K times (default: the experiment's, else 1)")
    parser.add_argument("--data-root", type=Path, default=None, metavar="DIR",
                        help="DiscoveryBench data folder the sessions ran on (default: the experiment's, else the demo tasks)")
    parser.add_argument("--sanity-tasks", default="3", metavar="N",
                        help="tasks the judge's sanity check runs on (default 3)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=_score)


def _score(args: argparse.Namespace) -> int:
    import warnings

    from colabkit.evaluation import judge_config, load_scores, score_results
    from colabkit.evaluation.storage import finished_sessions
    from colabkit.runner.progress import progress_bar
    from colabkit.runner.recorded import data_root_for

    repeats = parse_int(args.repeats, "--repeats", minimum=1) if args.repeats is not None else None
    sanity_tasks = parse_int(args.sanity_tasks, "--sanity-tasks", minimum=1)
    metrics = [m for item in args.metrics or () for m in item.split(",") if m] or None
    if not args.results.is_dir():
        raise ColabkitError(f"results folder not found: {args.results}")
    if not finished_sessions(args.results):  # before any judge is loaded or asked
        raise ColabkitError(f"no stored sessions under {args.results}: nothing to score "
                            "(colabkit run or colabkit batch stores them)")
    data_root, exp = data_root_for(args.results, args.data_root)
    if exp is not None:
        print(f"experiment {exp.name} (its experiment.yaml): data root {data_root or 'the demo tasks'}"
              f"{'' if args.judge else f', judge {exp.judge_config().model}'}", file=sys.stderr, flush=True)
    if not args.quiet:
        print(f"scoring {args.results} (a judged job first checks the judge on known answers)",
              file=sys.stderr, flush=True)
    bar = None if args.quiet else progress_bar(0, desc="scores", unit="score")[0]  # no \r ticks into a log

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.total = total
            bar.update(done - bar.n)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the plumbing warning is printed below, once, loudly
        report = score_results(args.results, exp.scoring() if exp is not None else None, metrics=metrics,
                               repeats=repeats, data_root=data_root,
                               judge=judge_config(args.judge) if args.judge else None, progress=progress,
                               sanity_tasks=sanity_tasks)
    if bar is not None:
        bar.close()
    for warning in report.warnings:
        print(f"\n!!! {warning}\n", file=sys.stderr)
    if report.sanity is not None:
        state = {True: "reliable", False: "UNRELIABLE", None: "unchecked"}[report.sanity.passed]
        print(f"judge sanity check: {state} ({report.sanity.reason})")
        for case in report.sanity.cases:
            print(f"  {case.kind:<5} {case.task_id:<28} recall={_num(case.recall_context)} "
                  f"hms={_num(case.hms)} {'ok' if case.passed else 'FAILED'}")
    print(f"sessions: {report.sessions}, scored: {report.scored}, reused: {report.reused}, "
          f"incomplete: {report.incomplete}")
    if report.judge is not None:
        print(f"judge spend: {report.spend.line()}")
    if report.agreement:
        print("agreement over repeats: " + ", ".join(f"{k}={_num(v)}" for k, v in sorted(report.agreement.items())))
    if report.stopped:
        print(f"stopped early: {report.stopped}")
    scores = load_scores(args.results)
    shown = [c for c in ("session_id", "variant", "delivered", "performance", "hms", "judge_model",
                         "judge_reliable") if c in scores.columns]
    if len(scores):
        print(scores[shown].to_string(index=False, max_colwidth=24))
    return 1 if report.stopped else 0  # a stopped job left sessions unscored: scripts must notice


def _num(value: float | None) -> str:
    return "NA" if value is None else f"{value:.2f}"
