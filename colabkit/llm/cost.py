"""What a set of model calls paid, with the suite's replays and the provider's cache apart.

A batch reports spend per session, per scoring job and in total, and the three figures must
add up and must not mix two different caches. `Spend` is that sum: `paid_cost` and the
token counts cover requests actually sent this run; `provider_cached_tokens` is the part
of those prompt tokens the provider served from its prefix cache (already priced at its
cache rate in `paid_cost`); `suite_replays` are answers the suite's own response cache gave
back (nothing sent, nothing paid), with `replayed_tokens` and `replayed_cost` saying what
they were and what they cost when first paid. Spends add with `+`.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from colabkit.llm.records import CallRecord


class Spend(BaseModel):
    """Paid calls, tokens and cost of this run, and the suite's replays beside them."""

    requests: int = 0
    """Requests sent to a provider (failed ones included: an attempt may be billed)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    provider_cached_tokens: int = 0
    paid_cost: float = 0.0
    suite_replays: int = 0
    replayed_tokens: int = 0
    replayed_cost: float = 0.0

    @classmethod
    def of(cls, records: Iterable[CallRecord]) -> Spend:
        spend = cls()
        for r in records:
            if r.suite_replay:
                spend.suite_replays += 1
                spend.replayed_tokens += r.total_tokens
                spend.replayed_cost += r.replayed_cost
            else:
                spend.requests += 1
                spend.prompt_tokens += r.prompt_tokens
                spend.completion_tokens += r.completion_tokens
                spend.provider_cached_tokens += r.provider_cached_tokens
                spend.paid_cost += r.cost
        return spend

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Spend) -> Spend:
        return Spend(**{name: getattr(self, name) + getattr(other, name) for name in Spend.model_fields})

    def short(self) -> str:
        """A few words for a progress bar: '$0.0123 paid, 45,600 tok (61% provider-cached), 3 replayed'."""
        cached = f" ({self.provider_cached_tokens / self.prompt_tokens:.0%} provider-cached)" \
            if self.provider_cached_tokens and self.prompt_tokens else ""
        replays = f", {self.suite_replays} replayed" if self.suite_replays else ""
        return f"${self.paid_cost:.4f} paid, {self.tokens:,} tok{cached}{replays}"

    def line(self) -> str:
        """One line for a final report."""
        text = (f"${self.paid_cost:.4f} paid for {self.requests:,} requests, {self.prompt_tokens:,} prompt "
                f"({self.provider_cached_tokens:,} provider-cached) + {self.completion_tokens:,} completion tokens")
        if self.suite_replays:
            text += (f"; {self.suite_replays:,} answers replayed from the suite's cache "
                     f"(not paid now; ${self.replayed_cost:.4f} when first paid)")
        return text
