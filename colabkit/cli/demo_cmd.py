"""`colabkit demo`: the first thing a new user runs (`make demo`).

It checks the tasks (the shipped demo tasks unless `--data-root` is given), runs one short
session per chosen variant on one task with the embedded model, stores them under
`results/demo/`, exports the parquet tables and prints a summary from `load_sessions`. The
defaults (two variants, a budget of 6 actions) keep it to a few minutes on two cores. Sessions
are stored by identity, so running the demo again only runs what is not finished yet.
Every model is preflighted before the first session; a provider refusal stops the demo with
its one-line error (once: the next sessions would meet the same refusal).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from colabkit.cli.run_cmd import parse_int, store_session, will_run
from colabkit.errors import ColabkitError
from colabkit.tasks import load_tasks, validate_tasks

DEFAULT_VARIANTS = "single,scaffolded-dr"
SUMMARY_COLUMNS = ["variant", "seed", "ended_by", "actions", "failed_steps", "llm_calls", "tokens", "duration_s"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="run short demo sessions and summarise them",
                                   description=__doc__.split("\n")[0])
    parser.add_argument("--data-root", type=Path, default=None, metavar="DIR",
                        help="DiscoveryBench data folder or repository clone (default: the demo tasks)")
    parser.add_argument("--task", metavar="ID", help="task to run (default: the first task)")
    parser.add_argument("--variants", default=DEFAULT_VARIANTS, metavar="A,B",
                        help=f"comma-separated variant names (default: {DEFAULT_VARIANTS})")
    parser.add_argument("--seed", default="0", metavar="N", help="seed for every session (default 0)")
    parser.add_argument("--model", metavar="M", help="litellm model string for every role (default: embedded model)")
    parser.add_argument("--out", type=Path, default=Path("results/demo"), metavar="DIR",
                        help="results folder (default: results/demo)")
    parser.add_argument("--action-budget", default="6", metavar="N", help="task-phase actions per side and session (default 6)")
    parser.add_argument("--max-rounds", default="8", metavar="N", help="rounds per session (default 8)")
    parser.add_argument("--quiet", action="store_true", help="do not show events as they happen")
    parser.add_argument("--dry-run", action="store_true",
                        help="validate and list the tasks and show the plan, without running sessions")
    parser.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from colabkit.session import SessionSettings
    from colabkit.store import build_session

    seed = parse_int(args.seed, "--seed", minimum=0)
    settings = SessionSettings(action_budget=parse_int(args.action_budget, "--action-budget", minimum=1),
                               max_rounds=parse_int(args.max_rounds, "--max-rounds", minimum=1))
    variants = [name.strip() for name in args.variants.split(",") if name.strip()]
    if not variants:
        raise ColabkitError(f"--variants names no variant: {args.variants!r}")

    report = validate_tasks(args.data_root)
    for problem in report.problems:
        print(problem.line())
    print(f"validated {report.summary()}")
    if not report.ok:
        print("demo stopped: fix the errors above (see `colabkit tasks validate`)")
        return 1
    suite = load_tasks(args.data_root)
    task_id = args.task or suite.tasks[0].id
    sessions = [build_session(task_id, name, seed, model=args.model, data_root=args.data_root, settings=settings)
                for name in variants]  # resolve every name before the first slow session
    if args.dry_run:
        for task in suite.tasks:
            print(f"  {task.id}  [{task.question_type}] {task.query}")
    print(f"task {task_id}: {sessions[0][1].query}")

    to_run = [will_run(spec, args.out) for spec, _ in sessions]  # every model preflighted before any runs
    for (spec, task), runs in zip(sessions, to_run, strict=True):
        state = f"running (budget {settings.action_budget} actions)" if runs else "already finished, not rerun"
        if args.dry_run:
            state = "would run" if runs else "finished"
        print(f"{spec.variant.name}: session {spec.session_id} {state}", flush=True)
        if not args.dry_run:
            _, provider_error = store_session(spec, task, args.out, runs=runs, show=not args.quiet)
            if provider_error is not None:
                raise ColabkitError(provider_error)
    if args.dry_run:
        return 0
    _summarise(args.out, [spec.session_id for spec, _ in sessions])
    return 0


def _summarise(out: Path, ids: list[str]) -> None:
    """The summary table (from the store's own loader) and where everything went."""
    from colabkit.store import export_parquet, load_sessions

    parquet = export_parquet(out)
    table = load_sessions(out, ids).set_index("session_id").loc[ids]
    table["final_hypothesis"] = table.final_hypothesis.str.slice(0, 60).replace("", "(empty)")
    print()
    print(table[[*SUMMARY_COLUMNS, "final_hypothesis"]].to_string(index=False, float_format=lambda x: f"{x:g}"))
    print()
    print(f"stored under {out}/:")
    for sid in ids:
        print(f"  {sid}/  events.jsonl, snapshot.json, session.json")
    print(f"  {parquet.name}, sessions.parquet  (every session in {out}, for pandas)")
    print("  llm-cache/  (model answers: a rerun replays them)")
    print("load them in Python with colabkit.store.load_sessions(out) and load_events(out)")
