"""Who pays for a model call: the task's cap, the machinery's account or the build's budget.

The task's cap is the session's spending cap (`Gateway.budget`, set by the runner): what the
task's own turns spend, the same in a variant and its Default twin. Machinery (`Event.kind`:
a decision on a request, every step of the closing pass) is charged to an account of its own,
and a structure's build phase to its declared budget (`SessionSettings.build_budget`), so no
structure ever takes from the task's cap (issue 42: with a binding cap the AI got 30 turns in
default-r and 27 in memory-r). Both share only the task cap's parent (an experiment's cap),
which every real spend still reaches. What each spent is read back from the events
(`Totals.machinery_*`, `Totals.build_*`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from colabkit.llm import Budget, CallRecord, Gateway
from colabkit.session.settings import BuildBudget


class Spend:
    """The accounts one session's calls are charged to (see the module docstring)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.machinery: Budget | None = None  # opened at the first machinery charge under a task cap

    @contextmanager
    def turn(self, *, machinery: bool) -> Iterator[None]:
        """Around one step's calls: the task's cap binds before a member's own step (not before
        machinery, a decision step or the closing pass's, which is charged apart and so never
        meets the cap at another turn than a Default twin does), and nothing is charged until
        `charge` is told whose the calls were."""
        task, self.gateway.budget = self.gateway.budget, None
        try:
            if task is not None and not machinery:
                task.check()
            yield
        finally:
            self.gateway.budget = task

    def charge(self, calls: Sequence[CallRecord], *, machinery: bool) -> None:
        """Charge a turn's calls to the task's cap, or (`machinery`) to the machinery's account."""
        account = self.gateway.budget
        if account is None:
            return
        if machinery:
            account = self.machinery = self.machinery or Budget(parent=account.parent)
        for call in calls:
            account.charge(call)

    @contextmanager
    def build(self, declared: BuildBudget | None) -> Iterator[None]:
        """Around the build phase: its calls charged to its declared budget, never to the task's cap."""
        task = self.gateway.budget
        parent = task.parent if task is not None else None
        if declared is not None:
            self.gateway.budget = Budget(max_tokens=declared.max_tokens, max_cost=declared.max_cost, parent=parent)
        elif task is not None:
            self.gateway.budget = Budget(parent=parent)
        try:
            yield
        finally:
            self.gateway.budget = task
