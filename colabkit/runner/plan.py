"""What a batch would do, before it does it: `colabkit batch CONFIG --dry-run`.

Counts the grid's sessions that are finished, finished in a retryable way, and still to
run, and estimates the model calls, tokens and cost of the rest: the sessions' and the
judge's, each with an upper bound beside the typical figure. It is a planning figure, not a
promise.

- **Sessions.** Calls and tokens per session are the mean of this experiment's finished
  sessions when there are some; otherwise a typical share of the settings' upper bound
  (every action budget spent, plus waits, repairs and the memory build):
  `TYPICAL_SHARE_OF_BOUND`, from the provider rehearsal of issue 21 (DeepSeek, 13 variants
  x 2 archaeology tasks: 13 calls per session where the settings allowed 89), at
  `ASSUMED_PROMPT_TOKENS` + `ASSUMED_COMPLETION_TOKENS` per call.
- **Judge.** Judge requests and tokens per session are what this experiment's scoring jobs
  recorded (`judge-runs.jsonl`) per finished session when there are some; otherwise
  `JUDGE_CALLS_PER_SESSION_CALL` judge requests per session request (the rehearsal: the
  judge made 55% of all requests) of `JUDGE_PROMPT_TOKENS` (the embedded judge's mean
  prompt in `make demo`) + `JUDGE_COMPLETION_TOKENS`.
- **Price.** litellm's price table, with the provider's prefix-cache rate for the cached
  share of the prompt tokens where the table has one (`cache_read_input_token_cost`): the
  share finished sessions recorded, else `ASSUMED_CACHED_SHARE` for session calls (the
  prompts benchmark measured 91-93% token-weighted prefix reuse under the full profile) and
  none for the judge (its prompts share less). The upper bound prices every token at the
  full rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from colabkit.evaluation.spendlog import JUDGE_JOURNAL
from colabkit.llm import ModelConfig
from colabkit.runner.executors.capacity import KernelCap
from colabkit.runner.experiment import Experiment
from colabkit.runner.progress import journal_spend, read_journal
from colabkit.runner.recorder import RETRYABLE_ENDINGS, read_record
from colabkit.session import SessionSettings, SessionSpec
from colabkit.store import is_finished, session_dir
from colabkit.tasks import Task

ASSUMED_PROMPT_TOKENS = 3000
ASSUMED_COMPLETION_TOKENS = 300
STEP_OVERHEAD = 1.5  # waits and repair requests on top of the budgeted actions
TYPICAL_SHARE_OF_BOUND = 13 / 89
JUDGE_CALLS_PER_SESSION_CALL = 0.55 / 0.45
JUDGE_PROMPT_TOKENS = 711
JUDGE_COMPLETION_TOKENS = 80
ASSUMED_CACHED_SHARE = 0.85


class VariantPlan(BaseModel):
    variant: str
    sessions: int
    finished: int
    retryable: int


class CallEstimate(BaseModel):
    """Calls per session, their sizes and price, for the sessions' or the judge's calls."""

    calls_per_session: float
    bound_per_session: float
    prompt_tokens: float
    completion_tokens: float
    cached_share: float
    basis: str
    price_per_call: float | None
    """USD per call at these sizes with the cache rate on the cached share; None: unpriced."""
    bound_price_per_call: float | None
    """USD per call at the full rate (no cache discount)."""

    def render(self, name: str, sessions: int) -> str:
        calls, bound = sessions * self.calls_per_session, sessions * self.bound_per_session
        tokens = calls * (self.prompt_tokens + self.completion_tokens)
        if self.price_per_call is None or self.bound_price_per_call is None:
            cost = "cost unknown (no litellm price for the model)"
        else:
            cost = (f"about ${calls * self.price_per_call:,.2f} (upper bound "
                    f"${bound * self.bound_price_per_call:,.2f})")
        return (f"  {name}: about {calls:,.0f} model calls (upper bound {bound:,.0f}), {tokens:,.0f} tokens; {cost}\n"
                f"    basis: {self.basis}")


class Plan(BaseModel):
    experiment_id: str
    folder: Path
    variants: list[VariantPlan]
    sessions: CallEstimate
    judge: CallEstimate
    sessions_at_once: int
    kernel_cap: KernelCap
    executor: str = "local"

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
        lines = [f"experiment {self.experiment_id}: {self.total} sessions in {self.folder}",
                 f"  already finished: {self.finished} ({self.retryable} ended in "
                 f"{'/'.join(sorted(RETRYABLE_ENDINGS))}; " +
                 ("retried now)" if retry_errors else "rerun them with --retry-errors)"),
                 f"  to run: {todo}"]
        for v in self.variants:
            left = v.sessions - v.finished + (v.retryable if retry_errors else 0)
            lines.append(f"    {v.variant:<15} {left:>5} to run of {v.sessions}")
        lines.append(self.sessions.render("sessions", todo))
        lines.append(self.judge.render("judge   ", todo))
        lines.append(self._total(todo))
        cap = min(self.sessions_at_once, self.kernel_cap.kernels)
        where = ("on this machine, across every process of the batch" if self.executor == "local"
                 else "per Dask worker (each worker also runs at most its threads)")
        lines.append(f"  sessions at once: {cap} (concurrency.sessions {self.sessions_at_once}; live kernels "
                     f"{self.kernel_cap.describe()}), {where}")
        return "\n".join(lines)

    def _total(self, todo: int) -> str:
        parts = (self.sessions, self.judge)
        if any(p.price_per_call is None or p.bound_price_per_call is None for p in parts):
            return "  cost in all: unknown (no litellm price for a model)"
        typical = sum(todo * p.calls_per_session * (p.price_per_call or 0.0) for p in parts)
        bound = sum(todo * p.bound_per_session * (p.bound_price_per_call or 0.0) for p in parts)
        return f"  cost in all: about ${typical:,.2f} (upper bound ${bound:,.2f})"


def make_plan(exp: Experiment, items: Sequence[tuple[SessionSpec, Task]] | None = None) -> Plan:
    """The plan of `exp` against what its results folder already holds."""
    items = items if items is not None else exp.sessions()
    folder = exp.folder()
    per_variant: dict[str, VariantPlan] = {}
    calls = prompt = completion = cached = sent_prompt = 0.0
    seen = 0
    for spec, _ in items:
        plan = per_variant.setdefault(spec.variant.name, VariantPlan(variant=spec.variant.name, sessions=0,
                                                                   finished=0, retryable=0))
        plan.sessions += 1
        where = session_dir(spec, folder)
        if is_finished(where):
            record = read_record(where)
            totals = record.totals
            plan.finished += 1
            plan.retryable += record.ended_by in RETRYABLE_ENDINGS
            calls += totals.llm_calls
            prompt += totals.prompt_tokens
            completion += totals.completion_tokens
            cached += totals.provider_cached_tokens
            sent_prompt += totals.prompt_tokens if totals.suite_replays == 0 else 0
            seen += 1
    bound = _budgeted_calls(exp, [spec for spec, _ in items])
    models = exp.all_model_configs()
    if seen and calls:
        share = cached / sent_prompt if sent_prompt else ASSUMED_CACHED_SHARE
        sessions = _estimate(models, calls / seen, max(bound, calls / seen), prompt / calls, completion / calls, share,
                             f"mean of the {seen} finished session(s): {calls / seen:.1f} calls of "
                             f"{prompt / calls:,.0f} + {completion / calls:,.0f} tokens, {share:.0%} provider-cached; "
                             f"upper bound {bound:.1f} calls per session from the settings")
    else:
        typical = bound * TYPICAL_SHARE_OF_BOUND
        sessions = _estimate(models, typical, bound, ASSUMED_PROMPT_TOKENS, ASSUMED_COMPLETION_TOKENS,
                             ASSUMED_CACHED_SHARE,
                             f"typical {typical:.1f} calls per session ({TYPICAL_SHARE_OF_BOUND:.0%} of the settings' "
                             f"upper bound {bound:.1f}: the provider rehearsal's share), {ASSUMED_PROMPT_TOKENS} + "
                             f"{ASSUMED_COMPLETION_TOKENS} tokens per call, {ASSUMED_CACHED_SHARE:.0%} provider-cached "
                             "where the provider has a cache price")
    judged = journal_spend(read_journal(folder, JUDGE_JOURNAL)) if seen else None
    if judged is not None and judged.requests + judged.suite_replays:
        n = judged.requests + judged.suite_replays
        share = judged.provider_cached_tokens / judged.prompt_tokens if judged.prompt_tokens else 0.0
        per_prompt = (judged.prompt_tokens / judged.requests) if judged.requests else JUDGE_PROMPT_TOKENS
        per_completion = (judged.completion_tokens / judged.requests) if judged.requests else JUDGE_COMPLETION_TOKENS
        scale = sessions.bound_per_session / max(sessions.calls_per_session, 1e-9)  # judged items grow with calls
        judge = _estimate([exp.judge_config()], n / seen, n / seen * max(scale, 1.0), per_prompt, per_completion, share,
                          f"this experiment's scoring jobs: {n / seen:.1f} judge requests per finished session "
                          f"of {per_prompt:,.0f} + {per_completion:,.0f} tokens")
    else:
        ratio = JUDGE_CALLS_PER_SESSION_CALL
        judge = _estimate([exp.judge_config()], sessions.calls_per_session * ratio, sessions.bound_per_session * ratio,
                          JUDGE_PROMPT_TOKENS, JUDGE_COMPLETION_TOKENS, 0.0,
                          f"{ratio:.2f} judge requests per session request (the rehearsal's share) of "
                          f"{JUDGE_PROMPT_TOKENS} + {JUDGE_COMPLETION_TOKENS} tokens")
    return Plan(experiment_id=exp.experiment_id, folder=folder, variants=list(per_variant.values()),
                sessions=sessions, judge=judge, sessions_at_once=exp.concurrency.sessions,
                kernel_cap=exp.kernel_cap(), executor=exp.executor.kind)


def _estimate(models: list[ModelConfig], per_session: float, bound: float, prompt: float, completion: float,
              cached_share: float, basis: str) -> CallEstimate:
    """A `CallEstimate` priced at the most expensive of `models`."""
    typical = [call_price(m, prompt, completion, cached_share) for m in models]
    full = [call_price(m, prompt, completion, 0.0) for m in models]
    return CallEstimate(calls_per_session=per_session, bound_per_session=bound, prompt_tokens=prompt,
                        completion_tokens=completion, cached_share=cached_share, basis=basis,
                        price_per_call=None if not typical or None in typical else max(p or 0.0 for p in typical),
                        bound_price_per_call=None if not full or None in full else max(p or 0.0 for p in full))


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


def call_price(config: ModelConfig, prompt: float, completion: float, cached_share: float) -> float | None:
    """USD for one call of `prompt` + `completion` tokens, `cached_share` of the prompt at the
    provider's cache-read rate where litellm's price table has one; None when unpriced."""
    if config.provider == "local":
        return 0.0
    try:
        from colabkit.llm.providers import litellm_module

        info = litellm_module().get_model_info(config.model)
    except Exception:
        return None
    full_in = info.get("input_cost_per_token")
    out = info.get("output_cost_per_token")
    if full_in is None or out is None:
        return None
    cache_in = info.get("cache_read_input_token_cost")
    share = cached_share if cache_in is not None else 0.0
    return (prompt * (1 - share) * full_in + prompt * share * (cache_in or 0.0) + completion * out)
