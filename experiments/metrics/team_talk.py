"""A metric plugin, the tutorial's example (notebooks/new_study.ipynb, docs/your-own-study.md).

`team_talk` counts the chat messages of the task phase that reached the team, by the AI agent
and by the simulated humans: a rule-based scorer (no judge), so it scores once and is cached
like the built-in ones. Name it in an experiment's `metrics:` by its import path,
`metrics/team_talk.py:TeamTalk` (relative to the experiment file), or install it as an entry
point in `colabkit.metrics` and name it `team_talk`.
"""

from __future__ import annotations

from colabkit.evaluation import Scorer, ScoreResult, SessionContext


class TeamTalk(Scorer):
    """Messages sent in the task phase: by the AI agent, and by the humans together."""

    name = "team_talk"
    version = "1"
    columns = ("ai_messages", "human_messages")
    opt_in = True

    async def score(self, ctx: SessionContext) -> ScoreResult:
        sent = [e for e in ctx.task_events if e.action == "send_message" and e.status == "ok"]
        humans = [e for e in sent if e.participant != "ai"]
        return ScoreResult(values={"ai_messages": len(sent) - len(humans),
                                   "human_messages": len(humans) if ctx.record.spec.variant.humans else None})
