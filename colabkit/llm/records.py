"""What every model call leaves behind, the errors a caller can get, and spending caps.

A batch of sessions must never crash on one failed call, so the gateway turns every failure
into one of three exceptions: `LLMCallError` (with `StructuredOutputError` as the subclass for
structured calls), which callers record as a failed step; `BudgetExceeded`, which tells them
to stop starting new work; and `ProviderError`, a refusal no retry can fix (bad key, unknown
model), which tells them to stop at once instead of spending a budget on failed steps. All
carry the `CallRecord`s of what was attempted, because token use and cost are study data
even when a step fails.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

# How a request asked for its output format (see `colabkit.llm.gateway`): the schema as the
# provider's `response_format`, JSON mode plus the schema in the prompt, the schema in the
# prompt alone, or free text (no schema at all).
OutputMode = Literal["json_schema", "json_object", "instructions", "text"]


class CallRecord(BaseModel):
    """One request to a model (with its transport retries), as accounted.

    `attempts` counts transport attempts (0 for a cache hit: nothing was sent). A cache hit
    carries the tokens and cost of the stored answer, so a replay accounts and hits budgets
    exactly like the original run; `cache_hit` tells that nothing was paid this time.
    `error` is set when the request failed or its answer did not validate. `prompt_hash` is
    the sha256 of the messages as sent (`colabkit.llm.prompts`); the gateway always sets it.
    `output_mode` says how the format was asked for (None only in records written before it
    existed).
    """

    caller: str
    model: str
    prompt_hash: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    latency_s: float = 0.0
    cache_hit: bool = False
    attempts: int = 0
    error: str | None = None
    output_mode: OutputMode | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class LLMCallError(Exception):
    """A model call that failed after its retries; `records` says what was tried."""

    def __init__(self, message: str, *, attempts: int, records: list[CallRecord]):
        super().__init__(message)
        self.attempts = attempts
        self.records = records


class StructuredOutputError(LLMCallError):
    """No schema-valid answer: transport failures after retries, or invalid output after repair."""


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
        self.spent_cost += record.cost
        self.spent_tokens += record.total_tokens
        if self.parent is not None:
            self.parent.charge(record)
