"""`colabkit batch CONFIG`: run an experiment's grid through its notebooks, resumably.

Executes `run_variant` once per variant with papermill (parallel processes), then `score`
and `annotate_gates`, then `ablations`; the executed notebooks land in
`<results>/<experiment>/notebooks/`. Run it again and it resumes: finished sessions and
scores are kept. Every model and the judge are preflighted first (a missing key, an unknown
provider, an unreachable api_base: one line, exit 2, nothing run or spent). `--dry-run` prints
the plan (sessions to run, already done, model calls, a cost and a wall-clock estimate) and
runs nothing; it needs no key (planning comes before getting one): a missing key is named as
what the run will need, and the run stops on it with the same line; `--sessions-only` runs the sessions in this process
without notebooks (the folder still gets its `experiment.yaml`, as with the notebooks).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from colabkit.runner import Experiment

PLUMBING_NOTE = ("NOTE: this experiment uses the embedded model local/smollm2-135m. It is plumbing-grade: it "
                 "exercises every part of the suite, but its numbers mean nothing about the study.")
_ARTIFACTS = ("*.csv", "*.png", "*.svg")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("batch", help="run an experiment config's sessions and notebooks",
                                   description=__doc__.split("\n")[0])
    parser.add_argument("config", type=Path, metavar="CONFIG", help="experiment YAML, e.g. experiments/demo.yaml")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and cost estimate; run nothing")
    parser.add_argument("--retry-errors", action="store_true",
                        help="also rerun sessions that ended with error (a provider's end reruns anyway; a spending cap's end is an outcome)")
    parser.add_argument("--variants", metavar="A,B", help="only these variants of the experiment")
    parser.add_argument("--data-root", type=Path, metavar="DIR", help="replace the config's tasks.data_root")
    parser.add_argument("--results", type=Path, metavar="DIR", help="replace the config's results root")
    parser.add_argument("--notebooks", type=Path, metavar="DIR", help="folder of the notebooks to execute")
    parser.add_argument("--sessions-only", action="store_true",
                        help="run the sessions in this process, without notebooks")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(func=_batch)


def _batch(args: argparse.Namespace) -> int:
    from colabkit.errors import ColabkitError
    from colabkit.runner import load_experiment, run_experiment
    from colabkit.runner.batch import missing_keys, preflight_experiment
    from colabkit.runner.build import model_config
    from colabkit.runner.pipeline import (
        REPO_NOTEBOOKS,
        run_batch,
        run_spend,
        spend_lines,
        wants_realism,
        write_config,
    )
    from colabkit.runner.plan import compare, make_plan

    exp = load_experiment(args.config, data_root=args.data_root, results=args.results)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()] if args.variants else None
    if args.variants is not None and not variants:
        raise ColabkitError(f"--variants names no variant: {args.variants!r}")
    items = exp.sessions(variants)
    # before anything is planned, run or spent: one line, exit 2 (a plan needs no key)
    preflight_experiment(exp, items, keys=not args.dry_run)
    plan = make_plan(exp, items)
    print(plan.render(retry_errors=args.retry_errors), flush=True)
    for arm in exp.arms:  # settings arms (`Experiment.arms`): the grid once per arm
        fields = ", ".join(f"{k}={v}" for k, v in arm.settings.items())
        print(f"  arm {arm.name}: {len(items) // len(exp.arms)} sessions ({fields})", flush=True)
    for sim in exp.simulators:  # the simulator sweep (`Experiment.simulators`): the grid once per simulator
        models = ", ".join(f"{role}={model_config(m).model}" for role, m in sim.models.items())
        mine = sum(1 for spec, _ in items if exp.simulator_of(spec) == sim.name)
        print(f"  simulator {sim.name}: {mine} sessions with simulated humans ({models})", flush=True)
    if exp.uses_embedded_model():
        print(PLUMBING_NOTE, flush=True)
    if args.dry_run:
        for line in missing_keys(exp, items):
            print(f"  to run it (not to plan it): {line}")
        stages = (f"run_variant x {len(variants or exp.variants)} ({exp.concurrency.notebooks} at once), then score + "
                  f"annotate_gates, then ablations{' + realism' if wants_realism(exp) else ''}")
        print(f"  notebooks: {stages} -> {exp.folder() / 'notebooks'}")
        return 0
    try:
        if args.sessions_only:
            # the folder names its experiment as a whole batch's does, so `score`, `export` and
            # `fork` given a path inside it read the data root and judge from it (`runner.recorded`)
            write_config(exp)
            started = time.time()
            summary = run_experiment(exp, variants=variants, retry_errors=args.retry_errors, progress=not args.quiet)
            print(summary.report())
            print(*compare(exp, items, plan, started, retry_errors=args.retry_errors), sep="\n")
            return 1 if summary.count("failed") else 0
        started = time.time()
        failed = run_batch(exp, notebooks=args.notebooks or REPO_NOTEBOOKS, variants=variants,
                           retry_errors=args.retry_errors, progress=not args.quiet, started=started)
    except KeyboardInterrupt:
        print("\ninterrupted: finished sessions are kept; run the same command again to resume", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        # Sessions are cancelled and their kernels shut down by now; what may still run is a
        # model call in a worker thread (the embedded model cannot stop mid-answer): abandon it.
        os._exit(130)
    _report(exp.folder(), make_plan(exp, items).finished, len(items), failed)
    print(*spend_lines(*run_spend(exp.folder(), started, {spec.session_id for spec, _ in items})), sep="\n")
    print(*compare(exp, items, plan, started, retry_errors=args.retry_errors), sep="\n")
    _judge_report(exp)
    if exp.uses_embedded_model():
        print(PLUMBING_NOTE)
    return 1 if failed else 0


def _judge_report(exp: Experiment) -> None:
    """One line when the experiment's judge is plumbing-grade or failed (or never ran) its
    sanity check: the tables and figures above carry it too, the reader should not miss it."""
    from colabkit.analysis import judge_warning
    from colabkit.evaluation import scorers_for
    from colabkit.evaluation.reliability import judge_standing

    if not any(scorer.uses_judge for scorer in scorers_for(list(exp.metrics))):
        return
    judge = exp.scoring().judge  # as the scoring job ran it (temperature 0): the check is stored under it
    grade, reliable, reason = judge_standing(exp.folder(), judge)
    warning = judge_warning(grade, reliable)
    if warning:
        print(f"{warning} (judge {judge.model}: {reason})")


def _report(folder: Path, finished: int, total: int, failed: list[str]) -> None:
    """Where everything went: notebooks, tables, figures; a failed notebook with its error's line."""
    from colabkit.runner.pipeline import first_error_line

    print(f"\n{finished} of {total} sessions finished, in {folder}")
    notebooks = sorted((folder / "notebooks").glob("*.ipynb"))
    print(f"rendered notebooks ({len(notebooks)}) in {folder / 'notebooks'}:")
    for path in notebooks:
        print(f"  {path.name}")
    artifacts = sorted(p for pattern in _ARTIFACTS for p in folder.rglob(pattern)
                       if not any(part.startswith(".") for part in p.relative_to(folder).parts))
    if artifacts:
        print("tables and figures:")
        for path in artifacts:
            print(f"  {path}")
    for name in failed:
        log = folder / "notebooks" / f"{name}.log"
        error = first_error_line(log)
        print(f"FAILED: notebook {name}" + (f": {error}" if error else "") + f" (see {log} and its executed copy)")
