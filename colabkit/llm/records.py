"""What every model call leaves behind, the errors a caller can get, and spending caps.

A batch of sessions must never crash on one failed call, so the gateway turns every failure
into one of three exceptions: `LLMCallError` (with `StructuredOutputError` as the subclass for
structured calls), which callers record as a failed step; `BudgetExceeded`, which tells them
to stop starting new work; and `ProviderError`, a refusal no retry can fix (bad key, unknown
model), which tells them to stop at once instead of spending a budget on failed steps, with
`ProviderUnavailable` as the subclass for a provider that stayed unreachable past the retry
bound (an outage, not a refusal). All
carry the `CallRecord`s of what was attempted, because token use and cost are study data
even when a step fails.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

# How a request asked for its output format (see `colabkit.llm.gateway`): the schema as the
# provider's `response_format`, JSON mode plus the schema in the prompt, the schema in the
# prompt alone, or free text (no schema at all).
OutputMode = Literal["json_schema", "json_object", "instructions", "text"]


class CallRecord(BaseModel):
    """One request to a model (with its transport retries), as accounted.

    Two caches are kept apart, by name. A **suite replay** (`suite_replay`) is an answer
    the suite's own response cache gave back (`colabkit.llm.cache`): nothing was sent and
    nothing paid this run, so `cost` is 0, `attempts` 0, and `replayed_cost` keeps what the
    answer cost when it was first paid. Its tokens are the stored answer's, and budgets are
    charged `cost + replayed_cost`, so a replay ends a session exactly where the original
    run ended it. A **provider cache hit** is the provider serving part of a sent prompt
    from its prefix cache: `provider_cached_tokens` of the `prompt_tokens` (OpenAI's
    `prompt_tokens_details.cached_tokens`, DeepSeek's `prompt_cache_hit_tokens`), which
    `cost` already prices at the provider's cache rate where litellm knows it.

    `cost` is what was paid for this request in this run (USD, litellm's price of the
    provider's usage; 0 for unpriced local models). `error` is set when the request failed
    or its answer did not validate. `prompt_hash` is the sha256 of the messages as sent
    (`colabkit.llm.prompts`); the gateway always sets it. `output_mode` says how the format
    was asked for (None only in records written before it existed). Records written before
    event schema version 3 said `cache_hit` and put a replay's original cost in `cost`;
    they are read into these fields.
    """

    caller: str
    model: str
    prompt_hash: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    provider_cached_tokens: int = 0
    cost: float = 0.0
    latency_s: float = 0.0
    suite_replay: bool = False
    replayed_cost: float = 0.0
    attempts: int = 0
    error: str | None = None
    output_mode: OutputMode | None = None

    @model_validator(mode="before")
    @classmethod
    def _read_older(cls, data: Any) -> Any:
        if isinstance(data, dict) and "cache_hit" in data:
            data = upgrade_call(data)
        return data

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def accounted_cost(self) -> float:
        """What this answer cost, paid now or when first paid (what budgets charge)."""
        return self.cost + self.replayed_cost


def upgrade_call(raw: dict[str, Any]) -> dict[str, Any]:
    """A stored call record in this version's fields (an older one said `cache_hit` and
    kept a replay's original cost in `cost`); a current one is returned unchanged."""
    if "cache_hit" not in raw:
        return raw
    data = dict(raw)
    replay = bool(data.pop("cache_hit"))
    data["suite_replay"] = replay
    if replay:
        data["replayed_cost"], data["cost"] = data.get("cost", 0.0), 0.0
    return data


class LLMCallError(Exception):
    """A model call that failed after its retries; `records` says what was tried."""

    def __init__(self, message: str, *, attempts: int, records: list[CallRecord]):
        super().__init__(message)
        self.attempts = attempts
        self.records = records


class StructuredOutputError(LLMCallError):
    """No schema-valid answer: invalid output after repair, or a per-prompt refusal (content
    policy, context window). Transport failures are `ProviderUnavailable`, never this.

    `raw` is the text of the last answer received (None when no answer came back at all),
    so a judge can store the garbage it was given instead of only a parse error.
    """

    def __init__(self, message: str, *, attempts: int, records: list[CallRecord],
                 raw: str | None = None):
        super().__init__(message, attempts=attempts, records=records)
        self.raw = raw


class ProviderError(Exception):
    """A provider refusal that no retry can fix: bad key, no permission, unknown model, a
    malformed request. The message is one line naming the model; `status` is the HTTP status
    (None when the provider gave none) and `records` what was attempted.
    """

    def __init__(self, message: str, *, model: str, status: int | None, records: list[CallRecord]):
        super().__init__(message)
        self.model = model
        self.status = status
        self.records = records


class ProviderUnavailable(ProviderError):
    """The provider could not be reached or could not answer within the retry bound
    (`retry.RetryPolicy`): connection refused or reset, DNS or TLS failure, read timeouts,
    408/409/429 or 5xx on every attempt. Infrastructure, like a refusal: the caller stops
    (a session ends `provider_unavailable`, rerun by the next batch), and nothing about the
    participant or the team is concluded from it. `status` is the last HTTP status, if any.
    """


class BudgetExceeded(Exception):
    """A spending cap was reached; no new call was made. `reason` names the cap."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Budget(BaseModel):
    """A cap on cost (USD) and tokens, with what has been spent against it.

    A budget may have a `parent`: charging a session's budget also charges the experiment's,
    and a call is refused when either is used up. So an experiment creates one Budget, and
    each session gateway gets `Budget(max_tokens=..., parent=experiment_budget)` (or the
    experiment's Budget itself). The cap is checked before each call and charged after it,
    so concurrent calls can overshoot by what is in flight.
    """

    max_cost: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    parent: Budget | None = None
    spent_cost: float = 0.0
    spent_tokens: int = 0

    def exceeded(self) -> str | None:
        """The reason this budget (or an ancestor) refuses new calls, or None."""
        if self.max_cost is not None and self.spent_cost >= self.max_cost:
            return f"cost budget reached: spent ${self.spent_cost:.6f} of ${self.max_cost:.6f}"
        if self.max_tokens is not None and self.spent_tokens >= self.max_tokens:
            return f"token budget reached: used {self.spent_tokens} of {self.max_tokens} tokens"
        return self.parent.exceeded() if self.parent is not None else None

    def check(self) -> None:
        reason = self.exceeded()
        if reason is not None:
            raise BudgetExceeded(reason)

    def charge(self, record: CallRecord) -> None:
        self.spent_cost += record.accounted_cost
        self.spent_tokens += record.total_tokens
        if self.parent is not None:
            self.parent.charge(record)
