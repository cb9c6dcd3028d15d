"""`colabkit plan-analysis CONFIG`: write the experiment's analysis plan before any data exists.

The plan (`colabkit.analysis.inference.planning.plan`) names the study's claims as hypotheses (the
paper's by default, or `--hypotheses FILE`: a YAML or JSON list of {name, a, b, metric,
direction, family, weight, then, margin_sd}), the graph that spends one alpha over them, the
tests, and the planned tasks x seeds (the config's). It goes to
`<results>/<name>-<hash8>/analysis_plan.json` (or `--out`), written atomically with its time
stamp and the number of sessions stored then, and its hash is printed with the power of the
whole procedure at the planned size (simulated, `--power-reps`; 0 skips it), on the study's
bounded data shape or, with `--pilot RESULTS`, on variance components re-estimated from a
pilot's stored sessions (`colabkit.analysis.inference.power_analysis.pilot`).

Once any session has *started* in the experiment's folder the plan is locked, bound to the hash
every session recorded (`colabkit.analysis.inference.planning.plan_file`): writing it again,
`--out` into the experiment's folder, or writing after deleting it fails with one line naming
the locked plan; `--amend REASON` writes the next version (`analysis_plan.v2.json`, ...),
beside the original, every version kept.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from colabkit.errors import ColabkitError

if TYPE_CHECKING:
    from colabkit.analysis.inference.planning.plan import AnalysisPlan
    from colabkit.analysis.inference.power_analysis.simulate import DataShape


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("plan-analysis", help="write the analysis plan of an experiment (before its data)",
                                   description=__doc__.split("\n")[0])
    parser.add_argument("config", type=Path, metavar="CONFIG", help="experiment YAML")
    parser.add_argument("--metrics", metavar="A,B", help="the fixed metric list (default: the study's seven)")
    parser.add_argument("--alpha", metavar="A", help="study-wise familywise error rate (default 0.05)")
    parser.add_argument("--hypotheses", type=Path, metavar="FILE",
                        help="YAML or JSON list of hypotheses (default: the paper's claims)")
    parser.add_argument("--amend", metavar="REASON", help="write the next version of a locked plan, with its reason")
    parser.add_argument("--power-delta", metavar="D", help="difference the per-test power table detects (default 0.05)")
    parser.add_argument("--power-reps", metavar="N", default="200",
                        help="simulated grids for the procedure's power at the planned size (default 200; 0 skips)")
    parser.add_argument("--tasks-available", metavar="N", help="tasks that exist (default: the config's selection)")
    parser.add_argument("--data-root", type=Path, default=None, metavar="DIR",
                        help="DiscoveryBench root (replaces the config's tasks.data_root)")
    parser.add_argument("--pilot", type=Path, default=None, metavar="RESULTS",
                        help="a pilot's results folder (or saved score table): re-estimate the variance components "
                             "from its sessions and plan the power on them")
    parser.add_argument("--out", type=Path, default=None, metavar="FILE", help="write here instead")
    parser.set_defaults(func=_plan_analysis)


def _number(text: str | None, flag: str, kind: type[float] | type[int]) -> float | int | None:
    if text is None:
        return None
    try:
        return kind(text)
    except ValueError:
        raise ColabkitError(f"{flag} must be a number, got {text!r}") from None


def _hypotheses(path: Path) -> list[object]:
    """The hypotheses a researcher wrote: a YAML or JSON list (or {hypotheses: [...]})."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text())  # JSON is YAML
    except (OSError, yaml.YAMLError) as exc:
        raise ColabkitError(f"cannot read hypotheses {path}: {' '.join(str(exc).split())}") from None
    data = data.get("hypotheses") if isinstance(data, dict) else data
    if not isinstance(data, list) or not data:
        raise ColabkitError(f"hypotheses {path}: expected a non-empty list of hypotheses")
    return data


def _plan_analysis(args: argparse.Namespace) -> int:
    from colabkit.analysis.inference.planning.plan import analysis_plan
    from colabkit.analysis.inference.planning.plan_file import write_plan
    from colabkit.runner import load_experiment

    if not args.config.is_file():
        raise ColabkitError(f"experiment config not found: {args.config}")
    exp = load_experiment(args.config, data_root=args.data_root)
    tasks = _number(args.tasks_available, "--tasks-available", int)
    selected: int | None
    try:
        selected = len(exp.load_suite().tasks)
    except ColabkitError:
        selected = None  # the data is not here: the plan says so (no flag for more tasks than exist)
    fields: dict[str, object] = {"experiment": exp.name, "tasks_available": selected if tasks is None else tasks,
                                 "planned_seeds": len(exp.seeds)}
    if selected is not None and selected >= 2:
        fields["planned_tasks"] = selected
    if args.metrics:
        fields["metrics"] = tuple(m for m in args.metrics.split(",") if m)
    if args.hypotheses:
        fields["hypotheses"] = _hypotheses(args.hypotheses)
    for flag, name in ((args.alpha, "alpha"), (args.power_delta, "power_delta")):
        if flag is not None:
            fields[name] = _number(flag, f"--{name.replace('_', '-')}", float)
    plan = analysis_plan(exp.variants, **fields)
    reps = int(_number(args.power_reps, "--power-reps", int) or 0)
    shape = _pilot_shape(args.pilot) if args.pilot is not None else None  # before writing: a bad pilot writes nothing
    folder = exp.folder()
    if args.out is None:
        folder.mkdir(parents=True, exist_ok=True)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
    path = write_plan(folder, plan, amend=args.amend, target=args.out)
    print(f"analysis plan {plan.plan_hash} -> {path}")
    if reps > 0:
        _print_power(plan, reps, shape)
    return 0


def _pilot_shape(results: Path) -> DataShape:
    """The variance components a pilot's sessions give (printed), as the simulation's shape."""
    from colabkit.analysis.inference.power_analysis.pilot import pilot_shape, variance_components
    from colabkit.analysis.scores import load_score_table

    if not results.exists():
        raise ColabkitError(f"pilot results not found: {results}")
    scores = load_score_table(results, results if results.is_file() else None)
    for metric in ("performance", "w_total"):
        if metric in scores.columns:
            found = variance_components(scores, metric)
            print(f"pilot {metric}: task SD {found['task_sd']:.3g}, task x variant SD {found['interaction_sd']:.3g}, "
                  f"noise SD {found['noise_sd']:.3g} ({found['tasks']} tasks, {found['variants']} variants)")
    return pilot_shape(scores)


def _print_power(plan: AnalysisPlan, reps: int, shape: DataShape | None = None) -> None:
    from colabkit.analysis.inference.power_analysis.simulate import DataShape as Shape
    from colabkit.analysis.inference.power_analysis.simulate import procedure_power

    power = procedure_power(plan, reps=reps, shape=shape or Shape())
    data = "the pilot's variance components (unclipped)" if shape else "bounded data"
    print(f"P(declared) by the whole procedure at {plan.planned_tasks} tasks x {plan.planned_seeds} seeds, "
          f"the paper's effects, {data}, {reps} simulated grids:")
    for row in power.itertuples():
        print(f"  {row.hypothesis:<24} {row.p_declared:5.2f}" + ("  (null true)" if row.null_true else ""))
