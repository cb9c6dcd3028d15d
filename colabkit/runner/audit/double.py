"""The behavioural audit's scripted model: a test double, used by `colabkit audit` only.

`AuditScript` stands in for every role's model while the audit plays one scripted
trajectory in every variant (`colabkit.runner.audit.behaviour`). It is never offered as an
agent: its provider name (`PROVIDER`) is registered only for the audit's own run, and a
participant's answer is a fixed script, not a decision. What it does is the same in every
variant, so only the structure can make two variants' runs differ:

- each role has a list of steps (`TRAJECTORY`): the AI runs a cell, sends one malformed
  answer (so the gateway's repair prompt is exercised), runs a failing cell, edits the result
  early, runs two more cells and edits it again at its last step; a human sends one
  message and then waits;
- whatever the script says, a participant shown an approval request (or a memory update)
  approves the first one listed: gated proposals get decided, in the variants that hold them;
- each role's first request that carries a native JSON schema is refused as a provider
  refusing `response_format` would be, so every later request goes out in JSON mode with
  the schema's text in the system message (the gateway's fallback) and is compared as sent.

Every request is kept (`calls`: role, messages, the parameters litellm passed) for the
comparison.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import litellm
from litellm import CustomLLM
from litellm.types.utils import ModelResponse, Usage

PROVIDER = "colabkit-audit"
MALFORMED = "{not json: a malformed answer the gateway must repair"
STEPS = 6
"""The AI's steps in the audit's run (`colabkit.runner.audit.behaviour`): the script's length."""


def _step(action: str, content: str = "", to: str = "") -> str:
    return json.dumps({"thought": f"audit: {action}", "action": action, "content": content, "to": to})


TRAJECTORY: dict[str, list[str]] = {
    "ai": [_step("execute_code", "rows = 3\nprint(rows)"), MALFORMED,
           _step("execute_code", "raise ValueError('audit: a failed cell')"),
           _step("edit_result", "audit: an early hypothesis"), _step("execute_code", "print(rows * 2)"),
           _step("execute_code", "total = rows * 2"), _step("edit_result", "audit: the final hypothesis")],
    "D": [_step("send_message", "audit: a note from D", "all")],
    "R": [_step("send_message", "audit: a note from R", "all")],
}
"""Each role's answers in order (the malformed one is followed by its repair's answer)."""
_AI_MORE = _step("execute_code", "print('audit: past the script')")
_WAIT = _step("wait")
_OPEN = re.compile(r"^# (?:Approval requests|Memory updates) for you.*?\n(.*?)(?=\n\n# |\Z)", re.S | re.M)
_REQUEST = re.compile(r"\b((?:req|upd)-\d+)\b")


class AuditScript(CustomLLM):
    """The audit's scripted stand-in for every model (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts = {role: list(steps) for role, steps in TRAJECTORY.items()}
        self.calls: list[dict[str, Any]] = []
        self._refused_schema: set[str] = set()  # the roles whose first native-schema request was refused

    def completion(self, model: str, messages: list, api_base: Any, custom_prompt_dict: Any,
                   model_response: ModelResponse, print_verbose: Any, encoding: Any,
                   api_key: Any, logging_obj: Any, optional_params: dict,
                   acompletion: Any = None, litellm_params: dict | None = None,
                   logger_fn: Any = None, headers: Any = None, timeout: Any = None,
                   client: Any = None) -> ModelResponse:
        role = model.rsplit("/", 1)[-1]
        self.calls.append({"role": role, "messages": copy.deepcopy(messages), "params": dict(optional_params)})
        if role not in self._refused_schema and _native_schema(optional_params.get("response_format")):
            self._refused_schema.add(role)
            raise litellm.BadRequestError("response_format json_schema is not supported by this model",
                                          model=model, llm_provider=PROVIDER)
        text = self._answer(role, messages)
        model_response.choices[0].message.content = text
        model_response.choices[0].finish_reason = "stop"
        model_response.model = f"{PROVIDER}/{model}"
        words = sum(len(str(m.get("content", "")).split()) for m in messages)
        model_response.usage = Usage(prompt_tokens=words, completion_tokens=len(text.split()),  # type: ignore[attr-defined]
                                     total_tokens=words + len(text.split()))
        return model_response

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self.completion(*args, **kwargs)

    def _answer(self, role: str, messages: list[dict[str, Any]]) -> str:
        script = self.scripts.setdefault(role, [])
        if len(messages) <= 2:  # a repair request (more messages) answers from the script, never decides
            found = _OPEN.search(str(messages[-1].get("content", "")))
            request = _REQUEST.search(found.group(1)) if found else None
            if request is not None:
                return _step("approve", "audit: approved", request.group(1))
        if script:
            return script.pop(0)
        return _AI_MORE if role == "ai" else _WAIT


def _native_schema(response_format: Any) -> bool:
    """Whether a request asks for a native JSON schema (a pydantic class or a json_schema dict)."""
    if isinstance(response_format, dict):
        return response_format.get("type") == "json_schema"
    return isinstance(response_format, type)
