"""What every audit check returns: one broken invariant (`invariants`, `conduct`, `trace`, `probe`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """One broken invariant: which, the variants (one, or the pair compared) and what was seen."""

    invariant: str
    variants: tuple[str, ...]
    detail: str

    def render(self) -> str:
        return f"VIOLATION {self.invariant} [{' vs '.join(self.variants)}]: {self.detail}"
