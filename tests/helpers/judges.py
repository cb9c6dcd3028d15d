"""Judge doubles for tests: scripted answers per judge question, behind the real gateway.

A judge's questions are told apart by the gateway's `caller` ("judge:<prompt id>"), so a
test scripts each kind of question separately: `JudgeDouble({"hms_relation": ["...", ...]})`
pops the next output for that prompt; an output may be a dict (sent as JSON), a string
(sent as is: garbage tests), an exception (raised: transport failures) or a callable taking
the request's JSON payload and returning one of those. Unscripted prompts fall back to
`fallback` (by default the perfect judge). It is a real litellm `CustomLLM` registered as the
`judgedouble` provider, so caching, repair requests and accounting run as with a model.

`perfect_answer` is a judge that is right by construction on the sanity check's cases: a
hypothesis is one sub-hypothesis whose context, variable and relation are its own text, so
gold matches itself exactly and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from litellm import CustomLLM
from litellm.types.utils import ModelResponse, Usage

from colabkit.llm import register_provider

PROVIDER = "judgedouble"
Output = str | dict | BaseException | Callable[[dict[str, Any]], Any]


def payload_of(messages: list[dict]) -> dict[str, Any]:
    """The JSON fields of a judge request (its first user message): the whole message, or
    with a prompt's `context_fields` its CONTEXT and INPUT parts together."""
    content = [m for m in messages if m["role"] == "user"][0]["content"]
    if content.startswith("CONTEXT:\n"):
        context, rest = content.removeprefix("CONTEXT:\n").split("\n\nQUESTION:\n", 1)
        return {**json.loads(context), **json.loads(rest.split("\n\nINPUT:\n", 1)[1])}
    return json.loads(content)


def perfect_answer(prompt_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    if prompt_id == "hms_decompose":
        text = payload["hypothesis"].strip()
        if not text:
            return {"sub_hypotheses": []}
        return {"sub_hypotheses": [{"text": text, "context": text, "variables": [text], "relation": text}]}
    if prompt_id == "hms_context_match":
        same = payload["gold_context"] == payload["predicted_context"]
        return {"reason": "compared", "match": same}
    gold, pred = payload["gold_sub_hypothesis"], payload["predicted_sub_hypothesis"]
    same = gold["text"] == pred["text"]
    if prompt_id == "hms_variables":
        return {"explanation": "counted", "size_gold": 1, "size_pred": 1, "intersection": int(same)}
    if prompt_id == "hms_relation":
        return {"explanation": "compared", "option": "A" if same else "C"}
    raise AssertionError(f"the perfect judge has no answer for {prompt_id}")


# One well-formed answer to each judge question the perfect judge has no answer for: what the
# judge double in another process (helpers.scripted_plugin) gives, as scripts cannot reach it.
CANNED_ANSWERS: dict[str, dict[str, Any]] = {
    "initiative": {"reason": "it moves the task", "initiative": "task"},
    "reply": {"reason": "it answers the question", "confirms": True, "halts": False},
    "gate": {"reason": "the signatory checked the counts", "expertise_fit": True, "grounded": True,
             "correct_in_hindsight": True, "changed_course": False},
    "profile": {"reason": "general analysis", "expertise": "generic"},
    "workflow_node": {"reason": "no cell does it", "implemented": False, "cell": None},
    "hypothesis_claims": {"claims": ["Axes are most frequent in the 12th century BCE."]},
    "claim_support": {"reason": "no cell shows it", "supported": False, "cell": None},
}


class JudgeDouble(CustomLLM):
    """Scripted outputs per judge prompt id; remembers every request in `calls`."""

    def __init__(self, scripts: dict[str, list[Output]] | None = None,
                 fallback: Callable[[str, dict[str, Any]], Any] | None = perfect_answer):
        super().__init__()
        self.scripts = {k: list(v) for k, v in (scripts or {}).items()}
        self.fallback = fallback
        self.calls: list[dict[str, Any]] = []

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        model_response: ModelResponse = kwargs.get("model_response") or args[2]
        litellm_params = kwargs.get("litellm_params") or {}
        caller = (litellm_params.get("metadata") or {}).get("caller") or ""
        prompt_id = caller.removeprefix("judge:")
        payload = payload_of(messages)
        self.calls.append({"model": model, "prompt_id": prompt_id, "payload": payload,
                           "repair": messages[-1]["role"] == "user" and len(messages) > 2,
                           "seed": (kwargs.get("optional_params") or {}).get("seed"),
                           "response_format": (kwargs.get("optional_params") or {}).get("response_format"),
                           "max_tokens": (kwargs.get("optional_params") or {}).get("max_tokens")})
        queue = self.scripts.get(prompt_id)
        if queue:
            output = queue.pop(0)
        elif self.fallback is not None:
            output = self.fallback(prompt_id, payload)
        else:
            output = "no answer scripted"
        if callable(output) and not isinstance(output, BaseException):
            output = output(payload)
        if isinstance(output, BaseException):
            raise output
        text = output if isinstance(output, str) else json.dumps(output)
        model_response.choices[0].message.content = text
        model_response.choices[0].finish_reason = "stop"
        model_response.model = f"{PROVIDER}/{model}"
        model_response.usage = Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
        return model_response

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self.completion(*args, **kwargs)

    def asked(self, prompt_id: str) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["prompt_id"] == prompt_id]


def use_judge_double(scripts: dict[str, list[Output]] | None = None, **kwargs: Any) -> JudgeDouble:
    """Install a fresh JudgeDouble as the `judgedouble` provider and return it."""
    double = JudgeDouble(scripts, **kwargs)
    register_provider(PROVIDER, double)
    return double
