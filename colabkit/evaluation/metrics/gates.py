"""Gated events: what each approval request was, who decided it, how fast, and how well.

The facts come from the log alone. A request is the proposer's `pending` event; its fate is
the signatory's `approve`/`reject` event or, if nobody decided before the end, the system's
`request_expired` event. Latency is counted in log events and in rounds elapsed between the
request and its decision (1 event = decided in the very next step of the log; 0 rounds =
decided in the round it was made); it is undefined for an expired request. The signatory
is the member the gate rule named (the engine never reroutes a request to someone else).

A judge then labels each decided request (paper-metrics notes, section 7):
- expertise_fit: the signatory's persona has the expertise the action needs;
- grounded: the decision gives a reason that engages with the action's substance (data,
  evidence, an evidence standard), as opposed to a rubber stamp;
- correct_in_hindsight: an approved action proved sound and useful (its output feeds the
  submitted hypothesis or the analysis), a rejected one was indeed flawed or unnecessary;
- changed_course: the decision changed what the team did next.
An expired request has no decision, so it gets no labels (flagged `expired`).

Session rates: approval_rate and rejection_rate are shares of all requests (so with the
expired share they sum to 1); both are missing when the session made no request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from colabkit.evaluation.judge import JudgePrompt
from colabkit.evaluation.metrics.process import ask_each, clip, task_events, transient, values_of, verdict_flags
from colabkit.evaluation.metrics.profile import persona_cards
from colabkit.evaluation.records import GateAnnotation, Judgement, ScoreResult
from colabkit.evaluation.scorer import Scorer, SessionContext, combine_values, register_scorer
from colabkit.session.actions import MEMORY_UPDATE
from colabkit.session.events import SYSTEM, Event
from colabkit.team import Persona

FOLLOWING_EVENTS = 8
Decision = Literal["approved", "rejected", "expired"]


class GateRequest(BaseModel):
    """One approval request and its fate, from the log."""

    model_config = ConfigDict(frozen=True)

    request_id: str
    action: str
    proposer: str
    signatory: str
    rule_note: str
    """The note the gate rule carried to the signatory (the team's words for when it applies)."""
    payload: str
    decision: Decision
    reason: str
    request_seq: int
    decision_seq: int | None
    latency_events: int | None
    latency_rounds: int | None
    flags: tuple[str, ...] = ()


class GateVerdict(BaseModel):
    """The judge's four labels for one decided request."""

    reason: str = Field(max_length=300, description="one or two short sentences")
    expertise_fit: bool
    grounded: bool
    correct_in_hindsight: bool
    changed_course: bool


class GateRates(BaseModel):
    """Per-session counts and rates of the requests."""

    model_config = ConfigDict(frozen=True)

    n_gated: int
    approval_rate: float | None
    rejection_rate: float | None


def _payload(args: Mapping[str, Any]) -> str:
    return str(args.get("code") or args.get("text") or args.get("reason") or "")


def gate_requests(events: Sequence[Event]) -> list[GateRequest]:
    """Every task-phase request with its decision and latency, in request order."""
    task = task_events(events)
    fates: dict[str, Event] = {}
    for e in task:
        decided = e.action in ("approve", "reject") and e.status in ("approved", "rejected")
        expired = e.participant == SYSTEM and e.action == "request_expired"
        if (decided or expired) and e.request_id is not None:
            fates.setdefault(e.request_id, e)
    requests = []
    for e in task:
        # A living memory's update (upd-N) is a team act, not a gated action: not a request here.
        if e.status != "pending" or e.request_id is None or e.action == MEMORY_UPDATE:
            continue
        fate = fates.get(e.request_id)
        flags: list[str] = []
        if e.gate_rule is None:
            flags.append("gates:no_gate_rule_logged")
        if fate is None or fate.action == "request_expired":
            decision: Decision = "expired"
            flags.append("gates:expired")
            if fate is None:
                flags.append("gates:no_end_record")
        else:
            decision = "approved" if fate.status == "approved" else "rejected"
        decided = fate is not None and decision != "expired"
        requests.append(GateRequest(
            request_id=e.request_id, action=e.action, proposer=e.participant, signatory=e.signatory or "",
            rule_note=e.gate_rule.note if e.gate_rule is not None else "", payload=_payload(e.args),
            decision=decision, reason=(fate.decision_reason or "") if decided and fate else "",
            request_seq=e.seq, decision_seq=fate.seq if decided and fate else None,
            latency_events=fate.seq - e.seq if decided and fate else None,
            latency_rounds=fate.round - e.round if decided and fate else None,
            flags=tuple(flags),
        ))
    return requests


def gate_rates(requests: Sequence[GateRequest]) -> GateRates:
    """Counts of requests and the shares approved and rejected (missing without requests)."""
    n = len(requests)
    if n == 0:
        return GateRates(n_gated=0, approval_rate=None, rejection_rate=None)
    approved = sum(1 for r in requests if r.decision == "approved")
    rejected = sum(1 for r in requests if r.decision == "rejected")
    return GateRates(n_gated=n, approval_rate=approved / n, rejection_rate=rejected / n)


def gate_annotations(
    requests: Sequence[GateRequest], verdicts: Mapping[str, GateVerdict | None]
) -> list[GateAnnotation]:
    """One annotation per request for the gated-events table (labels None when not judged)."""
    rows = []
    for r in requests:
        verdict = verdicts.get(r.request_id)
        flags = list(r.flags)
        if r.decision != "expired" and verdict is None:
            flags.append("gates:judge_missing(1)")
        rows.append(GateAnnotation(
            request_id=r.request_id, action=r.action, proposer=r.proposer, signatory=r.signatory,
            decision=None if r.decision == "expired" else r.decision,
            latency_events=r.latency_events, latency_rounds=r.latency_rounds,
            expertise_fit=verdict.expertise_fit if verdict else None,
            grounded=verdict.grounded if verdict else None,
            correct_in_hindsight=verdict.correct_in_hindsight if verdict else None,
            changed_course=verdict.changed_course if verdict else None,
            flags=flags,
        ))
    return rows


GATE_PROMPT = JudgePrompt(id="gate", version=1, instructions="""\
You review one approval decision in a team doing a data-analysis task. Some actions need a
named teammate's approval before they take effect. The input is JSON: the persona cards of
the team's human experts ("persona_cards"), the action that was proposed and by whom, with
the note the team attached to this gate ("request"), who decided, how and why ("decision"), what happened next ("next_events") and
the hypothesis the team finally submitted ("submitted_hypothesis"). Answer four yes/no
questions:
- expertise_fit: does the decider's persona have the expertise this action needs? The AI
  agent ("ai") has general analysis skills but neither expert's private knowledge.
- grounded: does the decision's reason engage with the substance of the action (the data,
  the code, the evidence, a standard the answer must meet)? A bare "ok", "looks good" or a
  reason that could fit any action is a rubber stamp: answer false.
- correct_in_hindsight: for an approval, did the action prove sound and useful (its result is
  used by the team or in the submitted hypothesis)? For a rejection, was the action indeed
  flawed or unnecessary?
- changed_course: did the team do something different next because of this decision?
Answer in JSON.""")


def gate_fields(
    request: GateRequest, cards: Sequence[Persona], following: Sequence[Event], final_hypothesis: str
) -> dict[str, Any]:
    """What the gate judge sees about one decided request."""
    return {
        "persona_cards": [{"id": p.id, "name": p.name, "card": clip(p.prompt, 900)} for p in cards],
        "request": {"proposer": request.proposer, "action": request.action, "content": clip(request.payload, 900),
                    "gate_note": request.rule_note},
        "decision": {"signatory": request.signatory, "decision": request.decision,
                     "reason": clip(request.reason, 400)},
        "next_events": [{"participant": e.participant, "action": e.action, "status": e.status,
                         "content": clip(_payload(e.args) or e.result, 200)} for e in following[:FOLLOWING_EVENTS]],
        "submitted_hypothesis": clip(final_hypothesis, 600),
    }


def following_events(events: Sequence[Event], request: GateRequest) -> list[Event]:
    """The task-phase events after a request's decision (what the decision led to)."""
    if request.decision_seq is None:
        return []
    return [e for e in task_events(events) if e.seq > request.decision_seq and e.action != "wait"]


_LABELS = ("expertise_fit", "grounded", "correct_in_hindsight", "changed_course")


@register_scorer
class GatesScorer(Scorer):
    """Per-request facts and judge labels, and the session's approval and rejection rates."""

    name = "gates"
    version = "1"
    prompts = (GATE_PROMPT,)
    columns = ("n_gated", "approval_rate", "rejection_rate")

    async def score(self, ctx: SessionContext) -> ScoreResult:
        requests = gate_requests(ctx.events)
        rates = gate_rates(requests)
        cards = persona_cards(ctx.record.spec.variant)
        decided = [r for r in requests if r.decision != "expired"]
        asked = await ask_each(ctx, GATE_PROMPT, {
            r.request_id: gate_fields(r, cards, following_events(ctx.events, r), ctx.hypothesis) for r in decided
        }, GateVerdict)
        flags = verdict_flags(asked)
        judgements = [Judgement.of(v, metric=label, item=f"gate:{request_id}",
                                   label=None if v.value is None else str(getattr(v.value, label)).lower())
                      for request_id, v in asked.items() for label in _LABELS]
        return ScoreResult(values=rates.model_dump(), flags=flags, judgements=judgements,
                           gate_annotations=gate_annotations(requests, values_of(asked)),
                           complete=not transient(flags))

    def combine(self, results: list[ScoreResult]) -> ScoreResult:
        """As the default, but each gate label is the majority over the repeats (tie: missing)."""
        combined = super().combine(results)
        if len(results) == 1:
            return combined
        rows = []
        for i, row in enumerate(results[0].gate_annotations):
            same = [r.gate_annotations[i] for r in results if len(r.gate_annotations) > i]
            votes = {label: combine_values([v for a in same if (v := getattr(a, label)) is not None])
                     for label in _LABELS}
            rows.append(row.model_copy(update=votes))
        return combined.model_copy(update={"gate_annotations": rows})
