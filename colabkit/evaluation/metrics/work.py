"""Work: W_total and W_human, counted from the event log with no judge.

W_total is the number of task-phase actions that changed the shared workspace and took
effect: cells that ran without an error and editor updates (see
`process.workspace_actions` for what is left out and why). W_human is the part of it done
by the simulated humans. A gated action counts once, when it takes effect, for its
proposer: the engine logs the application of an approved request as the proposer's own
event, so counting application events by participant gives exactly that; the request and
the decision are separate events and never count. Rejected and expired requests never take
effect and never count. Magnitudes to expect: about 8 per session (paper-metrics notes, 6).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from colabkit.evaluation.metrics.process import humans_of, workspace_actions
from colabkit.evaluation.records import ScoreResult
from colabkit.evaluation.scorer import Scorer, SessionContext, register_scorer
from colabkit.session.events import Event


class WorkResult(BaseModel):
    """W_total, W_human (None for a team without humans) and the per-member counts."""

    model_config = ConfigDict(frozen=True)

    w_total: int
    w_human: int | None
    by_member: dict[str, int]
    flags: tuple[str, ...] = ()


def work(events: Iterable[Event], team: Sequence[str]) -> WorkResult:
    """Count the workspace actions that took effect, in total and by the simulated humans."""
    counts = Counter(e.participant for e in workspace_actions(events))
    strangers = sorted(set(counts) - set(team))
    humans = humans_of(team)
    return WorkResult(
        w_total=sum(counts.values()),
        # A team with no simulated human has no human work to count: N/A, not zero.
        w_human=sum(counts[h] for h in humans) if humans else None,
        by_member={member: counts[member] for member in team},
        # An actor outside the team would mean a log that does not belong to this record.
        flags=tuple(f"work:actor_not_in_team({name})" for name in strangers),
    )


@register_scorer
class WorkScorer(Scorer):
    """W_total and W_human from the log: rule-based, scored once whatever the judge."""

    name = "work"
    version = "1"
    columns = ("w_total", "w_human")

    async def score(self, ctx: SessionContext) -> ScoreResult:
        result = work(ctx.events, ctx.record.spec.variant.team)
        return ScoreResult(values={"w_total": result.w_total, "w_human": result.w_human},
                           flags=list(result.flags), details={"by_member": result.by_member})
