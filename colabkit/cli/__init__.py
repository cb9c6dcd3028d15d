"""The `colabkit` command line: one argparse program, one module per command group.

Each `colabkit/cli/<name>_cmd.py` module exposes `add_parser(subparsers)`, which adds its
sub-parser and sets `func` (a callable taking the parsed args and returning an exit code).
Modules are found by name, so a later command group is added by dropping in its module,
without touching this file. Command modules should import heavy layers (models, kernels)
inside their handlers so `colabkit tasks list` stays fast.

A `ColabkitError` (a mistake in the user's input) is printed as one line,
`colabkit: error: <message>`, with exit status 2 (argparse's own usage-error status);
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from colabkit import __version__
from colabkit.errors import ColabkitError


def command_modules() -> list[str]:
    """The command group modules in this package, in a stable order."""
    return sorted(name for _, name, _ in pkgutil.iter_modules(__path__) if name.endswith("_cmd"))


class _Version(argparse.Action):
    """`--version`: the package and its environment's lock (looked up only when asked)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from colabkit.environment import environment_stamp

        print(f"colabkit {__version__}; {environment_stamp().describe()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="colabkit",
        description="Study human-AI collaboration on DiscoveryBench data-analysis tasks.",
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="the package version and the locked environment it runs in, then exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in command_modules():
        importlib.import_module(f"{__name__}.{name}").add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (the console script passes it to sys.exit)."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ColabkitError as exc:
        message = " ".join(str(exc).split())
        print(f"colabkit: error: {message}", file=sys.stderr)
        return 2
