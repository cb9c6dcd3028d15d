"""What a batch would do, before it does it: `colabkit batch CONFIG --dry-run`.

Counts the grid's sessions that are finished, finished in a retryable way, and still to
run, and estimates the model calls, tokens and cost of the rest. The estimate prefers what
this experiment's finished sessions actually used (calls and tokens per session); without
any, it takes an upper bound from the session settings (every action budget spent, plus
the memory build) at an assumed prompt size. It is a planning figure, not a promise.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from colabkit.runner.capacity import KernelCap
from colabkit.runner.experiment import Experiment
from colabkit.runner.recorder import RETRYABLE_ENDINGS, read_record
from colabkit.session import SessionSettings, SessionSpec
from colabkit.store import is_finished, session_dir
from colabkit.tasks import Task

ASSUMED_PROMPT_TOKENS = 3000
ASSUMED_COMPLETION_TOKENS = 300
STEP_OVERHEAD = 1.5  # waits and repair requests on top of the budgeted actions


class VariantPlan(BaseModel):
    variant: str
    sessions: int
    finished: int
    retryable: int


class Plan(BaseModel):
    experiment_id: str
    folder: Path
    variants: list[VariantPlan]
    calls_per_session: float
    tokens_per_call: float
    basis: str
    price_per_call: float | None
    """USD per call at the assumed sizes, None when the models' prices are unknown."""
    sessions_at_once: int
    kernel_cap: KernelCap

    @property
    def total(self) -> int:
        return sum(v.sessions for v in self.variants)

    @property
    def finished(self) -> int:
        return sum(v.finished for v in self.variants)

    @property
    def retryable(self) -> int:
        return sum(v.retryable for v in self.variants)

    def to_run(self, retry_errors: bool = False) -> int:
        return self.total - self.finished + (self.retryable if retry_errors else 0)

    def render(self, *, retry_errors: bool = False) -> str:
        todo = self.to_run(retry_errors)
        calls = todo * self.calls_per_session
        tokens = calls * self.tokens_per_call
        cost = "unknown (no litellm price for the model)" if self.price_per_call is None else \
            f"about ${calls * self.price_per_call:,.2f}"
        lines = [f"experiment {self.experiment_id}: {self.total} sessions in {self.folder}",
                 f"  already finished: {self.finished} ({self.retryable} ended in "
                 f"{'/'.join(sorted(RETRYABLE_ENDINGS))}; " +
                 ("retried now)" if retry_errors else "rerun them with --retry-errors)"),
                 f"  to run: {todo}"]
        for v in self.variants:
            left = v.sessions - v.finished + (v.retryable if retry_errors else 0)
            lines.append(f"    {v.variant:<15} {left:>5} to run of {v.sessions}")
        lines.append(f"  model calls: about {calls:,.0f}; tokens: about {tokens:,.0f}; cost: {cost}")
        lines.append(f"  estimate basis: {self.basis}")
        lines.append(f"  sessions at once: {min(self.sessions_at_once, self.kernel_cap.kernels)} "
                     f"(concurrency.sessions {self.sessions_at_once}; live kernels {self.kernel_cap.describe()})")
        return "\n".join(lines)


def make_plan(exp: Experiment, items: Sequence[tuple[SessionSpec, Task]] | None = None) -> Plan:
    """The plan of `exp` against what its results folder already holds."""
    items = items if items is not None else exp.sessions()
    folder = exp.folder()
    per_variant: dict[str, VariantPlan] = {}
    calls, tokens, seen = 0.0, 0.0, 0
    for spec, _ in items:
        plan = per_variant.setdefault(spec.variant.name, VariantPlan(variant=spec.variant.name, sessions=0,
                                                                   finished=0, retryable=0))
        plan.sessions += 1
        where = session_dir(spec, folder)
        if is_finished(where):
            record = read_record(where)
            plan.finished += 1
            plan.retryable += record.ended_by in RETRYABLE_ENDINGS
            calls += record.totals.llm_calls
            tokens += record.totals.tokens
            seen += 1
    if seen and calls:
        per_session, per_call = calls / seen, tokens / calls
        basis = f"mean of the {seen} finished session(s): {per_session:.1f} calls, {per_call:,.0f} tokens per call"
    else:
        per_session = _budgeted_calls(exp, [spec for spec, _ in items])
        per_call = ASSUMED_PROMPT_TOKENS + ASSUMED_COMPLETION_TOKENS
        basis = (f"upper bound from the settings: {per_session:.1f} calls per session, "
                 f"{ASSUMED_PROMPT_TOKENS} prompt + {ASSUMED_COMPLETION_TOKENS} completion tokens per call")
    return Plan(experiment_id=exp.experiment_id, folder=folder, variants=list(per_variant.values()),
                calls_per_session=per_session, tokens_per_call=per_call, basis=basis,
                price_per_call=_price_per_call(exp, per_call), sessions_at_once=exp.concurrency.sessions,
                kernel_cap=exp.kernel_cap())


def _budgeted_calls(exp: Experiment, specs: list[SessionSpec]) -> float:
    """Mean over the grid of: each side's action budget spent (plus waits and repairs),
    capped by the rounds, plus the memory build."""
    if not specs:
        return 0.0
    per = []
    for spec in specs:
        settings = spec.settings  # an arm's own (`Experiment.arms`)
        team = len(spec.participants)
        budget = _action_budget(settings, humans=team > 1)
        steps = min(budget * STEP_OVERHEAD, settings.max_rounds * team)
        build = 2 * team + 1 if spec.variant.memory else 0
        per.append(steps + build)
    return sum(per) / len(per)


def _action_budget(settings: SessionSettings, *, humans: bool) -> int:
    """Task-phase steps a session may take: per side when the settings have sides."""
    budget_for = getattr(settings, "budget_for", None)  # per-side budgets (AI, simulated humans)
    if budget_for is None:
        return settings.action_budget
    total = budget_for("ai") + (budget_for("human") if humans else 0)
    cap = getattr(settings, "team_action_budget", None)
    return min(total, cap) if cap else total


def _price_per_call(exp: Experiment, tokens_per_call: float) -> float | None:
    """USD per call for the most expensive configured session model, at the planned sizes."""
    share = ASSUMED_COMPLETION_TOKENS / (ASSUMED_PROMPT_TOKENS + ASSUMED_COMPLETION_TOKENS)
    completion = int(tokens_per_call * share)
    prices = []
    for config in exp.model_configs().values():
        if config.provider == "local":
            prices.append(0.0)
            continue
        try:
            from colabkit.llm.providers import litellm_module

            prompt_cost, completion_cost = litellm_module().cost_per_token(
                model=config.model, prompt_tokens=int(tokens_per_call) - completion, completion_tokens=completion)
        except Exception:
            return None
        prices.append(float(prompt_cost) + float(completion_cost))
    return max(prices) if prices else None
