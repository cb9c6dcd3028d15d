"""The one door to every model: cache, retries, accounting, budgets and validated output.

Participants and judges never call litellm themselves; they call `Gateway.structured` (a
validated pydantic instance) or `Gateway.complete` (text). The gateway guarantees what a
batch of sessions needs: a failed call never crashes anything (it ends as `LLMCallError` /
`StructuredOutputError`, `BudgetExceeded` when a cap is reached, `ProviderError` when the
provider refuses for good), every request leaves a `CallRecord`, and a rerun with the same
seeds replays from the response cache.

How a schema is asked for is the request's output mode (recorded in every `CallRecord`):
"json_schema" sends the schema as `response_format` (registered custom providers get the
bounded JSON schema, which the embedded model turns into a decoding grammar; others the
pydantic class), "json_object" sends JSON mode plus the schema as instructions in the
system message, "instructions" the instructions alone. The first mode comes from
`providers.starting_mode` (litellm's capability flags, corrected by a table of known
exceptions). Flags can still be wrong, so when a provider rejects a request for its
`response_format` the gateway falls back one mode and retries at once, and remembers the
working mode per model for the rest of its life. Every answer is validated with pydantic;
an invalid one gets one repair request that shows the model its reply and the error.

A refusal no retry can fix (bad key, unknown model, malformed request) raises
`ProviderError` at once: callers stop instead of spending a budget on failed steps. A
provider that cannot be reached or cannot answer now (connection refused or reset, DNS or
TLS failure, a read timeout, 408/409/429, 5xx) is retried with exponential backoff and
jitter (tenacity), bounded in attempts and in time (`RetryPolicy`); past the bound the call
raises `ProviderUnavailable`, never a failed step: only a malformed answer from a model that
did answer is the participant's. The policy and the job-wide `CircuitBreaker` live in
`colabkit.llm.retry`, the one-line errors in `colabkit.llm.faults`.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from colabkit.llm.cache import CachedAnswer, ResponseCache, cache_key
from colabkit.llm.config import ModelConfig
from colabkit.llm.faults import ERROR_CHARS, describe, fatal, unavailable
from colabkit.llm.prompts import prompt_hash
from colabkit.llm.providers import (
    FALLBACK,
    classify,
    is_custom,
    litellm_module,
    starting_mode,
)
from colabkit.llm.records import (
    Budget,
    CallRecord,
    LLMCallError,
    OutputMode,
    ProviderError,
    StructuredOutputError,
)
from colabkit.llm.retry import CircuitBreaker, RetryPolicy
from colabkit.llm.schema import (
    AnswerBounds,
    capped_schema,
    parse_as,
    schema_instructions,
    shared_bounded_schema,
    token_bound,
)

T = TypeVar("T", bound=BaseModel)
# Past the configured timeout litellm should have given up itself; this only catches a
# provider that hangs (a custom handler, a stalled socket).
_TIMEOUT_GRACE_S = 5.0


@dataclass(frozen=True)
class _Plan:
    """How one structured request is sent: what format parameter, what cache key part."""

    mode: OutputMode
    response_format: Any
    format_key: dict[str, Any]
    instructions: str | None
    max_tokens: int


@dataclass
class _Outcome:
    """One request's answer (None on failure), its record, and whether its format was refused."""

    answer: CachedAnswer | None
    record: CallRecord
    format_rejected: bool = False


