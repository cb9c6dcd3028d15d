"""Initiative: H_init,norm, Co-Gym's zero-rule variant, and controlled autonomy (CA+, CA-).

Following Co-Gym (paper-metrics notes, section 2; cogym notes, section 4), an *initiative
event* is a task-phase chat message that shows task initiative (it directs how a teammate's
part of the task should be done, e.g. proposes an action for someone else) or dialogue
initiative (it establishes mutual beliefs: gives concrete information or asks a concrete
question). Acknowledgements, repetition and clarification requests are not initiative.
Task actions are never initiative events (Co-Gym counts utterances only).

With p_u the share of initiative events by member u (team members only: the log's
`system` is not a member, which is exactly the bug that zeroes Co-Gym's own entropy),

    H_init,norm = -sum_u p_u ln p_u / ln |U|        (0 ln 0 = 0)

where |U| is the team size, members with no initiative included. It is N/A for the single
agent (|U| = 1) and undefined (missing, flagged) when nobody took initiative. The zero-rule
column is Co-Gym's published definition: the same value when every p_u > 0, else 0.

H_init,events (`h_init_events`, beside it, rule-based): the study defines p_u over the
events member u initiated, not only its messages. Here an initiated event is every
task-phase step of u that did something (`initiated_events`): a message sent, a cell run
(an error included), an edit, a proposal held for approval, a finish, a memory-update
proposal; waits, failed steps, the application of an approved proposal (initiated when
proposed) and the system's events are not. Same entropy, same N/A and undefined cases.
Which of the two is the study's H_init is said in the metric table of docs/scoring.md.
Decisions on requests (approve/reject, in the task or the closing pass) exist only where a
structure holds actions: they are machinery (`Event.kind`, the one rule every metric and cap
uses), not initiative, so `h_init_events` (the study tables') leaves them out and a gated
variant played with the same policy as its Default twin gets the same value (issue 42);
`h_init_events_all` counts them too, for comparison.

Controlled autonomy, as Co-Gym counts it over the message sequence: CA+ is the number of AI
messages containing "?" immediately followed by a human message judged a confirmation
(yes or no both confirm); CA- is the number of human messages judged to halt a teammate's
current work. Both are N/A without humans.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from colabkit.evaluation.judge import JudgePrompt
from colabkit.evaluation.metrics.process import (
    ChatTurn,
    ask_each,
    chat_turns,
    clip,
    humans_of,
    missing,
    missing_flag,
    transient,
    values_of,
    verdict_flags,
)
from colabkit.evaluation.records import Judgement, ScoreResult
from colabkit.evaluation.scorer import Scorer, SessionContext, register_scorer
from colabkit.session.events import Event, is_decision
from colabkit.team import AI_ID

METRIC = "initiative"
CONTEXT_TURNS = 3
InitiativeLabel = Literal["task", "dialogue", "none"]


class InitiativeVerdict(BaseModel):
    """The judge's answer for one message."""

    reason: str = Field(max_length=200, description="one short sentence")
    initiative: InitiativeLabel


class ReplyVerdict(BaseModel):
    """The judge's answer for one simulated human's message (controlled autonomy)."""

    reason: str = Field(max_length=200, description="one short sentence")
    confirms: bool = Field(description="it answers the previous message's yes/no question, either way")
    halts: bool = Field(description="it tells a teammate to stop or not to do what they are doing")


class InitiativeResult(BaseModel):
    """The session's initiative values; None means missing (see `flags`) or N/A."""

    model_config = ConfigDict(frozen=True)

    h_init_norm: float | None
    h_init_zero_rule: float | None
    ca_plus: int | None
    ca_minus: int | None
    initiative_counts: dict[str, int] | None
    n_messages: int
    flags: tuple[str, ...] = ()


INITIATIVE_PROMPT = JudgePrompt(id="initiative", version=1, instructions="""\
You annotate the chat of a team doing a data-analysis task together. For ONE message, decide
whether its sender takes the initiative, and which kind:
- "task": the message directs how a teammate's part of the work should be done: it proposes
  or asks for a concrete action by someone else (run this analysis, check that column, write
  the result like this).
- "dialogue": the message establishes shared understanding: it gives concrete information
  (a fact, a number, a finding, what a column means) or asks a concrete question.
- "none": a passive acknowledgement ("ok", "thanks", "sounds good"), a repetition of what was
  already said, a request to repeat or clarify, or small talk.
If a message does both "task" and "dialogue", answer "task". The input is JSON: judge only
"message"; "earlier_messages" are there as context. Answer in JSON.""")

