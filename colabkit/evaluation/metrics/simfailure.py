"""Simulator-caused failures: did a simulated collaborator's act make the team fail?

tau2-bench's maintainers found up to 30% of failed runs were the simulated user's fault; the
study's teams have two simulated humans, so every failure is suspect until shown otherwise.
Per session with a simulated human (a seat a model played; a person's seat is not asked
about), the judge sees the query, the gold and the submitted hypothesis, how the session
ended, each simulated human's private notes (its briefing), and that human's acts in the
task phase (messages, result edits, decisions, finishes), each with its event id. It says
whether the team failed, whether one of those acts caused it, which kind of act (a wrong
fact beyond its notes, ending or blocking the work, an unreasoned rejection) and the event ids.

Fail closed: no answer, or an answer naming no event, an event that is not one of the acts
shown, a cause without a failure, or a kind "none" with a cause, leaves every column missing
with a flag; never a False that looks like an acquittal. With no act to judge the label is
False without asking (nothing a simulated human did reached the team). N/A (missing, no
flag) for a team with no simulated human. Opt-in (`opt_in`): it is scored when asked for
(`colabkit score --metrics sim_failure`, or an experiment's `metrics`), not by default.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from colabkit.evaluation.judge import JudgePrompt, Verdict
from colabkit.evaluation.metrics.process import clip, humans_of, task_events, transient, verdict_flags
from colabkit.evaluation.records import Judgement, ScoreResult
from colabkit.evaluation.scorer import Scorer, SessionContext, register_scorer
from colabkit.session.events import Event

METRIC = "sim_failure"
ACTS = ("send_message", "edit_result", "approve", "reject", "finish")
Kind = Literal["wrong_fact", "ended_or_blocked", "unreasoned_rejection", "none"]


class SimFailureVerdict(BaseModel):
    """The judge's answer about one session."""

    model_config = ConfigDict(frozen=True)

    reason: str = Field(max_length=600)
    team_failed: bool
    caused_by_simulated_human: bool
    kind: Kind
    event_ids: list[str] = Field(default_factory=list, max_length=8)


SIM_FAILURE_PROMPT = JudgePrompt(id="sim_failure", version=1, instructions="""\
You review one session of a team (an AI agent and simulated human experts) answering a
data-analysis query. The input is JSON: the query, the gold hypothesis, the team's submitted
hypothesis, how the session ended, each simulated human's private notes, and the simulated
humans' acts, each with an event_id. Decide: did the team fail (no hypothesis, or one that
does not match the gold)? If it failed, did one of the listed acts cause the failure? Count
only these causes: "wrong_fact" (the human stated something false that its notes do not
support, and the team used it), "ended_or_blocked" (the human ended the session early or
blocked the work the team needed), "unreasoned_rejection" (the human rejected a correct step
without a reason). Otherwise the kind is "none" and caused_by_simulated_human is false.
When it caused the failure, list the event_ids of the acts that did. Answer in JSON.""")


def acts_of(events: tuple[Event, ...], simulated: set[str]) -> list[dict[str, Any]]:
    """The simulated humans' task-phase acts the judge is shown, each with its event id."""
    acts = []
    for e in task_events(events):
        if e.participant in simulated and e.action in ACTS and e.person is None:
            text = str(e.args.get("text") or e.args.get("content") or e.result or "")
            acts.append({"event_id": e.event_id, "who": e.participant, "action": e.action, "status": e.status,
                         "content": clip(text, 600), "reason": e.decision_reason or ""})
    return acts


def check(verdict: SimFailureVerdict, shown: set[str]) -> str | None:
    """Why a parsed answer cannot be used (None: it can)."""
    if verdict.caused_by_simulated_human:
        if not verdict.team_failed:
            return "a cause without a failure"
        if verdict.kind == "none":
            return "a cause of kind 'none'"
        if not verdict.event_ids:
            return "a cause naming no event"
        unknown = [i for i in verdict.event_ids if i not in shown]
        if unknown:
            return f"event id(s) not among the acts shown: {', '.join(unknown[:3])}"
    elif verdict.kind != "none" or verdict.event_ids:
        return "no cause but a kind or events named"
    return None


def values(verdict: SimFailureVerdict | None) -> dict[str, Any]:
    if verdict is None:
        return {METRIC: None, "sim_failure_kind": None, "sim_failure_events": None}
    return {METRIC: verdict.caused_by_simulated_human, "sim_failure_kind": verdict.kind,
            "sim_failure_events": ";".join(verdict.event_ids)}


@register_scorer
class SimFailureScorer(Scorer):
    """The judged simulator-caused-failure label (module docstring)."""

    name = METRIC
    version = "1"
    prompts = (SIM_FAILURE_PROMPT,)
    columns = (METRIC, "sim_failure_kind", "sim_failure_events")
    opt_in = True

    async def score(self, ctx: SessionContext) -> ScoreResult:
        models = ctx.record.models
        simulated = {h for h in humans_of(ctx.record.spec.variant.team)
                     if not models[h].model.startswith("person/")}
        if not simulated:
            return ScoreResult(values=values(None))
        acts = acts_of(ctx.events, simulated)
        if not acts:
            return ScoreResult(values={METRIC: False, "sim_failure_kind": "none", "sim_failure_events": ""},
                               flags=[f"{METRIC}:no_simulated_acts"])
        fields = {"query": ctx.task.query if ctx.task else "", "gold_hypothesis": ctx.gold.hypothesis if ctx.gold else "",
                  "submitted_hypothesis": ctx.hypothesis or "(none)", "ended_by": ctx.record.ended_by,
                  "private_notes": {h: clip(ctx.record.briefings.get(h, ""), 1500) for h in sorted(simulated)},
                  "acts": acts}
        verdict: Verdict[SimFailureVerdict] = await ctx.verdict(SIM_FAILURE_PROMPT, fields, SimFailureVerdict)
        flags = verdict_flags({"session": verdict})
        answer = verdict.value
        problem = check(answer, {a["event_id"] for a in acts}) if answer is not None else None
        if problem is not None:
            flags.append(f"{METRIC}: judge_invalid: {problem}")
            answer = None
        judgement = Judgement.of(verdict, metric=METRIC, item="session",
                                 label=None if answer is None else answer.kind)
        return ScoreResult(values=values(answer), flags=flags, judgements=[judgement],
                           complete=not transient(flags))
