"""Where the tests find the real DiscoveryBench copy (never part of the repository).

The copy lives in a `shared/discoverybench` folder beside the checkout or one of its parents
(`/work/shared` for `/work/main` and for worktrees under `/work/wt/`), or wherever
`COLABKIT_DISCOVERYBENCH` points. Outside CI a missing copy skips the test with the places
searched; in CI (`CI` set) it fails, since there the copy is part of the test setup.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENV = "COLABKIT_DISCOVERYBENCH"
_REPO = Path(__file__).resolve().parents[2]


def candidates() -> list[Path]:
    env = os.environ.get(ENV)
    found = [Path(env)] if env else []
    return found + [parent / "shared" / "discoverybench" for parent in _REPO.parents]


def discoverybench_root() -> Path:
    """The copy's folder (it has `real/`), or a skip (a failure in CI) naming where it looked."""
    for folder in candidates():
        if (folder / "real").is_dir():
            return folder
    reason = f"DiscoveryBench copy not found (set {ENV}; looked in {', '.join(map(str, candidates()[:3]))}, ...)"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)
