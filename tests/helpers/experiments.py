"""Small experiment configs for batch tests: the demo task, every role on one model, tiny budgets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def write_experiment(tmp_path: Path, name: str, **fields: Any) -> Path:
    """`<tmp_path>/exp.yaml`: demo task 0/0, single and default-dr, seeds 0-2, the scripted model,
    2 steps and 2 rounds, results under `<tmp_path>/results`; `fields` replace any of these."""
    data = {"name": name, "tasks": {"ids": ["demo_archaeology/0/0"]}, "variants": ["single", "default-dr"],
            "seeds": [0, 1, 2], "models": {"default": "scripted/everyone"},
            "settings": {"action_budget": 2, "max_rounds": 2}, "results": str(tmp_path / "results"), **fields}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data))
    return path
