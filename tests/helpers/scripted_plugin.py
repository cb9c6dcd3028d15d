"""The scripted model in another process: `COLABKIT_PROVIDER_PLUGINS=helpers.scripted_plugin:providers`.

Test-only. A batch test starts `colabkit batch` (and through it papermill kernels, or Dask
workers) as separate processes; each builds its own `ScriptedModel` from the JSON in
`COLABKIT_SCRIPTED` ({"default": ..., "scripts": {...}, "latency_s": ...}) when litellm is
first set up. Scripts are per process: every kernel pops its own copy. `judgedouble/...`
models get the judge double, which gives its `CANNED_ANSWERS` answer, else answers as the
perfect judge. The tests folder must be on PYTHONPATH (`subprocess_env` does that).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from litellm import CustomLLM

from helpers.judges import CANNED_ANSWERS, JudgeDouble, perfect_answer
from helpers.judges import PROVIDER as JUDGE_PROVIDER
from helpers.scripted import PROVIDER, ScriptedModel

ENV = "COLABKIT_SCRIPTED"
TESTS_DIR = Path(__file__).resolve().parents[1]
REPO = TESTS_DIR.parent


def canned_or_perfect(prompt_id: str, payload: dict[str, Any]) -> Any:
    return CANNED_ANSWERS[prompt_id] if prompt_id in CANNED_ANSWERS else perfect_answer(prompt_id, payload)


def providers() -> dict[str, CustomLLM]:
    config = json.loads(os.environ.get(ENV, "{}"))
    return {PROVIDER: ScriptedModel(config.get("scripts", {}), default=config.get("default"),
                                    latency_s=float(config.get("latency_s", 0.0))),
            JUDGE_PROVIDER: JudgeDouble(fallback=canned_or_perfect)}


def subprocess_env(*, default: Any, latency_s: float = 0.0, scripts: dict[str, list[Any]] | None = None,
                   **extra: str) -> dict[str, str]:
    """os.environ plus what a child process needs to answer `scripted/...` (and `judgedouble/...`)
    models like this."""
    path = os.pathsep.join([str(REPO), str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    config = {"default": default, "latency_s": latency_s, "scripts": scripts or {}}
    return {**os.environ, "PYTHONPATH": path, "COLABKIT_PROVIDER_PLUGINS": f"{__name__}:providers",
            ENV: json.dumps(config), **extra}
