"""A scripted model for tests: `scripted/<name>` answers with the next scripted output.

Session mechanics (turn order, gates, failed steps) must be testable deterministically and
instantly, so each role gets a ModelConfig `scripted/<name>` and this double pops
`scripts[name]` on every call. It is a real litellm `CustomLLM` behind the real gateway, so
caching, retries and accounting run exactly as with a model. `default` may be a policy, a
function of the model name and the messages it is sent (for scripted players that answer
what they are shown, e.g. a signatory approving the newest request open for it). Outputs may be strings, dicts
(sent as JSON) or exceptions (raised: litellm exceptions keep their type, e.g.
`litellm.RateLimitError`; any other exception reaches the gateway as a litellm
`APIConnectionError`, which is retried). When a script runs out, `default` is returned.
`latency_s` makes every async call take that long (a model mid-answer, for batch tests).

Decision steps (the engine asks a member to approve, reject or wait in steps of their own,
apart from its own steps): a script's approve/reject entries are its decisions and every other
entry one of its own steps. Each kind of step pops only its kind: where the script's next entry
is of the other kind, the double answers a wait without popping (at a decision step: the
requests stay open; at its own step: a wait, as when a decision took the member's turn). So a
script written as "approve req-1, then code" decides at the decision step of the turn that
approves and runs the code at its next own step.

Other processes (a `colabkit batch` subprocess, its papermill kernels, Dask workers) get
the same double through `scripted_plugin`, loaded there by `COLABKIT_PROVIDER_PLUGINS`.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from typing import Any

import litellm
from litellm import CustomLLM
from litellm.types.utils import ModelResponse, Usage

from colabkit.llm import register_provider

PROVIDER = "scripted"
DEFAULT_OUTPUT = '{"thought": "done", "action": "wait"}'

Output = str | dict | BaseException
Policy = Callable[[str, list[dict[str, Any]]], str | dict]


class ScriptedModel(CustomLLM):
    """Pops scripted outputs per model name and remembers every request in `calls`."""

    def __init__(self, scripts: dict[str, list[Output]], default: str | dict | Policy | None = None,
                 latency_s: float = 0.0):
        super().__init__()
        self.latency_s = latency_s
        self.scripts = {name: list(outputs) for name, outputs in scripts.items()}
        self.default: str | dict | Policy = DEFAULT_OUTPUT if default is None else default
        self.calls: list[dict[str, Any]] = []

    def completion(self, model: str, messages: list, api_base: Any, custom_prompt_dict: Any,
                   model_response: ModelResponse, print_verbose: Any, encoding: Any,
                   api_key: Any, logging_obj: Any, optional_params: dict,
                   acompletion: Any = None, litellm_params: dict | None = None,
                   logger_fn: Any = None, headers: Any = None, timeout: Any = None,
                   client: Any = None) -> ModelResponse:
        metadata = (litellm_params or {}).get("metadata") or {}
        self.calls.append({"name": model, "messages": copy.deepcopy(messages),
                           "caller": metadata.get("caller"), "params": dict(optional_params)})
        queue = self.scripts.get(model)
        if queue and _offered(optional_params) and _decision_step(optional_params) != _is_decision(queue[0]):
            output: Output | Policy = DEFAULT_OUTPUT  # the entry is for the other kind of step
        else:
            output = queue.pop(0) if queue else self.default
        if callable(output) and not isinstance(output, BaseException):
            output = output(model, messages)
        if isinstance(output, BaseException):
            raise output
        text = output if isinstance(output, str) else json.dumps(output)
        prompt_words = sum(len(str(m.get("content", "")).split()) for m in messages)
        model_response.choices[0].message.content = text
        model_response.choices[0].finish_reason = "stop"
        model_response.model = f"{PROVIDER}/{model}"
        model_response.usage = Usage(prompt_tokens=prompt_words,
                                     completion_tokens=len(text.split()),
                                     total_tokens=prompt_words + len(text.split()))
        return model_response

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        return self.completion(*args, **kwargs)


def _offered(params: dict[str, Any]) -> set[str]:
    """The actions the request's answer schema offers (empty: no step schema)."""
    fmt = params.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = fmt["json_schema"].get("schema", {})
    elif isinstance(fmt, type) and hasattr(fmt, "model_json_schema"):
        schema = fmt.model_json_schema()
    else:
        return set()
    action = schema.get("properties", {}).get("action", {})
    return set(action.get("enum") or [])


def _decision_step(params: dict[str, Any]) -> bool:
    """Whether the request is a decision step: approve/reject, at most a wait beside them."""
    offered = _offered(params)
    return bool(offered & {"approve", "reject"}) and offered <= {"approve", "reject", "wait"}


def _is_decision(output: object) -> bool:
    if isinstance(output, str):
        try:
            output = json.loads(output)
        except ValueError:
            return False
    return isinstance(output, dict) and output.get("action") in ("approve", "reject")


def use_scripted(scripts: dict[str, list[Output]],
                 default: str | dict | Policy | None = None) -> ScriptedModel:
    """Install a fresh ScriptedModel as the `scripted` provider and return it."""
    model = ScriptedModel(scripts, default=default)
    register_provider(PROVIDER, model)
    return model


def rate_limited(message: str = "slow down") -> litellm.RateLimitError:
    return litellm.RateLimitError(message, llm_provider=PROVIDER, model="scripted")


def server_error(message: str = "upstream failed") -> litellm.InternalServerError:
    return litellm.InternalServerError(message, llm_provider=PROVIDER, model="scripted")


def timed_out(message: str = "request timed out") -> litellm.Timeout:
    return litellm.Timeout(message, model="scripted", llm_provider=PROVIDER)
