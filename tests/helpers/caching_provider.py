"""An OpenAI-compatible chat server on 127.0.0.1 that reports prefix-cache hits like DeepSeek.

Standard library only. Every request's prompt is counted in words (a word is a token here);
the tokens it shares as a prefix with any earlier prompt are reported as cache hits, in
DeepSeek's own usage fields (`prompt_cache_hit_tokens`, `prompt_cache_miss_tokens`) or, with
`usage_format="openai"`, in OpenAI's (`prompt_tokens_details.cached_tokens`). JSON mode is
accepted, `json_schema` is refused as DeepSeek refuses it. `answer(body)` chooses the reply
text; the default is `default` (a dict is sent as JSON). Every request body is kept.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from helpers.loopback import LoopbackServer

KEY = "sk-test-caching"


class CachingProvider(LoopbackServer):
    def __init__(self, default: dict | str, *, usage_format: str = "deepseek",
                 answer: Callable[[dict], dict | str] | None = None) -> None:
        self.default = default
        self.usage_format = usage_format
        self.answer = answer
        self.requests: list[dict[str, Any]] = []
        self.usages: list[dict[str, Any]] = []
        self.prompts: list[list[str]] = []
        self.lock = threading.Lock()
        super().__init__()

    def handle(self, path: str, auth: str | None, body: dict) -> tuple[int, dict]:
        kind = (body.get("response_format") or {}).get("type", "text")
        if kind not in ("text", "json_object"):
            return 400, {"error": {"message": "This response_format type is unavailable now",
                                   "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}}
        words = " ".join(str(m.get("content", "")) for m in body["messages"]).split()
        answer = self.answer(body) if self.answer is not None else self.default
        text = answer if isinstance(answer, str) else json.dumps(answer)
        with self.lock:
            cached = max((_common(words, seen) for seen in self.prompts), default=0)
            self.prompts.append(words)
            self.requests.append(body)
            usage: dict[str, Any] = {"prompt_tokens": len(words), "completion_tokens": len(text.split()),
                                     "total_tokens": len(words) + len(text.split())}
            if self.usage_format == "deepseek":
                usage |= {"prompt_cache_hit_tokens": cached, "prompt_cache_miss_tokens": len(words) - cached}
            else:
                usage |= {"prompt_tokens_details": {"cached_tokens": cached}}
            self.usages.append(usage)
        return 200, {"id": f"chat-{len(self.requests)}", "object": "chat.completion", "created": 1,
                     "model": body.get("model", "deepseek-chat"),
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": text}}],
                     "usage": usage}


def _common(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