REPLY_PROMPT = JudgePrompt(id="reply", version=1, instructions="""\
You annotate the chat of a team doing a data-analysis task together. The input is JSON:
"message" is ONE message from a human teammate, "previous_message" the one sent just before
it. Answer two questions about "message":
- confirms: does it answer a yes/no question or a request for confirmation asked in the
  previous message? Saying yes and saying no both count as confirming. Giving unrelated
  information does not.
- halts: does it tell a teammate to stop, or not to go on with, what they are
  currently doing? Disagreeing with a statement is not halting; stopping work is.
Answer in JSON.""")


def _earlier(turns: Sequence[ChatTurn], index: int) -> list[dict[str, str]]:
    return [{"sender": t.sender, "text": clip(t.text, 400)} for t in turns[max(0, index - CONTEXT_TURNS):index]]


def initiative_fields(turns: Sequence[ChatTurn], index: int) -> dict[str, Any]:
    """What the initiative judge sees about `turns[index]`: it and a few earlier messages."""
    turn = turns[index]
    return {"earlier_messages": _earlier(turns, index), "message": {"sender": turn.sender, "text": clip(turn.text)}}


def reply_fields(turns: Sequence[ChatTurn], index: int) -> dict[str, Any]:
    """What the controlled-autonomy judge sees about the human message `turns[index]`."""
    turn = turns[index]
    previous = turns[index - 1] if index > 0 else None
    return {"previous_message": {"sender": previous.sender, "text": clip(previous.text, 600)} if previous else None,
            "message": {"sender": turn.sender, "text": clip(turn.text)}}


def reply_items(turns: Sequence[ChatTurn], team: Sequence[str]) -> list[int]:
    """Indices of the turns the controlled-autonomy judge must label: every human message."""
    humans = set(humans_of(team))
    return [i for i, t in enumerate(turns) if t.sender in humans]


def initiative_entropy(counts: Mapping[str, int], team: Sequence[str]) -> tuple[float | None, float | None]:
    """(H_init,norm, zero-rule H) from initiative counts per member; (None, None) if undefined.

    Undefined means a team of one (N/A) or no initiative event at all (0/0).
    """
    size = len(team)
    total = sum(counts.get(member, 0) for member in team)
    if size < 2 or total == 0:
        return None, None
    shares = [counts.get(member, 0) / total for member in team]
    entropy = -sum(p * math.log(p) for p in shares if p > 0) / math.log(size)
    # Rounding can leave 1 - 1e-16 or a -0.0; the value is a share of [0, 1] by definition.
    entropy = min(1.0, max(0.0, entropy))
    return entropy, (entropy if all(p > 0 for p in shares) else 0.0)


def controlled_autonomy(
    turns: Sequence[ChatTurn], team: Sequence[str], replies: Mapping[str, ReplyVerdict | None]
) -> tuple[int | None, int | None, list[str]]:
    """(CA+, CA-, flags) from the message sequence and the reply labels of human messages."""
    humans = set(humans_of(team))
    if not humans:
        return None, None, []
    absent = missing(replies, [turns[i].item_id for i in reply_items(turns, team)])
    if absent:
        return None, None, [missing_flag("controlled_autonomy", absent)]
    ca_plus = 0
    for before, after in itertools.pairwise(turns):
        if before.sender == AI_ID and "?" in before.text and after.sender in humans:
            verdict = replies[after.item_id]
            ca_plus += int(verdict is not None and verdict.confirms)
    ca_minus = 0
    for turn in turns:
        verdict = replies.get(turn.item_id)
        ca_minus += int(turn.sender in humans and verdict is not None and verdict.halts)
    return ca_plus, ca_minus, []


def initiative(
    turns: Sequence[ChatTurn],
    team: Sequence[str],
    labels: Mapping[str, InitiativeVerdict | None],
    replies: Mapping[str, ReplyVerdict | None],
) -> InitiativeResult:
    """The session's initiative values from its chat turns and the judge's labels."""
    flags: list[str] = []
    ca_plus, ca_minus, ca_flags = controlled_autonomy(turns, team, replies)
    flags += ca_flags
    if len(team) < 2:
        return InitiativeResult(h_init_norm=None, h_init_zero_rule=None, ca_plus=ca_plus, ca_minus=ca_minus,
                                initiative_counts=None, n_messages=len(turns), flags=tuple(flags))
    absent = missing(labels, [t.item_id for t in turns])
    if absent:
        flags.append(missing_flag(METRIC, absent))
        return InitiativeResult(h_init_norm=None, h_init_zero_rule=None, ca_plus=ca_plus, ca_minus=ca_minus,
                                initiative_counts=None, n_messages=len(turns), flags=tuple(flags))
    counts = Counter(t.sender for t in turns if (v := labels[t.item_id]) is not None and v.initiative != "none")
    per_member = {member: counts.get(member, 0) for member in team}
    if sum(per_member.values()) == 0:
        flags.append(f"{METRIC}:no_initiative_events")
    h_norm, h_zero = initiative_entropy(per_member, team)
    return InitiativeResult(h_init_norm=h_norm, h_init_zero_rule=h_zero, ca_plus=ca_plus, ca_minus=ca_minus,
                            initiative_counts=per_member, n_messages=len(turns), flags=tuple(flags))


