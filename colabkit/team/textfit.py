"""Fitting text into a character budget without a blunt cut.

Observations for small models have hard budgets, and the team layer's texts (briefings, the
memory) are lists of pieces of unequal value. Water-filling trims the longest pieces first,
to one shared cap, so every piece keeps its opening instead of the last ones vanishing.
"""

from __future__ import annotations

MIN_PIECE = 8


def fair_cap(lengths: list[int], budget: int) -> int:
    """The largest per-item cap c with sum(min(len, c)) <= budget (water-filling)."""
    if sum(lengths) <= budget:
        return max(lengths, default=0)
    lo, hi = 0, max(lengths)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(min(n, mid) for n in lengths) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def fit_all(texts: list[str], budget: int) -> list[str]:
    """Every text trimmed to one shared cap so that together they fit `budget`."""
    cap = fair_cap([len(t) for t in texts], max(budget, 0))
    return [trim(t, cap) for t in texts]


def trim(text: str, limit: int) -> str:
    """`text` cut at a word boundary to at most `limit` chars with an ellipsis; "" if too short to mean anything."""
    if len(text) <= limit:
        return text
    if limit < MIN_PIECE:
        return ""
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.") + "…"
