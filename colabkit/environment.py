"""Which environment produced a result: the lock it was installed from, and any drift from it.

A study's numbers are reproducible only if its environment is. `make setup` installs
`requirements.lock` (every package pinned and hashed) and nothing else; this module names
that lock by its hash and compares it with what is actually importable, so a session record,
a score file or `colabkit --version` can say "made under lock 1a2b... exactly" or list how the
running environment differs (a package another tool upgraded, one installed by hand).
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict

from colabkit.hashing import sha256_bytes

LOCK_FILE: Final = "requirements.lock"
"""Beside the package's folder in a checkout (`make setup` installs colabkit editable from it)."""
UNLOCKED: Final = frozenset({"colabkit", "pip"})
"""Installed but never in the lock: the suite itself, and pip (pinned by the Makefile)."""
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them (`Jupyter_Client` == `jupyter-client`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_lock(text: str) -> dict[str, str]:
    """`name==version` pins of a requirements lock (hash and comment lines skipped)."""
    pins = {}
    for line in text.splitlines():
        match = _PIN.match(line.strip())
        if match:
            pins[canonical(match.group(1))] = match.group(2)
    return pins


def installed() -> dict[str, str]:
    """Every distribution importable in this interpreter, by canonical name."""
    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found.setdefault(canonical(name), dist.version)
    return found


def drift(pins: dict[str, str], have: dict[str, str]) -> tuple[str, ...]:
    """How `have` differs from the lock's `pins`: missing, other versions, and unlocked extras."""
    lines = [f"{name} missing (locked {version})" for name, version in sorted(pins.items()) if name not in have]
    lines += [f"{name} {have[name]} (locked {version})" for name, version in sorted(pins.items())
              if name in have and have[name] != version]
    lines += [f"{name} {version} (not in the lock)" for name, version in sorted(have.items())
              if name not in pins and name not in UNLOCKED]
    return tuple(lines)


class EnvironmentStamp(BaseModel):
    """The lock a result was made under (its sha256's first 16 hex digits) and the drift from it."""

    model_config = ConfigDict(frozen=True)

    lock: str | None
    """None when no lock file is beside the package (an install from a wheel, not a checkout)."""
    drift: tuple[str, ...] = ()

    @property
    def exact(self) -> bool:
        return self.lock is not None and not self.drift

    def describe(self) -> str:
        if self.lock is None:
            return f"no {LOCK_FILE} beside the package (environment not locked)"
        if not self.drift:
            return f"lock {self.lock} (installed exactly)"
        shown = "; ".join(self.drift[:5]) + (f"; {len(self.drift) - 5} more" if len(self.drift) > 5 else "")
        return f"lock {self.lock} with {len(self.drift)} difference(s): {shown}"


def lock_path() -> Path:
    return Path(__file__).resolve().parents[1] / LOCK_FILE


@lru_cache(maxsize=1)
def environment_stamp() -> EnvironmentStamp:
    """This process's stamp (computed once: the environment does not change under a run)."""
    path = lock_path()
    if not path.is_file():
        return EnvironmentStamp(lock=None)
    raw = path.read_bytes()  # hashed as stored, so `sha256sum requirements.lock` names the same lock
    return EnvironmentStamp(lock=sha256_bytes(raw)[:16], drift=drift(parse_lock(raw.decode("utf-8")), installed()))


def main() -> int:
    """`python -m colabkit.environment [--strict | --unlocked]`: print the stamp; with --strict,
    exit 1 on any difference from the lock (`make setup` ends with it); with --unlocked, print
    only the installed distributions the lock does not name (`make setup` removes them)."""
    import sys

    if "--unlocked" in sys.argv[1:]:
        path = lock_path()
        pins = parse_lock(path.read_text(encoding="utf-8")) if path.is_file() else {}
        print(" ".join(sorted(set(installed()) - set(pins) - UNLOCKED)))
        return 0
    stamp = environment_stamp()
    print(f"colabkit environment: {stamp.describe()}")
    for line in stamp.drift[5:]:
        print(f"  {line}")
    return 1 if "--strict" in sys.argv[1:] and not stamp.exact else 0


if __name__ == "__main__":
    raise SystemExit(main())
