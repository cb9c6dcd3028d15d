"""How long a provider that cannot answer now is tried, and when a job stops trying it.

`RetryPolicy` bounds the retries of one request (exponential backoff with jitter, bounded in
attempts and in time); past the bound the request raises `ProviderUnavailable`.
`CircuitBreaker` is shared by the requests of one job (a scoring job's judge): once one
request outlasted its bound, the provider is taken to be out for the rest of the job, so the
other requests fail at once instead of each riding out the whole bound again. Answers the
response cache holds still replay (they need no provider).
"""

from __future__ import annotations

import os
from typing import Any

import tenacity
from pydantic import BaseModel, Field

from colabkit.errors import ColabkitError, one_line
from colabkit.llm.records import CallRecord, ProviderUnavailable

RETRY_ENV = "COLABKIT_PROVIDER_RETRY"
"""Environment variable that sets the default `RetryPolicy`, e.g. `max_elapsed_s=60,max_attempts=6`:
papermill kernels and Dask workers inherit it, so one setting reaches every session of a batch."""


class RetryPolicy(BaseModel, frozen=True, extra="forbid"):
    """Exponential backoff with jitter for transient failures, bounded in attempts and in time.

    A call is retried while it fails transiently, until `max_attempts` attempts were made or
    the next attempt would start more than `max_elapsed_s` after the first (so a provider
    outage shorter than that is ridden out; a longer one ends the call `ProviderUnavailable`).
    Each wait is `base_delay_s * 2**(n-1)` plus up to `jitter_s` at random, at most
    `max_delay_s`. The read timeout of one attempt is the model's (`ModelConfig.timeout`).
    """

    max_attempts: int = Field(default=12, ge=1)
    base_delay_s: float = Field(default=1.0, ge=0)
    max_delay_s: float = Field(default=30.0, ge=0)
    max_elapsed_s: float = Field(default=300.0, ge=0)
    jitter_s: float = Field(default=1.0, ge=0)

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based), before jitter."""
        return min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))

    def retrying(self, transient: Any) -> tenacity.AsyncRetrying:
        """A tenacity loop that retries exceptions `transient(exc)` accepts, within the bounds."""
        wait = tenacity.wait_exponential(multiplier=self.base_delay_s, max=self.max_delay_s) + \
            tenacity.wait_random(0, self.jitter_s)
        return tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception(transient), reraise=True, wait=wait,
            stop=tenacity.stop_after_attempt(self.max_attempts) | tenacity.stop_before_delay(self.max_elapsed_s))

    @classmethod
    def from_env(cls) -> RetryPolicy:
        """The policy `COLABKIT_PROVIDER_RETRY` sets (`name=value,...` of the fields), else the default."""
        text = os.environ.get(RETRY_ENV, "").strip()
        if not text:
            return cls()
        try:
            fields = dict(part.split("=", 1) for part in text.split(",") if part.strip())
            return cls.model_validate({k.strip(): v.strip() for k, v in fields.items()})
        except ValueError as exc:
            raise ColabkitError(f"{RETRY_ENV}={text!r}: {one_line(exc)}") from None


class CircuitBreaker:
    """Opened by the first `ProviderUnavailable` of a job; while open, requests are not sent.

    One breaker is shared by every request of one job (a `Gateway` holds it): without it each
    remaining request of a job whose provider is down would wait out the whole retry bound
    (minutes each by default). `reason` is the one line of the request that opened it.
    """

    def __init__(self) -> None:
        self.reason: str | None = None

    @property
    def open(self) -> bool:
        return self.reason is not None

    def trip(self, exc: ProviderUnavailable) -> None:
        """Open the breaker (the first failure's line is kept)."""
        if self.reason is None:
            self.reason = one_line(exc, 300)

    def refusal(self, model: str, record: CallRecord) -> ProviderUnavailable:
        """What a request not sent because the breaker is open raises: one line, the first failure's."""
        return ProviderUnavailable(f"{model}: not sent, the provider was unavailable earlier in this job "
                                   f"({self.reason})", model=model, status=None, records=[record])
