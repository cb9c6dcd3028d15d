"""Counterfactual contributions of stored team sessions: plan the replays, cost them, run them.

For each stored team session the plan names one replay per member (`remove_member`: each
human seat; `structure_off`: the variant's structures, when it has any) from one fork point
N (default: the first task-phase step, so the whole task is replayed without the member;
the memory build, which is not a fork point, is replayed from the cache), under the given
seeds, and the controls (`none`) from the same N and seeds, which every member's replay of
that session shares (`colabkit.runner.fork`: a continuation's folder is its identity, so a
control asked for twice runs once). The analysis is `colabkit.analysis.contributions`.

**The cost, before it runs** (`estimate`): a continuation replays its prefix from the
parent's cache (free) and asks its models anew from N on. Its calls are read from the
parent's own log: every model call the parent made from N on, priced per call at the
parent's model for that caller (`plan.call_price`, litellm's price table, the provider's cache
rate on `cached_share` of the prompt where it has one). A removal drops the removed member's
calls after N (its figure is the parent's calls from N minus the member's); a structure-off
replay is counted like the control (its build was before N and is cached; its decisions,
which it no longer asks, are few). These are the parent's figures, not a bound: a
continuation may run longer or shorter than its parent, which is what the replay measures.
Judge requests for scoring the continuations are `estimate.judge_questions` per continuation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from colabkit.errors import ColabkitError
from colabkit.runner.estimate import CACHED_SHARE, judge_questions
from colabkit.runner.fork import FORKS_DIR, ForkSet, Parent, fork
from colabkit.runner.plan import call_price
from colabkit.session.fork import Change, RemoveMember, StructureOff, fork_points
from colabkit.session.structure.registry import structures_for
from colabkit.store import is_finished

STRUCTURE = "structure"
"""The member name of the structure's machinery (a `structure_off` replay)."""


class ContributionJob(BaseModel):
    """One member's replays of one stored session: who is removed, from which event, which seeds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    parent: Path
    session_id: str
    variant: str
    task_id: str
    member: str = Field(min_length=1)
    at: int = Field(ge=1)
    seeds: tuple[int, ...] = Field(min_length=1)

    def change(self) -> Change:
        return StructureOff() if self.member == STRUCTURE else RemoveMember(role=self.member)


class Cost(BaseModel):
    """What a plan's replays ask their models (the parent's figures, module docstring)."""

    continuations: int
    controls: int
    calls: float
    prompt_tokens: float
    completion_tokens: float
    dollars: float | None
    """None when a model of a parent has no price in litellm's table."""
    judge_requests: float

    def lines(self) -> list[str]:
        price = f"${self.dollars:,.2f}" if self.dollars is not None else "unpriced (a model has no price in litellm's table)"
        return [f"replays: {self.continuations} continuations with a member removed or the structure off, "
                f"{self.controls} controls (shared by every member of a session)",
                f"model calls: {self.calls:,.0f} ({self.prompt_tokens:,.0f} prompt + {self.completion_tokens:,.0f} "
                f"completion tokens), read from the parents' logs from N on",
                f"cost: {price} for the sessions' calls ({CACHED_SHARE:.0%} of prompts at the provider's cache rate "
                "where it has one)",
                f"scoring: about {self.judge_requests:,.0f} judge requests (estimate.judge_questions per continuation)"]


def stored_sessions(results: Path | str) -> list[Path]:
    """Finished parent sessions (not continuations) in `results` (or its experiment folders)."""
    results = Path(results)

    def finished(folder: Path) -> list[Path]:
        return sorted(f for f in folder.iterdir() if f.is_dir() and not f.name.startswith(".")
                      and f.name != FORKS_DIR and is_finished(f)) if folder.is_dir() else []

    direct = finished(results)
    if direct or is_finished(results):
        return direct or [results]
    return [s for sub in sorted(results.iterdir()) if sub.is_dir() and sub.name != FORKS_DIR
            for s in finished(sub)] if results.is_dir() else []


