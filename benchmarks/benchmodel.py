"""Shared pieces of the session benchmarks: a scripted team model, session specs, results.

`BenchModel` is a scripted model for benchmarks only (never an agent): a litellm `CustomLLM`
behind the real gateway, so caching, validation and accounting run as with a real model.
It answers from the request alone (no state shared between sessions, so one instance can
serve a batch): the step number comes from the "N actions left" line of the prompt, the
participant from the model name `bench/<pid>`, the schema from `response_format`. The AI
agent runs pandas cells on the task's files, messages the team and edits the hypothesis;
the simulated humans answer in the chat, run a cell now and then, and approve requests
addressed to them. Nobody finishes, so a session runs its whole per-side budgets (the
longest, most expensive session the settings allow). `latency_s` sleeps in every call
(asyncio, like a network request) to stand in for a remote model.

Run from the repository root (`benchmarks/` is put on `sys.path` by Python itself).
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from litellm import CustomLLM
from litellm.types.utils import ModelResponse, Usage

from colabkit.llm import ModelConfig, register_provider
from colabkit.runner import arecord_session  # noqa: F401  (re-exported for the session benchmarks)
from colabkit.session import SessionSettings, SessionSpec
from colabkit.store.atomic import atomic_write_text
from colabkit.tasks import Task, load_tasks
from colabkit.team import variant

PROVIDER = "bench"
RESULTS = Path(__file__).resolve().parent / "results"
TASK_ID = "demo_archaeology/0/0"
_LEFT = re.compile(r"(\d+) actions left")
_REQUEST = re.compile(r"^(req-\d+) from \S+ to (\S+) \[pending\]", re.MULTILINE)
SLOTS = ("expertise", "responsibility", "plan", "evidence_standards")


def task() -> Task:
    return load_tasks().get(TASK_ID)


def _ai_steps(files: list[str]) -> list[dict[str, str]]:
    first = files[0]
    other = files[-1]
    return [
        {"action": "execute_code", "content": f"import pandas as pd\ndf = pd.read_csv('data/{first}')\n"
                                              "print(df.shape); print(df.head(8).to_string())"},
        {"action": "send_message", "to": "all", "content": "I loaded {f}. Which columns matter for the query, "
                                                          "and are there quirks in how they were recorded?"},
        {"action": "execute_code", "content": "print(df.describe(include='all').T.to_string())"},
        {"action": "execute_code", "content": f"other = pd.read_csv('data/{other}')\nprint(other.shape)\n"
                                              "print(other.sample(6, random_state={k}).to_string())"},
        {"action": "edit_result", "content": "Draft {k}: the measure rises over time in the study region "
                                             "(evidence pending; cell {k} shows the trend)."},
        {"action": "execute_code", "content": "num = df.select_dtypes('number')\n"
                                              "print(num.corr().round(3).to_string())"},
        {"action": "send_message", "to": "all", "content": "Correlations are in the last cell (step {k}). "
                                                          "Does that fit what you know?"},
    ]


def _human_steps() -> list[dict[str, str]]:
    return [
        {"action": "send_message", "to": "all", "content": "{pid}: the period column is coded by phase; "
                                                          "check step {k} against the dating notes."},
        {"action": "execute_code", "content": "print(df.isna().sum().to_string())"},
        {"action": "send_message", "to": "ai", "content": "{pid}: I would use the settlement proxy as the "
                                                         "outcome, not the raw count (step {k})."},
    ]


class BenchModel(CustomLLM):
    """Scripted team answers from the prompt alone; optional fixed latency per call."""

    def __init__(self, files: list[str], latency_s: float = 0.0) -> None:
        super().__init__()
        self.ai = _ai_steps(files)
        self.human = _human_steps()
        self.latency_s = latency_s
        self.calls = 0
        self.model_time = 0.0
        # Called with (participant, messages, kind) on every request; kind is "step" or "build".
        self.on_call: Callable[[str, list[dict[str, Any]], str], None] | None = None

    def answer(self, pid: str, messages: list[dict[str, Any]], schema: dict[str, Any]) -> dict[str, Any]:
        props = schema.get("properties", {})
        prompt = str(messages[-1].get("content", ""))
        if "reply" in props:  # a ratification
            return {"reply": {"decision": "accept"}}
        if "action" not in props:  # a memory proposal, consolidation or amendment
            slots = {slot: f"{pid} on {slot}: see the briefing" for slot in SLOTS if slot in props}
            return {**slots, "gates": []} if "gates" in props else slots
        requests = [m.group(1) for m in _REQUEST.finditer(prompt) if m.group(2) == pid]
        if requests:
            return {"thought": "the proposal follows from the cells", "action": "approve",
                    "content": "consistent with the evidence", "to": requests[0]}
        left = _LEFT.search(prompt)
        k = 100 - int(left.group(1)) if left else 0
        rota = self.ai if pid == "ai" else self.human
        step = dict(rota[k % len(rota)])
        if step["action"] == "send_message" and "- send_message:" not in prompt:  # alone: no chat
            step = dict(self.ai[2])
        step["content"] = step["content"].replace("{k}", str(k)).replace("{pid}", pid).replace("{f}", "the data")
        return {"thought": f"step {k}: {step['action']}", "to": "", **step}

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        raise NotImplementedError("the bench model is async only")

    async def acompletion(self, model: str, messages: list, api_base: Any, custom_prompt_dict: Any,
                          model_response: ModelResponse, print_verbose: Any, encoding: Any, api_key: Any,
                          logging_obj: Any, optional_params: dict, *args: Any, **kwargs: Any) -> ModelResponse:
        if self.latency_s:
            t0 = time.perf_counter()
            await asyncio.sleep(self.latency_s)
            self.model_time += time.perf_counter() - t0
        self.calls += 1
        fmt = optional_params.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema", {}) if isinstance(fmt, dict) else {}
        if self.on_call is not None:
            self.on_call(model, messages, "step" if "action" in schema.get("properties", {}) else "build")
        text = json.dumps(self.answer(model, messages, schema))
        words = sum(len(str(m.get("content", "")).split()) for m in messages)
        model_response.choices[0].message.content = text  # type: ignore[union-attr]
        model_response.choices[0].finish_reason = "stop"
        model_response.model = f"{PROVIDER}/{model}"
        model_response.usage = Usage(prompt_tokens=words, completion_tokens=len(text.split()),  # type: ignore[attr-defined]
                                     total_tokens=words + len(text.split()))
        return model_response


def install(latency_s: float = 0.0) -> BenchModel:
    """A fresh bench model serving `bench/<pid>`, for the demo task's files."""
    model = BenchModel([d.path.name for d in task().datasets], latency_s)
    register_provider(PROVIDER, model)
    return model


def spec(variant_name: str, seed: int = 0, *, context_window: int | None = None, budget: int = 30) -> SessionSpec:
    """A session of the demo task with every role on the bench model (compact unless a window is given)."""
    var = variant(variant_name)
    return SessionSpec(task_id=TASK_ID, variant=var, seed=seed,
                       models={pid: ModelConfig(model=f"{PROVIDER}/{pid}") for pid in var.team},
                       settings=SessionSettings(action_budget=budget, context_window=context_window))


def machine() -> dict[str, Any]:
    """Where a figure came from: CPU, cores, memory, load, Python, commit."""
    import psutil

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent, check=False).stdout.strip()
    except OSError:
        commit = ""
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "load_1min": round(os.getloadavg()[0], 2), "python": platform.python_version(),
            "platform": platform.platform(), "commit": commit}


def write_result(name: str, payload: dict[str, Any]) -> Path:
    """benchmarks/results/<name>.json, atomically, with the machine and the time."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    body = {"benchmark": name, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": machine(), **payload}
    atomic_write_text(path, json.dumps(body, indent=1, default=str) + "\n")
    print(f"wrote {path}")
    return path
