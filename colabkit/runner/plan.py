"""What a batch would do, before it does it: `colabkit batch CONFIG --dry-run`.

Counts the grid's sessions that are finished, finished in a retryable way (a crash:
`--retry-errors`), ended by the provider (rerun by every batch), and still to run, and
estimates the model calls, tokens and cost of the rest: the sessions' and the judge's, each
with an upper bound beside the typical figure. Per session the figures come from, in order:
what a batch measured for the same variant and settings (`estimate.read_measured`), this
experiment's finished sessions of those settings, else the per-role step model
(`estimate.session_model`; its assumptions are printed one per line). The upper bound spends
every budget: the AI's, each human's cap, `STEP_OVERHEAD` for waits and repairs, and the
memory build. Prices are litellm's, the provider's cache rate on the cached share of the
prompt where its table has one; the bound prices every token at the full rate. The wall
clock comes from the calls' measured latencies, the sessions at once and this machine's
cores (`runner.wallclock`), with a warning when the config asks for more at once than the
machine holds. After a batch `compare` sets the estimate beside what was spent, per stage.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from colabkit.evaluation import scorers_for
from colabkit.evaluation.spendlog import JUDGE_JOURNAL
from colabkit.llm import ModelConfig, Spend
from colabkit.runner.estimate import (
    CACHED_SHARE,
    JUDGE_COMPLETION_TOKENS,
    JUDGE_PROMPT_TOKENS,
    Measured,
    assumptions,
    judge_key,
    judge_questions,
    read_measured,
    record_measured,
    session_model,
    settings_key,
)
from colabkit.runner.executors.capacity import KernelCap
from colabkit.runner.experiment import Experiment
from colabkit.runner.progress import journal_spend, read_journal
from colabkit.runner.recorder import NO_RESULT_ENDINGS, RETRYABLE_ENDINGS, read_record
from colabkit.runner.wallclock import WallClock, logged_latency, wall_clock
from colabkit.session import SessionSettings, SessionSpec
from colabkit.store import is_finished, session_dir
from colabkit.tasks import Task

STEP_OVERHEAD = 1.5  # waits and repair requests on top of the budgeted actions (the upper bound)


class VariantPlan(BaseModel):
    variant: str
    sessions: int
    finished: int
    """Finished with a result (a provider's end is none: those rerun)."""
    retryable: int
    """Of the finished, those that crashed (`error`): rerun with --retry-errors."""
    provider_ended: int = 0
    """Ended without a result (a provider's refusal or outage, a kernel that would not start):
    rerun by every batch (`recorder.NO_RESULT_ENDINGS`)."""


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

    def totals(self, sessions: int) -> dict[str, float | None]:
        """Calls, tokens and cost (None: unpriced) this estimate expects of `sessions` sessions."""
        calls = sessions * self.calls_per_session
        cost = None if self.price_per_call is None else calls * self.price_per_call
        return {"calls": calls, "tokens": calls * (self.prompt_tokens + self.completion_tokens), "cost": cost}

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
    assumptions: list[str] = []
    """The step model's assumptions, when some session's figures come from it."""
    wall: WallClock | None = None
    """How long the sessions to run take (`runner.wallclock`), and whether the machine holds them."""

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

    @property
    def provider_ended(self) -> int:
        return sum(v.provider_ended for v in self.variants)

    def render(self, *, retry_errors: bool = False) -> str:
        todo = self.to_run(retry_errors)
        lines = [f"experiment {self.experiment_id}: {self.total} sessions in {self.folder}",
                 f"  already finished: {self.finished} ({self.retryable} ended in error; " +
                 ("retried now)" if retry_errors else "rerun them with --retry-errors)"),
                 f"  ended without a result (provider refused or unreachable, no kernel): {self.provider_ended}, "
                 "rerun now",
                 f"  to run: {todo}"]
        for v in self.variants:
            left = v.sessions - v.finished + (v.retryable if retry_errors else 0)
            lines.append(f"    {v.variant:<15} {left:>5} to run of {v.sessions}")
        lines.append(self.sessions.render("sessions", todo))
        lines.append(self.judge.render("judge   ", todo))
        lines.append(self._total(todo))
        if self.assumptions:
            lines.append("  assumptions of the step model (where nothing was measured):")
            lines += [f"    - {line}" for line in self.assumptions]
        cap = min(self.sessions_at_once, self.kernel_cap.kernels)
        where = ("on this machine, across every process of the batch" if self.executor == "local"
                 else "per Dask worker (each worker also runs at most its threads)")
        lines.append(f"  sessions at once: {cap} (concurrency.sessions {self.sessions_at_once}; live kernels "
                     f"{self.kernel_cap.describe()}), {where}")
        if self.wall is not None and self.executor == "local":
            lines += self.wall.render(todo)
        return "\n".join(lines)

    def _total(self, todo: int) -> str:
        parts = (self.sessions, self.judge)
        if any(p.price_per_call is None or p.bound_price_per_call is None for p in parts):
            return "  cost in all: unknown (no litellm price for a model)"
        typical = sum(todo * p.calls_per_session * (p.price_per_call or 0.0) for p in parts)
        bound = sum(todo * p.bound_per_session * (p.bound_price_per_call or 0.0) for p in parts)
        return f"  cost in all: about ${typical:,.2f} (upper bound ${bound:,.2f})"


def make_plan(exp: Experiment, items: Sequence[tuple[SessionSpec, Task]] | None = None) -> Plan:
    """The plan of `exp` against what its results folder (and its results root's measured
    figures) already hold."""
    items = items if items is not None else exp.sessions()
    folder = exp.folder()
    per_variant: dict[str, VariantPlan] = {}
    done: dict[str, list] = defaultdict(list)  # settings key -> totals of finished sessions
    todo: list[SessionSpec] = []
    for spec, _ in items:
        plan = per_variant.setdefault(spec.variant.name, VariantPlan(variant=spec.variant.name, sessions=0,
                                                                   finished=0, retryable=0))
        plan.sessions += 1
        where = session_dir(spec, folder)
        record = read_record(where) if is_finished(where) else None
        if record is None or record.ended_by in NO_RESULT_ENDINGS:
            plan.provider_ended += record is not None
            todo.append(spec)
            continue
        plan.finished += 1
        plan.retryable += record.ended_by in RETRYABLE_ENDINGS
        if record.ended_by not in RETRYABLE_ENDINGS:
            done[settings_key(spec)].append(record.totals)
    measured = read_measured(exp.results)
    chosen = todo or [spec for spec, _ in items]
    sessions, modelled = _session_estimate(exp, chosen, measured, done)
    judge = _judge_estimate(exp, chosen, measured, folder, sum(len(t) for t in done.values()), sessions)
    seconds = [m.seconds_per_call for spec in chosen if (m := measured.get(settings_key(spec))) and m.seconds_per_call]
    wall = wall_clock(folder, chosen, calls_per_session=sessions.calls_per_session,
                      sessions_at_once=exp.concurrency.sessions, kernel_cap=exp.kernel_cap(),
                      measured_seconds=sum(seconds) / len(seconds) if seconds else None)
    return Plan(experiment_id=exp.experiment_id, folder=folder, variants=list(per_variant.values()),
                sessions=sessions, judge=judge, sessions_at_once=exp.concurrency.sessions,
                kernel_cap=exp.kernel_cap(), executor=exp.executor.kind,
                assumptions=assumptions() if modelled else [], wall=wall)


def _session_estimate(exp: Experiment, specs: list[SessionSpec], measured: dict[str, Measured],
                      done: dict[str, list]) -> tuple[CallEstimate, int]:
    """Per-session means over `specs` from the best source each has; (estimate, how many modelled)."""
    calls = prompt = completion = cached = 0.0
    sources = {"measured": 0, "finished": 0, "modelled": 0}
    for spec in specs:
        key = settings_key(spec)
        if key in measured:
            m = measured[key]
            c, p, o, share = m.calls, m.prompt_tokens, m.completion_tokens, m.cached_share
            sources["measured"] += 1
        elif done.get(key):
            totals = done[key]
            n_calls = sum(t.llm_calls for t in totals)
            c = n_calls / len(totals)
            p = sum(t.prompt_tokens for t in totals) / max(n_calls, 1)
            o = sum(t.completion_tokens for t in totals) / max(n_calls, 1)
            sent = sum(t.prompt_tokens for t in totals if t.suite_replays == 0)
            share = sum(t.provider_cached_tokens for t in totals) / sent if sent else CACHED_SHARE
            sources["finished"] += 1
        else:
            model = session_model(spec)
            c, p, o, share = model.calls, model.prompt_tokens, model.completion_tokens, CACHED_SHARE
            sources["modelled"] += 1
        calls += c
        prompt += c * p
        completion += c * o
        cached += c * p * share
    n = max(len(specs), 1)
    bound = _budgeted_calls(exp, specs)
    per_call_prompt = prompt / calls if calls else 0.0
    share = cached / prompt if prompt else CACHED_SHARE
    basis = (f"{sources['measured']} session(s) from figures measured for the same settings, "
             f"{sources['finished']} from this experiment's finished sessions, {sources['modelled']} from the "
             f"step model: {calls / n:.1f} calls of {per_call_prompt:,.0f} + {completion / max(calls, 1):,.0f} "
             f"tokens per session, {share:.0%} provider-cached; upper bound {bound:.1f} calls (every budget spent)")
    estimate = _estimate(exp.all_model_configs(), calls / n, max(bound, calls / n), per_call_prompt,
                         completion / max(calls, 1), share, basis)
    return estimate, sources["modelled"]


def _judge_estimate(exp: Experiment, specs: list[SessionSpec], measured: dict[str, Measured], folder: Path,
                    finished: int, sessions: CallEstimate) -> CallEstimate:
    """Judge requests per session: measured for these metrics and repeats, else this experiment's
    scoring journal per finished session, else the per-metric question counts."""
    metrics = [s.name for s in scorers_for(list(exp.metrics)) if s.uses_judge]
    judge = exp.judge_config()
    keys = [judge_key(judge.model, metrics, exp.judge_repeats, spec.variant.name) for spec in specs]
    scale = sessions.bound_per_session / max(sessions.calls_per_session, 1e-9)  # judged items grow with calls
    if specs and all(k in measured for k in keys):
        per = [measured[k] for k in keys]
        calls = sum(m.calls for m in per) / len(per)
        prompt = sum(m.prompt_tokens for m in per) / len(per)
        completion = sum(m.completion_tokens for m in per) / len(per)
        return _estimate([judge], calls, calls * max(scale, 1.0), prompt, completion, 0.0,
                         f"measured for this judge, metrics and repeats: {calls:.1f} requests per session")
    journal = journal_spend(read_journal(folder, JUDGE_JOURNAL)) if finished else Spend()
    n = journal.requests + journal.suite_replays
    if n:
        per_prompt = journal.prompt_tokens / journal.requests if journal.requests else JUDGE_PROMPT_TOKENS
        per_completion = journal.completion_tokens / journal.requests if journal.requests else JUDGE_COMPLETION_TOKENS
        return _estimate([judge], n / finished, n / finished * max(scale, 1.0), per_prompt, per_completion, 0.0,
                         f"this experiment's scoring jobs: {n / finished:.1f} judge requests per finished session "
                         f"of {per_prompt:,.0f} + {per_completion:,.0f} tokens")
    calls = sum(judge_questions(spec, metrics, exp.judge_repeats) for spec in specs) / max(len(specs), 1)
    return _estimate([judge], calls, calls * max(scale, 1.0), JUDGE_PROMPT_TOKENS, JUDGE_COMPLETION_TOKENS, 0.0,
                     f"{calls:.1f} judge requests per session ({', '.join(metrics) or 'no judged metric'}, "
                     f"{exp.judge_repeats} repeat(s)) of {JUDGE_PROMPT_TOKENS} + {JUDGE_COMPLETION_TOKENS} tokens")


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
    """Mean over `specs` of: each side's action budget spent (plus waits and repairs),
    capped by the rounds, plus the memory build."""
    if not specs:
        return 0.0
    per = []
    for spec in specs:
        settings = spec.settings  # an arm's own (`Experiment.arms`)
        team = len(spec.participants)
        budget = _action_budget(settings, humans=team - 1)
        steps = min(budget, settings.max_rounds * team) * STEP_OVERHEAD
        build = 2 * team + 1 if spec.variant.memory else 0
        per.append(steps + build)
    return sum(per) / len(per)


def _action_budget(settings: SessionSettings, *, humans: int) -> int:
    """Task-phase steps a session may take: the AI's budget and each human's own cap (or the
    humans' pooled budget under the Co-Gym rules), at most the team-wide cap."""
    human = settings.budget_for("human") * (humans if settings.per_member else min(humans, 1))
    total = settings.budget_for("ai") + human
    cap = settings.team_action_budget
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


def compare(exp: Experiment, items: Sequence[tuple[SessionSpec, Task]], before: Plan, started: float, *,
            retry_errors: bool) -> list[str]:
    """The estimate `before` made of this batch against what it spent, per stage (calls, tokens,
    cost), as lines for the report; both are stored (`estimate.record_measured`) with the
    per-session figures of the sessions that ran, so the next estimate of these settings uses them.

    A call is a request or a suite replay (what the session asked for); tokens include the
    replayed ones; cost is what was paid now.
    """
    from colabkit.runner.pipeline import run_spend

    folder, todo = exp.folder(), before.to_run(retry_errors)
    ids = {spec.session_id for spec, _ in items}
    spent = dict(zip(("sessions", "judge"), run_spend(folder, started, ids), strict=True))
    estimated = {"sessions": before.sessions.totals(todo), "judge": before.judge.totals(todo)}
    actual = {stage: {"calls": float(s.requests + s.suite_replays), "tokens": float(s.tokens + s.replayed_tokens),
                      "cost": s.paid_cost} for stage, s in spent.items()}
    ran = _ran_since(items, folder, started)
    record_measured(exp.results, _measured(exp, ran, spent["judge"]),
                    {"experiment": exp.experiment_id, "sessions_run": len(ran), "estimated": estimated,
                     "actual": actual})
    lines = [f"estimate vs actual ({todo} session(s) planned, {len(ran)} ran; stored in "
             f"{exp.results / 'calibration.jsonl'}):"]
    for stage in ("sessions", "judge"):
        e, a = estimated[stage], actual[stage]
        cost = "unpriced" if e["cost"] is None else f"${e['cost']:.4f} / ${a['cost']:.4f}"
        lines.append(f"  {stage:<8} calls {e['calls']:,.0f} / {a['calls']:,.0f} ({_ratio(e['calls'], a['calls'])}), "
                     f"tokens {e['tokens']:,.0f} / {a['tokens']:,.0f} ({_ratio(e['tokens'], a['tokens'])}), "
                     f"cost {cost}")
    return lines


def _ratio(estimated: float | None, actual: float) -> str:
    if estimated is None or not actual:
        return "no actual" if not actual else "n/a"
    return f"x{estimated / actual:.2f} of actual"


def _ran_since(items: Sequence[tuple[SessionSpec, Task]], folder: Path, started: float) -> list:
    """(spec, record) of the sessions that finished with a result since `started`."""
    ran = []
    for spec, _ in items:
        where = session_dir(spec, folder)
        if is_finished(where):
            record = read_record(where)
            if record.finished.timestamp() >= started and record.ended_by not in RETRYABLE_ENDINGS:
                ran.append((spec, record))
    return ran


def _measured(exp: Experiment, ran: list, judge: Spend) -> list[Measured]:
    """Per settings key, the mean figures of the sessions that ran; the judge's per session."""
    groups: dict[str, list] = defaultdict(list)
    specs: dict[str, list[SessionSpec]] = defaultdict(list)
    for spec, record in ran:
        groups[settings_key(spec)].append(record.totals)
        specs[settings_key(spec)].append(spec)
    entries = []
    for key, totals in groups.items():
        latency = logged_latency(exp.folder(), specs[key])
        calls = sum(t.llm_calls for t in totals)
        sent = sum(t.prompt_tokens for t in totals if t.suite_replays == 0)
        entries.append(Measured(
            key=key, sessions=len(totals), calls=calls / len(totals),
            prompt_tokens=sum(t.prompt_tokens for t in totals) / max(calls, 1),
            completion_tokens=sum(t.completion_tokens for t in totals) / max(calls, 1),
            cached_share=sum(t.provider_cached_tokens for t in totals) / sent if sent else CACHED_SHARE,
            cost=sum(t.paid_cost or 0.0 for t in totals) / len(totals),
            seconds_per_call=latency[0] if latency else None))
    judged = judge.requests + judge.suite_replays
    if ran and judged:
        metrics = [s.name for s in scorers_for(list(exp.metrics)) if s.uses_judge]
        model = exp.judge_config().model
        for variant in {spec.variant.name for spec, _ in ran}:  # the run's mean, for each variant it scored
            entries.append(Measured(
                key=judge_key(model, metrics, exp.judge_repeats, variant), sessions=len(ran),
                calls=judged / len(ran), prompt_tokens=judge.prompt_tokens / max(judge.requests, 1) or
                JUDGE_PROMPT_TOKENS, completion_tokens=judge.completion_tokens / max(judge.requests, 1) or
                JUDGE_COMPLETION_TOKENS, cached_share=0.0, cost=judge.paid_cost / len(ran)))
    return entries
