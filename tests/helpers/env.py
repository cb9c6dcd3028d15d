"""What a test needs from the machine, and what happens when it is missing.

On a developer's machine a missing bubblewrap or a missing `../shared` copy of
DiscoveryBench skips the tests that need them; in CI (`CI=true`) the same absence fails,
so a CI image that lost bubblewrap or the data cannot turn the sandbox and real-data
proofs into silent skips.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[2]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def require(condition: bool, reason: str) -> None:
    """Skip (fail in CI) unless `condition` holds."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"required in CI (CI=true): {reason}")
    pytest.skip(reason)


def discoverybench_root() -> Path:
    """`shared/discoverybench` beside the repository (or beside a folder holding worktrees)."""
    for ancestor in _REPO.parents:
        candidate = ancestor / "shared" / "discoverybench"
        if candidate.is_dir():
            return candidate
    return _REPO.parent / "shared" / "discoverybench"


def shared_data() -> Path:
    """The DiscoveryBench copy with its 38 archaeology tasks (skip, or fail in CI, without it)."""
    root = discoverybench_root()
    require((root / "real" / "test" / "archaeology" / "metadata_0.json").is_file(),
            f"DiscoveryBench archaeology data not present at {root}")
    return root
