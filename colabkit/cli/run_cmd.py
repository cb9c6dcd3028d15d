"""`colabkit run`: one session (task x variant x seed) from the shell, stored like any other.

It is a thin shell over `colabkit.store.build_session` + `record_session`, so a session run
here is the same session (same folder, same id) as one asked for from Python or the
notebook, and asking again returns the stored one instead of rerunning it. Events are shown
live on stderr; stdout gets three lines: where it went, how it ended, the hypothesis.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, overload

from colabkit.errors import ColabkitError

if TYPE_CHECKING:
    from colabkit.session import Event


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run one session and store its trajectory",
                                   description=__doc__.split("\n")[0])
    parser.add_argument("--task", required=True, metavar="ID", help="task id, e.g. archaeology/3/0")
    parser.add_argument("--variant", required=True, metavar="NAME", help="team variant, e.g. single, scaffolded-dr")
    # Integers are parsed here, not by argparse, so a bad value is one clear line like any other error.
    parser.add_argument("--seed", required=True, metavar="N", help="non-negative integer")
    parser.add_argument("--model", metavar="M", help="litellm model string for every role (default: embedded model)")
    parser.add_argument("--data-root", type=Path, default=None, metavar="DIR",
                        help="DiscoveryBench data folder or clone (default: the demo tasks)")
    parser.add_argument("--out", required=True, type=Path, metavar="DIR", help="results folder")
    parser.add_argument("--action-budget", metavar="N", help="task-phase actions before the session ends (default 30)")
    parser.add_argument("--max-rounds", metavar="N", help="rounds before the session ends (default 60)")
    parser.add_argument("--log-prompts", action="store_true",
                        help="also store every rendered prompt in <session>/prompts.jsonl (not part of the session id)")
    parser.add_argument("--quiet", action="store_true", help="do not show events as they happen")
    parser.set_defaults(func=_run)


@overload
def parse_int(text: str, flag: str, *, minimum: int) -> int: ...
@overload
def parse_int(text: None, flag: str, *, minimum: int) -> None: ...
def parse_int(text: str | None, flag: str, *, minimum: int) -> int | None:
    """`text` as an int >= minimum (None stays None), else a one-line error naming `flag`."""
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise ColabkitError(f"{flag} must be an integer >= {minimum}, got {text!r}")
    return value


def show_event(event: Event) -> None:
    """One stderr line per event: enough to watch a slow model make progress."""
    what = event.result.splitlines()[0][:70] if event.result else ""
    print(f"  [{event.seq:>3}] {event.phase:<5} r{event.round:<2} {event.participant:<6} "
          f"{event.action:<13} {event.status:<11} {what}", file=sys.stderr, flush=True)


def _run(args: argparse.Namespace) -> int:
    from colabkit.session import SessionSettings
    from colabkit.store import SessionRecord, build_session, is_finished, record_session, session_dir

    seed = parse_int(args.seed, "--seed", minimum=0)
    knobs = {"action_budget": parse_int(args.action_budget, "--action-budget", minimum=1),
             "max_rounds": parse_int(args.max_rounds, "--max-rounds", minimum=1)}
    settings = SessionSettings(**{k: v for k, v in knobs.items() if v is not None})
    spec, task = build_session(args.task, args.variant, seed, model=args.model, data_root=args.data_root,
                               settings=settings)
    stored = is_finished(session_dir(spec, args.out))
    if not stored and not args.quiet:
        print(f"running {spec.variant.name} on {task.id} (seed {seed}, session {spec.session_id})",
              file=sys.stderr, flush=True)
    folder = record_session(spec, task, out=args.out, progress=None if args.quiet else show_event,
                            log_prompts=args.log_prompts)
    record = SessionRecord.model_validate_json((folder / "session.json").read_bytes())
    totals = record.totals
    print(f"session: {folder}" + (" (already finished: not rerun)" if stored else ""))
    print(f"ended by: {record.ended_by} after {int(totals.get('actions', 0))} actions, "
          f"{int(totals.get('llm_calls', 0))} LLM calls, {int(totals.get('tokens', 0))} tokens, "
          f"${totals.get('cost', 0.0):.4f}")
    hypothesis = " ".join(record.final_hypothesis.split())
    print(f"final hypothesis: {hypothesis or '(empty)'}")
    return 0