class Gateway:
    """Sends requests through litellm; one per session or per experiment.

    `cache_dir` is where answers persist (an experiment's results folder); None keeps them
    in memory for this gateway's lifetime. `suite_replays` and `sent` count the requests
    answered from that cache and sent to a provider. `budget` may be shared between gateways (see
    `Budget`). `retry` controls backoff; tests use zero delays. `modes` is the output mode
    that works for each model string, learnt from rejections (see the module docstring); a
    batch may pass one dict to all its session gateways so a lesson is learnt once per run.
    `breaker`, when given, is opened by the first `ProviderUnavailable`; after that no request
    is sent (each raises `ProviderUnavailable` at once), cached answers still replay.
    """

    def __init__(self, *, cache_dir: Path | None = None, budget: Budget | None = None,
                 retry: RetryPolicy | None = None, modes: dict[str, OutputMode] | None = None,
                 breaker: CircuitBreaker | None = None):
        self.cache = ResponseCache(cache_dir)
        self.budget = budget
        self.retry = retry or RetryPolicy.from_env()
        self.records: list[CallRecord] = []
        self.modes: dict[str, OutputMode] = {} if modes is None else modes
        self.suite_replays = 0  # answered from the response cache: nothing sent
        self.sent = 0  # sent to the provider (a request, with its retries)
        self.kv_scope = next(_KV_SCOPES)
        self.breaker = breaker
        self._start_modes: dict[tuple[str, str], OutputMode] = {}

    async def complete(self, config: ModelConfig, messages: list[dict], *, caller: str,
                       sample: int = 0) -> tuple[str, CallRecord]:
        """Free text. Raises `LLMCallError`, `ProviderError` (`ProviderUnavailable`) or `BudgetExceeded`."""
        outcome = await self._request(config, messages, caller=caller, sample=sample, mode="text",
                                      response_format=None, format_key=None,
                                      max_tokens=config.max_tokens)
        answer, record = outcome.answer, outcome.record
        if answer is None:
            raise LLMCallError(f"{config.model} ({caller}): {record.error}",
                               attempts=record.attempts, records=[record])
        return answer.text, record

    async def structured(self, config: ModelConfig, messages: list[dict], schema: type[T], *,
                         caller: str, sample: int = 0) -> tuple[T, list[CallRecord]]:
        """A validated `schema` instance, after at most one repair request.

        Raises `StructuredOutputError` (invalid output after repair), `ProviderError` (a
        refusal no retry can fix), `ProviderUnavailable` (no answer within the retry bound)
        or `BudgetExceeded`;
        nothing else escapes. A rejected `response_format` is not a repair round: the same
        request is sent again at once in the next mode.
        """
        value, _, records = await self.structured_with_text(config, messages, schema,
                                                            caller=caller, sample=sample)
        return value, records

    async def structured_with_text(self, config: ModelConfig, messages: list[dict],
                                   schema: type[T], *, caller: str, sample: int = 0,
                                   bounds: AnswerBounds | None = None) -> tuple[T, str, list[CallRecord]]:
        """Like `structured`, plus the model's raw text of the answer that validated.

        Judges store what the model actually said next to what was parsed from it; on
        failure the raw text of the last answer is on the error (`StructuredOutputError.raw`).
        `bounds` caps every string and list of the schema asked for (`capped_schema`).
        """
        try:
            bounded = shared_bounded_schema(schema) if bounds is None else capped_schema(schema, bounds)
            mode = self.modes.get(config.model) or self._starting_mode(config)
        except Exception as exc:  # a broken litellm install or schema must not crash a batch
            raise StructuredOutputError(f"{config.model} ({caller}): cannot prepare request: "
                                        f"{describe(exc)}", attempts=0, records=[]) from exc
        records: list[CallRecord] = []
        repair: list[dict] = []
        raw: str | None = None
        round_number = 1
        while True:
            plan = _plan(config, schema, bounded, mode)
            conversation = list(messages)
            if plan.instructions:
                conversation = _with_system_text(conversation, plan.instructions)
            try:
                outcome = await self._request(
                    config, [*conversation, *repair], caller=caller, sample=sample, mode=mode,
                    response_format=plan.response_format, format_key=plan.format_key,
                    max_tokens=plan.max_tokens)
            except ProviderError as exc:
                exc.records = [*records, *exc.records]
                raise
            records.append(outcome.record)
            if outcome.format_rejected:
                mode = self.modes[config.model] = FALLBACK[mode]
                continue
            answer = outcome.answer
            if answer is None:
                break
            raw = answer.text
            try:
                return parse_as(schema, answer.text), answer.text, records
            except ValueError as exc:
                problem = str(exc)
                if answer.finish_reason == "length":
                    problem = f"the reply was cut off at {plan.max_tokens} tokens; {problem}"
                outcome.record.error = f"invalid {schema.__name__}: {problem}"[:ERROR_CHARS]
            if round_number == 2:
                break
            round_number += 1
            repair = [{"role": "assistant", "content": answer.text},
                      {"role": "user", "content": _repair_prompt(schema, problem)}]
        attempts = sum(r.attempts for r in records)
        raise StructuredOutputError(
            f"{config.model} ({caller}): no valid {schema.__name__} after {len(records)} "
            f"request(s), {attempts} attempt(s): {records[-1].error}",
            attempts=attempts, records=records, raw=raw)

    def _starting_mode(self, config: ModelConfig) -> OutputMode:
        """`providers.starting_mode`, asked once per model and gateway (it asks litellm's tables)."""
        key = (config.model, config.provider)
        if key not in self._start_modes:
            self._start_modes[key] = starting_mode(config)
        return self._start_modes[key]

    def close(self) -> None:
        """Release the persistent cache (the gateway is not usable afterwards)."""
        self.cache.close()

    async def _request(self, config: ModelConfig, messages: list[dict], *, caller: str,
                       sample: int, mode: OutputMode, response_format: Any,
                       format_key: dict | None, max_tokens: int | None) -> _Outcome:
        """One request with retries; a failure is an `_Outcome` without answer.

        Raises `ProviderError` (after accounting the attempt) when no retry can succeed, and
        `ProviderUnavailable` when transient failures outlast the retry policy.
        """
        if self.budget is not None:
            self.budget.check()
        started = time.perf_counter()
        digest = prompt_hash(messages)
        key = cache_key(config, messages, format_key, sample)
        cached = await self.cache.aget(key)
        if cached is not None:  # a suite replay: nothing sent, nothing paid now
            self.suite_replays += 1
            return _Outcome(cached, self._account(CallRecord(
                caller=caller, model=config.model, prompt_hash=digest, prompt_tokens=cached.prompt_tokens,
                completion_tokens=cached.completion_tokens, cost=0.0, replayed_cost=cached.cost,
                latency_s=time.perf_counter() - started, suite_replay=True, attempts=0,
                output_mode=mode)))
        if self.breaker is not None and self.breaker.open:
            raise self.breaker.refusal(config.model, self._account(CallRecord(
                caller=caller, model=config.model, prompt_hash=digest, attempts=0,
                error="not sent: the provider was unavailable earlier in this job", output_mode=mode)))
        self.sent += 1
        kwargs = _litellm_kwargs(config, messages, caller=caller, sample=sample,
                                 response_format=response_format, max_tokens=max_tokens, kv_scope=self.kv_scope)
        try:
            litellm = litellm_module()  # the one-off import is not the model's latency
        except Exception as exc:
            return _Outcome(None, self._account(CallRecord(
                caller=caller, model=config.model, prompt_hash=digest, error=describe(exc), output_mode=mode)))
        started = time.perf_counter()
        attempt = 0
        sent_format = response_format is not None
        try:
            async for trying in self.retry.retrying(lambda exc: classify(exc, sent_format=sent_format) == "retry"):
                with trying:
                    attempt = trying.retry_state.attempt_number
                    grace = min(_TIMEOUT_GRACE_S, config.timeout)
                    response = await asyncio.wait_for(litellm.acompletion(**kwargs),
                                                      timeout=config.timeout + grace)
                    answer = _answer_of(litellm, response)
        except Exception as exc:  # every failure becomes a record, never a crash
            kind = classify(exc, sent_format=sent_format)
            elapsed = time.perf_counter() - started
            record = self._account(CallRecord(
                caller=caller, model=config.model, prompt_hash=digest, latency_s=elapsed,
                attempts=attempt, error=describe(exc), output_mode=mode))
            if kind == "retry":
                down = unavailable(config.model, exc, record, elapsed)
                if self.breaker is not None:
                    self.breaker.trip(down)
                raise down from exc
            if kind == "fatal":
                raise fatal(config.model, exc, record) from exc
            return _Outcome(None, record, format_rejected=kind == "format")
        await self.cache.aput(key, answer)
        return _Outcome(answer, self._account(CallRecord(
            caller=caller, model=config.model, prompt_hash=digest, prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens, provider_cached_tokens=answer.provider_cached_tokens,
            cost=answer.cost, latency_s=time.perf_counter() - started, attempts=attempt, output_mode=mode)))

    def _account(self, record: CallRecord) -> CallRecord:
        self.records.append(record)
        if self.budget is not None:
            self.budget.charge(record)
        return record