@register_scorer
class InitiativeScorer(Scorer):
    """H_init,norm (and its zero-rule variant) and CA+/CA- from judged task-phase messages."""

    name = "initiative"
    version = "1"
    prompts = (INITIATIVE_PROMPT, REPLY_PROMPT)
    columns = ("h_init_norm", "h_init_zero_rule", "ca_plus", "ca_minus")

    async def score(self, ctx: SessionContext) -> ScoreResult:
        team = ctx.record.spec.variant.team
        turns = chat_turns(ctx.events)
        if len(team) < 2:  # N/A: nothing to ask
            return ScoreResult(values=dict.fromkeys(self.columns))
        labels = await ask_each(ctx, INITIATIVE_PROMPT,
                                {t.item_id: initiative_fields(turns, i) for i, t in enumerate(turns)},
                                InitiativeVerdict)
        replies = await ask_each(ctx, REPLY_PROMPT,
                                 {turns[i].item_id: reply_fields(turns, i) for i in reply_items(turns, team)},
                                 ReplyVerdict)
        result = initiative(turns, team, values_of(labels), values_of(replies))
        flags = [*result.flags, *verdict_flags(labels, replies)]
        judgements = [Judgement.of(v, metric="h_init_norm", item=f"message:{item}",
                                   label=v.value.initiative if v.value else None) for item, v in labels.items()]
        for item, v in replies.items():
            judgements.append(Judgement.of(v, metric="ca_plus", item=f"confirms:{item}",
                                           label=None if v.value is None else str(v.value.confirms).lower()))
            judgements.append(Judgement.of(v, metric="ca_minus", item=f"halts:{item}",
                                           label=None if v.value is None else str(v.value.halts).lower()))
        return ScoreResult(
            values={"h_init_norm": result.h_init_norm, "h_init_zero_rule": result.h_init_zero_rule,
                    "ca_plus": result.ca_plus, "ca_minus": result.ca_minus},
            flags=flags, judgements=judgements, complete=not transient(flags),
            details={"initiative_counts": result.initiative_counts, "n_messages": result.n_messages})


_NOT_INITIATED = ("wait", "invalid_output")


def initiated_events(events: Sequence[Event], *, decisions: bool = False) -> Counter[str]:
    """Per member, the task-phase steps it initiated (module docstring: H_init,events): its own
    steps (`Event.kind` "step") that did something; with `decisions`, also its approvals and
    rejections (machinery: in the task and the closing pass)."""
    return Counter(e.participant for e in events
                   if e.phase == "task" and e.action not in _NOT_INITIATED and e.status != "failed_step"
                   and (e.kind == "step" or (decisions and is_decision(e))))


@register_scorer
class InitiativeEventsScorer(Scorer):
    """H_init,events: the initiative entropy over every event a member initiated, no judge;
    without decisions on requests (`h_init_events`, the tables') and with them."""

    name = "initiative_events"
    version = "3"  # 3: every decision on a request is machinery, left out of h_init_events (issue 42)
    columns = ("h_init_events", "h_init_events_all")
    machinery_columns = ("h_init_events_all",)

    async def score(self, ctx: SessionContext) -> ScoreResult:
        team = ctx.record.spec.variant.team
        counts, with_closing = initiated_events(ctx.events), initiated_events(ctx.events, decisions=True)
        per_member = {member: counts.get(member, 0) for member in team}
        h_events, _ = initiative_entropy(per_member, team)
        h_all, _ = initiative_entropy({member: with_closing.get(member, 0) for member in team}, team)
        flags = [f"{self.name}:no_initiated_events"] if len(team) > 1 and not sum(per_member.values()) else []
        return ScoreResult(values={"h_init_events": h_events, "h_init_events_all": h_all}, flags=flags,
                           details={"initiated": per_member})
