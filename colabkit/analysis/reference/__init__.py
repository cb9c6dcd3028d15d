"""Reference data shipped with the package: the seed paper's published numbers and their source.

`seed_paper()` reads `seed_paper.json`: per variant the published Performance, H_init,norm
and S_hyp (W_total, W_human for the DR pair), where each number comes from, and what is
missing (never filled in). The replication report (`colabkit.analysis.replication`) and the
power simulation's default effects (`colabkit.analysis.inference.power_analysis.simulate`) read it.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any


@cache
def seed_paper() -> dict[str, Any]:
    """The seed paper's published table, its source and what is missing (module docstring)."""
    return json.loads(resources.files(__name__).joinpath("seed_paper.json").read_text())