_KV_SCOPES = itertools.count(1)  # one per gateway in this process: each session's contexts are its own


def _litellm_kwargs(config: ModelConfig, messages: list[dict], *, caller: str, sample: int,
                    response_format: Any, max_tokens: int | None, kv_scope: int) -> dict[str, Any]:
    """Arguments for `litellm.acompletion`.

    The seed is `config.seed + sample`, so sample k of the same prompt is a different but
    reproducible draw. Retries are ours alone (`num_retries=0`, `max_retries=0` for the
    OpenAI SDK), so every attempt is counted. `drop_params` drops what a provider does not
    support (e.g. `seed`) instead of failing. `metadata.kv_slot` (the gateway's scope and the
    caller's role, the caller up to a ':') picks the embedded model's KV context, so
    concurrent sessions of one process never share one, and a judge's questions
    (`judge:<prompt id>`) share one: they are asked prompt by prompt, so consecutive ones
    share their prefix there, where a context per prompt id (11) would be evicted and
    reopened at every switch (`local.MAX_CONTEXTS` is 8); litellm does not forward metadata
    to remote providers.
    """
    kwargs: dict[str, Any] = {
        "model": config.model, "messages": messages, "temperature": config.temperature,
        "timeout": config.timeout, "num_retries": 0,
        "metadata": {"caller": caller, "kv_slot": f"{kv_scope}/{caller.partition(':')[0]}"},
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
    """The answer with its usage and price: litellm prices the provider's usage, cached
    prompt tokens at the provider's cache rate where its price table has one."""
    choice = response.choices[0]
    usage = getattr(response, "usage", None)
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")  # litellm priced it already
    try:
        if not isinstance(cost, (int, float)):
            cost = float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # unmapped model (local files, custom providers): nothing to pay
        cost = 0.0
    return CachedAnswer(text=choice.message.content or "",
                        prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                        completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                        provider_cached_tokens=provider_cached_tokens(usage),
                        cost=cost, finish_reason=choice.finish_reason)


def provider_cached_tokens(usage: Any) -> int:
    """Prompt tokens the provider served from its prefix cache, as it reports them.

    OpenAI's format (which litellm maps other providers' fields into) is
    `prompt_tokens_details.cached_tokens`; DeepSeek's own field `prompt_cache_hit_tokens`
    is read when the mapped one is absent. 0 when the provider says nothing.
    """
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    if not isinstance(cached, int) or cached <= 0:
        cached = getattr(usage, "prompt_cache_hit_tokens", None)
    return cached if isinstance(cached, int) and cached > 0 else 0


def _plan(config: ModelConfig, schema: type[BaseModel], bounded: dict[str, Any],
          mode: OutputMode) -> _Plan:
    """The request parameters of `mode`; the mode is part of the cache key."""
    key = {"schema": bounded, "mode": mode}
    max_tokens = config.max_tokens or token_bound(bounded)
    if mode == "json_schema":
        native: Any = schema
        if is_custom(config.provider):  # a copy: the schema is shared and providers may edit theirs
            native = {"type": "json_schema", "json_schema": {
                "name": schema.__name__, "schema": copy.deepcopy(bounded), "strict": True}}
        return _Plan(mode, native, key, None, max_tokens)
    json_mode = {"type": "json_object"} if mode == "json_object" else None
    return _Plan(mode, json_mode, key, schema_instructions(bounded), max_tokens)


def _with_system_text(messages: list[dict], text: str) -> list[dict]:
    first = messages[0] if messages else None
    if first and first.get("role") == "system" and isinstance(first.get("content"), str):
        return [{**first, "content": f"{first['content']}\n\n{text}"}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def _repair_prompt(schema: type[BaseModel], problem: str) -> str:
    return (f"Your reply was not a valid {schema.__name__} JSON object: {problem}. "
            "Reply again with only the corrected JSON object.")
