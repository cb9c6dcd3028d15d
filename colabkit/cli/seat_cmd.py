"""`colabkit seat`: how to start a session with a person in a seat (JupyterLab or Voilà).

A seat session waits for a person, so it is never run from the shell or a batch. This
command checks the names (task, variant, seat), writes the participant's copy of
`notebooks/take_a_seat.ipynb` with those parameters, and prints the two ways to open it:
in JupyterLab (for the researcher), or served by Voilà (the participant page: one kernel per
visitor, no code shown).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from colabkit.cli.run_cmd import parse_int


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("seat", help="print how to start a session with a person in a seat",
                                   description=__doc__.split("\n")[0])
    parser.add_argument("--task", required=True, metavar="ID", help="task id, e.g. demo_archaeology/0/0")
    parser.add_argument("--variant", required=True, metavar="NAME", help="team variant with the seat, e.g. scaffolded-dr")
    parser.add_argument("--seat", required=True, choices=["D", "R"], help="the seat the person plays")
    parser.add_argument("--participant", required=True, metavar="ID", help="pseudonymous participant id, e.g. p-017")
    parser.add_argument("--seed", default="0", metavar="N", help="non-negative integer (default 0)")
    parser.add_argument("--model", metavar="M", help="litellm model string of the others (default: embedded model)")
    parser.add_argument("--timeout", metavar="S", help="seconds per step before the fallback takes it (default: none)")
    parser.add_argument("--fallback", choices=["wait", "model"], default="wait",
                        help="what takes a timed-out step: a wait, or the persona's model (default wait)")
    parser.add_argument("--out", type=Path, default=Path("results/seats"), metavar="DIR", help="results folder")
    parser.add_argument("--folder", type=Path, default=Path("seats"), metavar="DIR",
                        help="where the participant's notebook is written (default ./seats)")
    parser.add_argument("--port", default="8866", metavar="N", help="Voilà's port (default 8866)")
    parser.set_defaults(func=_seat)


def _seat(args: argparse.Namespace) -> int:
    from colabkit.seat import participant_notebook, seat_spec, voila_command
    from colabkit.tasks import load_tasks

    seed = parse_int(args.seed, "--seed", minimum=0)
    port = parse_int(args.port, "--port", minimum=1)
    timeout = None if args.timeout is None else float(parse_int(args.timeout, "--timeout", minimum=1))
    load_tasks().get(args.task)  # an unknown id is one clear line, before anything is written
    seat_spec(args.task, args.variant, args.seat, seed, participant_id=args.participant, models=args.model,
              timeout_s=timeout, fallback=args.fallback)
    parameters = {"task": args.task, "variant": args.variant, "seat": args.seat, "seed": seed,
                  "participant_id": args.participant, "model": args.model, "timeout_s": timeout,
                  "fallback": args.fallback, "out": str(args.out.resolve())}
    notebook = participant_notebook(args.folder, parameters)
    print(f"participant notebook: {notebook}")
    print(f"JupyterLab (researcher): .venv/bin/jupyter lab {notebook}   (then Run > Run All Cells)")
    print(f"Voila (participant page, no code shown): {voila_command(notebook.resolve(), port)}")
    print(f"then open http://127.0.0.1:{port}/ ; the session is stored under {args.out}")
    return 0
