"""`colabkit seat`: how to start a session with people in its seats (JupyterLab or Voilà).

A seat session waits for people, so it is never run from the shell or a batch. This command
checks the names (task, variant, seats), writes one copy of `notebooks/take_a_seat.ipynb` per
person (its parameters set, no researcher text) under the results folder, and prints how to
open them: in JupyterLab (the researcher's view) or served by Voilà (a participant's page: no
code shown, one server and link per person). Give `--seat` and `--participant` twice to
seat people at both D and R.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from colabkit.cli.run_cmd import parse_int
from colabkit.errors import ColabkitError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("seat", help="print how to start a session with people in its seats",
                                   description=__doc__.split("\n")[0])
    parser.add_argument("--task", required=True, metavar="ID", help="task id, e.g. archaeology/3/0")
    parser.add_argument("--variant", required=True, metavar="NAME", help="team variant with the seat, e.g. scaffolded-dr")
    parser.add_argument("--seat", required=True, action="append", metavar="SEAT",
                        help="a seat a person plays: D, R, ai (the AI agent's) or any seat the variant declares "
                             "(give it once per person)")
    parser.add_argument("--participant", required=True, action="append", metavar="ID",
                        help="pseudonymous participant id of that seat, e.g. p-017 (one per --seat, in order)")
    parser.add_argument("--seed", default="0", metavar="N", help="non-negative integer (default 0)")
    parser.add_argument("--model", metavar="M", help="litellm model string of the others (default: embedded model)")
    parser.add_argument("--data-root", type=Path, default=None, metavar="DIR",
                        help="DiscoveryBench data folder or clone (default: the demo tasks)")
    parser.add_argument("--action-budget", metavar="N", help="task-phase actions per side (default 30, as every run)")
    parser.add_argument("--max-rounds", metavar="N", help="rounds before the session ends (default 60)")
    parser.add_argument("--timeout", metavar="S", help="seconds per step before the fallback takes it (default: none)")
    parser.add_argument("--fallback", choices=["wait", "model"], default="wait",
                        help="what takes a timed-out step: a wait, or the persona's model (default wait)")
    parser.add_argument("--out", type=Path, default=Path("results/seats"), metavar="DIR",
                        help="results folder (default results/seats)")
    parser.add_argument("--folder", type=Path, default=None, metavar="DIR",
                        help="where the participants' notebooks are written (default OUT/pages)")
    parser.add_argument("--port", default="8866", metavar="N", help="Voilà's port of the first person (default 8866)")
    parser.add_argument("--ip", default="127.0.0.1", metavar="ADDR",
                        help="address Voilà listens on (default 127.0.0.1; see docs/seats.md for remote participants)")
    parser.set_defaults(func=_seat)


def _seat(args: argparse.Namespace) -> int:
    from colabkit.seat import lab_command, participant_notebook, persons_spec, voila_command
    from colabkit.session import SessionSettings
    from colabkit.tasks import load_tasks

    seed = parse_int(args.seed, "--seed", minimum=0)
    port = parse_int(args.port, "--port", minimum=1)
    timeout = None if args.timeout is None else float(parse_int(args.timeout, "--timeout", minimum=1))
    knobs = {"action_budget": parse_int(args.action_budget, "--action-budget", minimum=1),
             "max_rounds": parse_int(args.max_rounds, "--max-rounds", minimum=1)}
    if len(args.seat) != len(args.participant) or len(set(args.seat)) != len(args.seat):
        raise ColabkitError("give one --participant per --seat, and each seat once (e.g. --seat D --participant "
                            "p-1 --seat R --participant p-2)")
    persons = dict(zip(args.seat, args.participant))
    data_root = None if args.data_root is None else args.data_root.resolve()
    load_tasks(data_root).get(args.task)  # an unknown id is one clear line, before anything is written
    spec = persons_spec(args.task, args.variant, seed, persons, models=args.model, timeout_s=timeout,
                        fallback=args.fallback,
                        settings=SessionSettings(**{k: v for k, v in knobs.items() if v is not None}))
    out = args.out.resolve()
    folder = args.folder or out / "pages"
    print(f"session {spec.session_id}: {args.variant} on {args.task} (seed {seed}), persons "
          + ", ".join(f"{s}={p}" for s, p in persons.items()) + f"; stored under {out}")
    for offset, (seat, participant) in enumerate(persons.items()):
        parameters = {"task": args.task, "variant": args.variant, "seat": seat, "seed": seed,
                      "participant_id": participant, "persons": persons, "model": args.model,
                      "timeout_s": timeout, "fallback": args.fallback, "out": str(out),
                      "data_root": None if data_root is None else str(data_root), **knobs}
        notebook = participant_notebook(folder, parameters).resolve()
        print(f"\n{seat} ({participant}): {notebook}")
        print(f"  researcher view (JupyterLab, then Run > Run All Cells): {lab_command(notebook)}")
        print(f"  participant page (Voila, no code shown): {voila_command(notebook, port + offset, args.ip)}")
        print(f"  then open http://{args.ip}:{port + offset}/")
    return 0
