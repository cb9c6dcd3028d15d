"""`colabkit run`: one session (task x variant x seed) from the shell, stored like any other.

It is a thin shell over `colabkit.runner.build_session` + `record_session`, so a session run
here is the same session (same folder, same id) as one asked for from Python or the
notebook, and asking again returns the stored one instead of rerunning it. `--variant-file
F.yaml --variant NAME` runs an inline variant declared in a file (`colabkit.team.declare`).
Events are shown live on stderr; stdout gets three lines: where it went, how it ended, the
hypothesis, and a fourth, last, when a participant ran on the embedded model: that the session
is plumbing-grade.

Before a session runs, `preflight` checks its models (provider known, key set). A session
a provider refused (ended by "provider_error": bad key, unknown model), could not reach
past the retry bound (ended by "provider_unavailable": an outage) or whose workspace kernel
would not start though tried twice (ended by "kernel_unavailable") is no result: the
command ends with that one-line error, and asking again runs it again. `--retry-errors`
also reruns a stored session that crashed (ended by "error"), as `colabkit batch
--retry-errors` does. A session that failed keeps its logs (kernel, workspace, host) in its
folder's `logs/`, and the command names that folder.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, overload

from colabkit.errors import ColabkitError

# The stored session's record, written last: its presence marks the session finished.
RECORD_FILE = "session.json"

if TYPE_CHECKING:
    from colabkit.session import Event, SessionSpec
    from colabkit.session.totals import Totals
    from colabkit.tasks import Task


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run one session and store its trajectory",
                                   description=__doc__.split("\n")[0])
    # --task, --seed and --out are required, but checked after --variant (`_required`): a wrong
    # variant name lists the valid ones even when the other flags are still missing.
    parser.add_argument("--task", metavar="ID", help="task id, e.g. archaeology/3/0 (required)")
    parser.add_argument("--variant", required=True, metavar="NAME", help="team variant, e.g. single, scaffolded-dr")
    parser.add_argument("--variant-file", type=Path, default=None, metavar="F.yaml",
                        help="a file of inline variants and personas (variants:, personas:); --variant names one")
    # Integers are parsed here, not by argparse, so a bad value is one clear line like any other error.
    parser.add_argument("--seed", metavar="N", help="non-negative integer (required)")
    parser.add_argument("--model", metavar="M", help="litellm model string for every role (default: embedded model)")
    parser.add_argument("--data-root", type=Path, default=None, metavar="DIR",
                        help="DiscoveryBench data folder or clone (default: the demo tasks)")
    parser.add_argument("--out", type=Path, metavar="DIR", help="results folder (required)")
    parser.add_argument("--action-budget", metavar="N", help="task-phase actions of the AI agent, the session's clock, and of each simulated human (default 30)")
    parser.add_argument("--max-rounds", metavar="N", help="rounds before the session ends (default 60)")
    parser.add_argument("--log-prompts", action="store_true",
                        help="also store every rendered prompt in <session>/prompts.jsonl (not part of the session id)")
    parser.add_argument("--retry-errors", action="store_true",
                        help="also rerun the session if it is stored and ended with error (as colabkit batch "
                             "--retry-errors; a provider's or a missing kernel's end reruns anyway)")
    parser.add_argument("--quiet", action="store_true", help="do not show events as they happen")
    parser.set_defaults(func=_run, run_parser=parser)


@overload
def parse_int(text: str, flag: str, *, minimum: int) -> int: ...
@overload
def parse_int(text: str | None, flag: str, *, minimum: int) -> int | None: ...
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


class _ProviderWatch:
    """A progress callback that keeps the one-line error of a session that ends without a
    result (a provider's end, a kernel that would not start: `NO_RESULT_ENDINGS`)."""

    def __init__(self, show: bool) -> None:
        self.show = show
        self.error: str | None = None

    def __call__(self, event: Event) -> None:
        from colabkit.runner.recorder import NO_RESULT_ENDINGS

        if event.action == "session_end" and event.args.get("ended_by") in NO_RESULT_ENDINGS:
            self.error = event.result
        if self.show:
            show_event(event)


def will_run(spec: SessionSpec, out: Path, *, retry_errors: bool = False) -> bool:
    """Whether `spec`'s session still has to run; if so, its models are preflighted.

    A stored session runs again if it ended without a result (a provider refused it or was
    out of reach, its kernel would not start: `NO_RESULT_ENDINGS`), so fixing the key and
    asking again is enough; with `retry_errors` also if it crashed (every infrastructure
    end). It is reopened under the session's lock, like `colabkit batch --retry-errors` does.
    """
    from datetime import UTC, datetime

    from colabkit.llm.preflight import preflight
    from colabkit.runner.recorder import NO_RESULT_ENDINGS, RETRYABLE_ENDINGS, reopen_for_retry
    from colabkit.store import is_finished, session_dir

    reopen_for_retry([spec], out, before=datetime.now(UTC),
                     endings=RETRYABLE_ENDINGS if retry_errors else NO_RESULT_ENDINGS)
    if is_finished(session_dir(spec, out)):
        return False
    preflight(spec.model_for(role) for role in spec.participants)
    return True


def store_session(spec: SessionSpec, task: Task, out: Path, *, runs: bool, show: bool,
                  log_prompts: bool = False) -> tuple[Path, str | None]:
    """`record_session`, with the live view if `show`; returns the folder and the provider's
    error if a provider refused the session (`runs` as `will_run` said)."""
    from colabkit.runner import record_session

    watch = _ProviderWatch(show=runs and show)
    folder = record_session(spec, task, out=out, progress=watch, log_prompts=log_prompts)
    return folder, watch.error


def _run(args: argparse.Namespace) -> int:
    from colabkit.runner import build_session
    from colabkit.runner.failure_logs import logs_dir
    from colabkit.session import SessionSettings
    from colabkit.store import SessionRecord
    from colabkit.team import variant
    from colabkit.team.declare import variant_from_file

    chosen = variant_from_file(args.variant_file, args.variant) if args.variant_file else variant(args.variant)
    _required(args, "--task", "--seed", "--out")
    seed = parse_int(args.seed, "--seed", minimum=0) or 0  # required: never None
    knobs = {"action_budget": parse_int(args.action_budget, "--action-budget", minimum=1),
             "max_rounds": parse_int(args.max_rounds, "--max-rounds", minimum=1)}
    settings = SessionSettings(**{k: v for k, v in knobs.items() if v is not None})
    spec, task = build_session(args.task, chosen, seed, model=args.model, data_root=args.data_root,
                               settings=settings)
    runs = will_run(spec, args.out, retry_errors=args.retry_errors)
    if runs and not args.quiet:
        print(f"running {spec.variant.name} on {task.id} (seed {seed}, session {spec.session_id})",
              file=sys.stderr, flush=True)
    folder, provider_error = store_session(spec, task, args.out, runs=runs, show=not args.quiet,
                                           log_prompts=args.log_prompts)
    record = SessionRecord.model_validate_json((folder / RECORD_FILE).read_bytes())
    totals = record.totals
    print(f"session: {folder}" + ("" if runs else " (already finished: not rerun)"))
    print(f"ended by: {record.ended_by} after {totals.actions} actions (AI {totals.ai_actions}, "
          f"humans {totals.human_actions}), {totals.llm_calls} LLM calls, {totals.tokens} tokens, "
          f"{_paid(totals)}")
    hypothesis = " ".join(record.final_hypothesis.split())
    print(f"final hypothesis: {hypothesis or '(empty)'}")
    if (logs := logs_dir(folder)).is_dir():
        print(f"logs kept: {logs} (kernel, workspace, host)"
              + ("; rerun: the same command" if provider_error is not None
                 else "; rerun: the same command with --retry-errors" if record.ended_by == "error" else ""))
    if provider_error is not None:
        raise ColabkitError(provider_error)
    if note := plumbing_note(spec.model_for(role).model for role in spec.participants):
        print(note)
    return 0


def _required(args: argparse.Namespace, *flags: str) -> None:
    """argparse's own error for required flags (`colabkit run: error: ...`, exit 2), checked
    after the variant's name so that a wrong name is answered first, with the valid ones."""
    missing = [flag for flag in flags if getattr(args, flag.removeprefix("--").replace("-", "_")) is None]
    if missing:
        args.run_parser.error(f"the following arguments are required: {', '.join(missing)}")


def plumbing_note(models: Iterable[str]) -> str | None:
    """The last line for a session a participant of which ran on the embedded model."""
    from colabkit.llm import DEFAULT_MODEL

    if DEFAULT_MODEL not in set(models):
        return None
    return (f"plumbing-grade: {DEFAULT_MODEL} (the embedded model) played this session; it exercises the suite, "
            "its results mean nothing about the study (--model for a capable model)")


def _paid(totals: Totals) -> str:
    """What the session paid, and what the suite's cache replayed without paying."""
    paid = "unknown paid" if totals.paid_cost is None else f"${totals.paid_cost:.4f} paid"
    replays = f" ({totals.suite_replays} answers replayed from the cache, not paid again)" if totals.suite_replays else ""
    return paid + replays
