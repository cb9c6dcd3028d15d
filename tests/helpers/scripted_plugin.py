"""The scripted model in another process: `COLABKIT_PROVIDER_PLUGINS=helpers.scripted_plugin:providers`.

Test-only. A batch test starts `colabkit batch` (and through it papermill kernels, or Dask
workers) as separate processes; each builds its own `ScriptedModel` from the JSON in
`COLABKIT_SCRIPTED` ({"default": ..., "scripts": {...}, "latency_s": ...}) when litellm is
first set up. The tests folder must be on PYTHONPATH (`subprocess_env` does that).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from helpers.scripted import PROVIDER, ScriptedModel

ENV = "COLABKIT_SCRIPTED"
TESTS_DIR = Path(__file__).resolve().parents[1]
REPO = TESTS_DIR.parent


def providers() -> dict[str, ScriptedModel]:
    config = json.loads(os.environ.get(ENV, "{}"))
    return {PROVIDER: ScriptedModel(config.get("scripts", {}), default=config.get("default"),
                                    latency_s=float(config.get("latency_s", 0.0)))}


def subprocess_env(*, default: Any, latency_s: float = 0.0, **extra: str) -> dict[str, str]:
    """os.environ plus what a child process needs to answer `scripted/...` models like this."""
    path = os.pathsep.join([str(REPO), str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path, "COLABKIT_PROVIDER_PLUGINS": f"{__name__}:providers",
            ENV: json.dumps({"default": default, "latency_s": latency_s}), **extra}
