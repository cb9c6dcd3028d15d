"""The one door to every model: cache, retries, accounting, budgets and validated output.

Participants and judges never call litellm themselves; they call `Gateway.structured` (a
validated pydantic instance) or `Gateway.complete` (text). The gateway guarantees what a
batch of sessions needs: a failed call never crashes anything (it ends as `LLMCallError` /
`StructuredOutputError`, or `BudgetExceeded` when a cap is reached), every request leaves
a `CallRecord`, and a rerun with the same seeds replays from the response cache.

How a schema is enforced depends on the provider. Registered custom providers (the
embedded llama.cpp model, test doubles) get the bounded JSON schema, which the embedded
model turns into a decoding grammar. Providers litellm knows to support JSON schemas get
the pydantic class natively. Others get JSON mode if they have it, and the schema as
instructions in the system message. Every answer is validated with pydantic; an invalid
one gets one repair request that shows the model its reply and the validation error.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from colabkit.llm.cache import CachedAnswer, ResponseCache, cache_key
from colabkit.llm.config import ModelConfig
from colabkit.llm.prompts import prompt_hash
from colabkit.llm.providers import is_custom, litellm_module
from colabkit.llm.records import Budget, CallRecord, LLMCallError, StructuredOutputError
from colabkit.llm.schema import bounded_schema, parse_as, schema_instructions, token_bound

T = TypeVar("T", bound=BaseModel)
# Past the configured timeout litellm should have given up itself; this only catches a
# provider that hangs (a custom handler, a stalled socket).
_TIMEOUT_GRACE_S = 5.0
_RETRY_STATUS = {408, 409, 429}
_ERROR_CHARS = 400


class RetryPolicy(BaseModel, frozen=True):
    """Bounded exponential backoff for transient failures (timeouts, 429, 5xx, connection)."""

    max_attempts: int = Field(default=4, ge=1)
    base_delay_s: float = Field(default=1.0, ge=0)
    max_delay_s: float = Field(default=30.0, ge=0)

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        return min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))


@dataclass(frozen=True)
class _Plan:
    """How one structured request is sent: what format parameter, what cache key part."""

    response_format: Any
    format_key: dict[str, Any]
    instructions: str | None
    max_tokens: int


class Gateway:
    """Sends requests through litellm; one per session or per experiment.

    `cache_dir` is where answers persist (an experiment's results folder); None keeps them
    in memory for this gateway's lifetime. `budget` may be shared between gateways (see
    `Budget`). `retry` controls backoff; tests use zero delays.
    """

    def __init__(self, *, cache_dir: Path | None = None, budget: Budget | None = None,
                 retry: RetryPolicy | None = None):
        self.cache = ResponseCache(cache_dir)
        self.budget = budget
        self.retry = retry or RetryPolicy()
        self.records: list[CallRecord] = []
        self.cache_hits = 0
        self.cache_misses = 0

    async def complete(self, config: ModelConfig, messages: list[dict], *, caller: str,
                       sample: int = 0) -> tuple[str, CallRecord]:
        """Free text. Raises `LLMCallError` after retries, or `BudgetExceeded`."""
        answer, record = await self._request(config, messages, caller=caller, sample=sample,
                                             response_format=None, format_key=None,
                                             max_tokens=config.max_tokens)
        if answer is None:
            raise LLMCallError(f"{config.model} ({caller}): {record.error}",
                               attempts=record.attempts, records=[record])
        return answer.text, record

    async def structured(self, config: ModelConfig, messages: list[dict], schema: type[T], *,
                         caller: str, sample: int = 0) -> tuple[T, list[CallRecord]]:
        """A validated `schema` instance, after at most one repair request.

        Raises `StructuredOutputError` (transport failure after retries, or invalid output
        after repair) or `BudgetExceeded`; nothing else escapes.
        """
        value, _, records = await self.structured_with_text(config, messages, schema,
                                                            caller=caller, sample=sample)
        return value, records

    async def structured_with_text(self, config: ModelConfig, messages: list[dict],
                                   schema: type[T], *, caller: str,
                                   sample: int = 0) -> tuple[T, str, list[CallRecord]]:
        """Like `structured`, plus the model's raw text of the answer that validated.

        Judges store what the model actually said next to what was parsed from it; on
        failure the raw text of the last answer is on the error (`StructuredOutputError.raw`).
        """
        try:
            plan = self._plan(config, schema)
        except Exception as exc:  # a broken litellm install or schema must not crash a batch
            raise StructuredOutputError(f"{config.model} ({caller}): cannot prepare request: "
                                        f"{_describe(exc)}", attempts=0, records=[]) from exc
        conversation = list(messages)
        if plan.instructions:
            conversation = _with_system_text(conversation, plan.instructions)
        records: list[CallRecord] = []
        raw: str | None = None
        for round_number in (1, 2):
            answer, record = await self._request(
                config, conversation, caller=caller, sample=sample,
                response_format=plan.response_format, format_key=plan.format_key,
                max_tokens=plan.max_tokens)
            records.append(record)
            if answer is None:
                break
            raw = answer.text
            try:
                return parse_as(schema, answer.text), answer.text, records
            except ValueError as exc:
                problem = str(exc)
                if answer.finish_reason == "length":
                    problem = f"the reply was cut off at {plan.max_tokens} tokens; {problem}"
                record.error = f"invalid {schema.__name__}: {problem}"[:_ERROR_CHARS]
            if round_number == 1:
                conversation = [*conversation, {"role": "assistant", "content": answer.text},
                                {"role": "user", "content": _repair_prompt(schema, problem)}]
        attempts = sum(r.attempts for r in records)
        raise StructuredOutputError(
            f"{config.model} ({caller}): no valid {schema.__name__} after {len(records)} "
            f"request(s), {attempts} attempt(s): {records[-1].error}",
            attempts=attempts, records=records, raw=raw)

    def close(self) -> None:
        """Release the persistent cache (the gateway is not usable afterwards)."""
        self.cache.close()

    def _plan(self, config: ModelConfig, schema: type[BaseModel]) -> _Plan:
        litellm = litellm_module()
        bounded = bounded_schema(schema)
        key = {"schema": bounded}
        max_tokens = config.max_tokens or token_bound(bounded)
        if is_custom(config.provider):
            return _Plan(response_format={"type": "json_schema", "json_schema": {
                "name": schema.__name__, "schema": bounded, "strict": True}},
                format_key=key, instructions=None, max_tokens=max_tokens)
        if _safe(litellm.supports_response_schema, model=config.model):
            return _Plan(response_format=schema, format_key=key, instructions=None,
                         max_tokens=max_tokens)
        supported = _safe(litellm.get_supported_openai_params, model=config.model) or []
        json_mode = {"type": "json_object"} if "response_format" in supported else None
        return _Plan(response_format=json_mode, format_key=key,
                     instructions=schema_instructions(bounded), max_tokens=max_tokens)

    async def _request(self, config: ModelConfig, messages: list[dict], *, caller: str,
                       sample: int, response_format: Any, format_key: dict | None,
                       max_tokens: int | None) -> tuple[CachedAnswer | None, CallRecord]:
        """One request with retries. Returns (None, record with error) on failure."""
        if self.budget is not None:
            self.budget.check()
        started = time.perf_counter()
        digest = prompt_hash(messages)
        key = cache_key(config, messages, format_key, sample)
        cached = self.cache.get(key)
        if cached is not None:
            self.cache_hits += 1
            return cached, self._account(CallRecord(
                caller=caller, model=config.model, prompt_hash=digest, prompt_tokens=cached.prompt_tokens,
                completion_tokens=cached.completion_tokens, cost=cached.cost,
                latency_s=time.perf_counter() - started, cache_hit=True, attempts=0))
        self.cache_misses += 1
        kwargs = _litellm_kwargs(config, messages, caller=caller, sample=sample,
                                 response_format=response_format, max_tokens=max_tokens)
        try:
            litellm = litellm_module()  # the one-off import is not the model's latency
        except Exception as exc:
            return None, self._account(CallRecord(caller=caller, model=config.model, prompt_hash=digest,
                                                  error=_describe(exc)))
        started = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            try:
                grace = min(_TIMEOUT_GRACE_S, config.timeout)
                response = await asyncio.wait_for(litellm.acompletion(**kwargs),
                                                  timeout=config.timeout + grace)
                answer = _answer_of(litellm, response)
                break
            except Exception as exc:  # every failure becomes a record, never a crash
                if _retryable(exc) and attempt < self.retry.max_attempts:
                    await asyncio.sleep(self.retry.delay(attempt))
                    continue
                return None, self._account(CallRecord(
                    caller=caller, model=config.model, prompt_hash=digest, latency_s=time.perf_counter() - started,
                    attempts=attempt, error=_describe(exc)))
        self.cache.put(key, answer)
        return answer, self._account(CallRecord(
            caller=caller, model=config.model, prompt_hash=digest, prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens, cost=answer.cost,
            latency_s=time.perf_counter() - started, attempts=attempt))

    def _account(self, record: CallRecord) -> CallRecord:
        self.records.append(record)
        if self.budget is not None:
            self.budget.charge(record)
        return record


def _litellm_kwargs(config: ModelConfig, messages: list[dict], *, caller: str, sample: int,
                    response_format: Any, max_tokens: int | None) -> dict[str, Any]:
    """Arguments for `litellm.acompletion`.

    The seed is `config.seed + sample`, so sample k of the same prompt is a different but
    reproducible draw. Retries are ours alone (`num_retries=0`, `max_retries=0` for the
    OpenAI SDK), so every attempt is counted. `drop_params` drops what a provider does not
    support (e.g. `seed`) instead of failing. `metadata.caller` picks the embedded model's
    per-caller KV context; litellm does not forward metadata to providers.
    """
    kwargs: dict[str, Any] = {
        "model": config.model, "messages": messages, "temperature": config.temperature,
        "timeout": config.timeout, "metadata": {"caller": caller}, "num_retries": 0,
        "max_retries": 0, "drop_params": True, **config.extra}
    if config.seed is not None:
        kwargs["seed"] = config.seed + sample
    if max_tokens is not None:
        kwargs["max_tokens"] = max_tokens
    if config.api_base is not None:
        kwargs["api_base"] = config.api_base
    if response_format is not None:
        kwargs["response_format"] = response_format
    return kwargs


def _answer_of(litellm: Any, response: Any) -> CachedAnswer:
    choice = response.choices[0]
    usage = getattr(response, "usage", None)
    try:
        cost = float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # unmapped model (local files, custom providers): nothing to pay
        cost = 0.0
    return CachedAnswer(text=choice.message.content or "",
                        prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                        completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                        cost=cost, finish_reason=choice.finish_reason)


def _retryable(exc: BaseException) -> bool:
    """Transient failures worth another attempt: timeouts, rate limits, 5xx, connection."""
    litellm = sys.modules.get("litellm")
    transient = (TimeoutError, asyncio.TimeoutError)
    if litellm is not None:
        transient += (litellm.Timeout, litellm.APIConnectionError)
    if isinstance(exc, transient):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status in _RETRY_STATUS or status >= 500)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) and not text:
        text = "no answer within the timeout"
    return f"{type(exc).__name__}: {text}"[:_ERROR_CHARS]


def _safe(function: Any, **kwargs: Any) -> Any:
    """litellm capability look-ups raise for models they do not know; treat that as 'no'."""
    try:
        return function(**kwargs)
    except Exception:
        return None


def _with_system_text(messages: list[dict], text: str) -> list[dict]:
    first = messages[0] if messages else None
    if first and first.get("role") == "system" and isinstance(first.get("content"), str):
        return [{**first, "content": f"{first['content']}\n\n{text}"}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def _repair_prompt(schema: type[BaseModel], problem: str) -> str:
    return (f"Your reply was not a valid {schema.__name__} JSON object: {problem}. "
            "Reply again with only the corrected JSON object.")