def plan(sessions: Iterable[Path | str], seeds: Sequence[int], *, at: int | None = None,
         members: Sequence[str] | None = None) -> list[ContributionJob]:
    """One job per (team session, member): each human seat, and the structure where the variant
    has one (`members` restricts them). `at`: the fork point (default: the session's first
    task-phase step). A session alone (`single`) or a continuation has no member to remove."""
    if not seeds:
        raise ColabkitError("contributions: give at least one seed")
    jobs = []
    for folder in sessions:
        parent = Parent.load(folder)
        variant = parent.record.spec.variant
        if not variant.humans:
            continue
        points = fork_points(parent.events)
        n = at if at is not None else (points[0] if points else None)
        if n is None or n not in points:
            raise ColabkitError(f"{folder}: event {n} is not a fork point (the first is {points[:1] or 'none'})")
        found = [*variant.humans, *([STRUCTURE] if structures_for(variant) else [])]
        for member in found if members is None else [m for m in found if m in members]:
            jobs.append(ContributionJob(parent=Path(folder), session_id=parent.record.session_id,
                                        variant=variant.name, task_id=parent.record.task_id, member=member, at=n,
                                        seeds=tuple(dict.fromkeys(seeds))))
    return jobs


def estimate(jobs: Sequence[ContributionJob], *, judge_metrics: Sequence[str] = ("performance", "s_hyp"),
             judge_repeats: int = 1) -> Cost:
    """The plan's calls, tokens and dollars before anything runs (module docstring)."""
    calls = prompt = completion = 0.0
    dollars: float | None = 0.0
    controls: set[tuple[str, int, int]] = set()
    judged = 0.0
    for job in jobs:
        parent = Parent.load(job.parent)
        spec = parent.record.spec
        after = [(e.participant, c) for e in parent.events[job.at:] for c in e.llm_calls]
        runs = [(job.member, s) for s in job.seeds] + [
            ("control", s) for s in job.seeds if (job.session_id, job.at, s) not in controls]
        controls |= {(job.session_id, job.at, s) for s in job.seeds}
        for who, _ in runs:
            asked = [(p, c) for p, c in after if who in ("control", STRUCTURE) or p != who]
            calls += len(asked)
            for p, c in asked:
                prompt += c.prompt_tokens
                completion += c.completion_tokens
                price = call_price(spec.model_for(p if p in spec.participants else "default"), c.prompt_tokens,
                                   c.completion_tokens, CACHED_SHARE)
                dollars = None if price is None or dollars is None else dollars + price
            judged += judge_questions(spec, judge_metrics, judge_repeats)
    return Cost(continuations=sum(len(j.seeds) for j in jobs), controls=len(controls), calls=calls,
                prompt_tokens=prompt, completion_tokens=completion, dollars=dollars, judge_requests=judged)


def run(jobs: Sequence[ContributionJob], *, out: Path | str | None = None, data_root: Path | str | None = None,
        concurrency: int = 2, say: Callable[[str], None] | None = print) -> dict[ContributionJob, ForkSet]:
    """Run every job's replays and controls with the fork machinery (`runner.fork.fork`); a
    finished continuation is found, not rerun. `out`: where they go (default: each parent's forks/).
    The cost (`estimate`) is said first (`say`; None: the caller has said it)."""
    if say is not None:
        for line in estimate(jobs).lines():
            say(line)
    done = {}
    for job in jobs:
        done[job] = fork(job.parent, at=job.at, change=job.change(), seeds=list(job.seeds), out=out,
                         data_root=data_root, concurrency=concurrency)
    return done


def describe(jobs: Sequence[ContributionJob]) -> list[str]:
    """One line per job, for the dry run."""
    return [f"{j.session_id} {j.variant} {j.task_id}: remove {j.member} from event {j.at}, seeds "
            f"{','.join(map(str, j.seeds))}" for j in jobs] or ["no team session to replay"]

