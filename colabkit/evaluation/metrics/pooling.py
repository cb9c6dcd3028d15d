"""Pooling: where each simulated human's private knowledge went (the hidden profile's measures).

Stasser & Titus (1985) measure a hidden profile by the share of unshared items mentioned in
discussion, when each is first mentioned and whether the decision uses it; Lu, Yuan & McLeod
(2012) found groups pool proportionally few of them. Here the items are the humans' private
briefing items and "discussion" is the shared record, channel by channel (`private_items`).
Per item (`ItemFate`): whether it reached the shared record, where first (event number, round,
phase, channel, author) and whether the submitted hypothesis uses it. Per session, with `p` the
column prefix (`pooling` for the judge, `pooling_lex` for the lexical bound):

    p           = #items that reached the shared record / #items
    p_hyp       = #items the submitted hypothesis uses / #items   (empty editor: 0, nothing asked)
    p_delay     = mean over reached items of the round of first appearance (build phase: 0)
    p_first_<c> = #items whose first appearance was in channel c (chat, memory, cell, reason, editor)

Two deciders answer "does this text convey item k": the lexical lower bound (no judge; it errs
toward "not conveyed") and a judge, asked once per text of the record with the holders' items
numbered (so one question covers every item; the questions share the item list as a prefix).
The judge fails closed: a text it could not judge is unknown, so an item not found before it
is unknown (None, flagged), never "not pooled"; an item found in a text judged later is pooled
but its first appearance is unknown. A column needing an unknown value is missing and flagged.
Reliability is measured like every judged metric's: repeats give Fleiss' kappa per question kind,
`kappa:pooling/pooled` (per item, yes/no) and `kappa:pooling/hyp`; the per-text answers are kept
as `text:<event>` judgements with the judge's raw answer.

Both scorers are opt-in (`--metrics pooling pooling_lexical`): the memory channel exists only
where a memory is built, so the variant audit's rule that a variant equals its Default twin
outside its declared machinery would not hold for them, and the judged one asks one question per
text of the record. Not defined for the single agent (no private items).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from colabkit.evaluation.judge import JudgePrompt
from colabkit.evaluation.metrics.private_items import (
    CHANNELS,
    Channel,
    PrivateItem,
    RecordText,
    lexical_decisions,
    lexically_conveys,
    shared_record,
    split_briefing,
)
from colabkit.evaluation.metrics.process import ask_each, clip, humans_of, missing_flag, transient, verdict_flags
from colabkit.evaluation.records import Judgement, ScoreResult, Value
from colabkit.evaluation.scorer import Scorer, SessionContext, register_scorer
from colabkit.store import SessionRecord

HYPOTHESIS = "hypothesis"
_CHANNEL_WORDS = {"chat": "chat message", "memory": "the team's shared memory", "cell": "code cell",
                  "reason": "request or decision reason", "editor": "edit of the result"}


class ItemFate(BaseModel):
    """What became of one private item (None: unknown, because a judge gave no answer)."""

    model_config = ConfigDict(frozen=True)

    item_id: str
    holder: str
    kind: str
    text: str
    digest: str
    pooled: bool | None
    first_text: str | None = None
    first_seq: int | None = None
    first_round: int | None = None
    first_phase: Literal["build", "task"] | None = None
    channel: Channel | None = None
    first_by: str | None = None
    in_hypothesis: bool | None = None


def columns(prefix: str) -> tuple[str, ...]:
    """The session columns of one decider (`prefix`: 'pooling' or 'pooling_lex')."""
    return (prefix, f"{prefix}_hyp", f"{prefix}_delay", *(f"{prefix}_first_{c}" for c in CHANNELS))


def item_fates(items: Sequence[PrivateItem], texts: Sequence[RecordText],
               decisions: Mapping[str, set[str] | None], in_hypothesis: set[str] | None) -> list[ItemFate]:
    """Each item's fate from the per-text decisions (text id -> conveyed item ids, None: unknown)."""
    fates = []
    for item in items:
        unknown_before, first = False, None
        for text in texts:
            conveyed = decisions.get(text.text_id)
            if conveyed is None:
                unknown_before = True
            elif item.item_id in conveyed:
                first = text
                break
        where: dict[str, Any] = {}
        if first is not None and not unknown_before:
            where = {"first_text": first.text_id, "first_seq": first.seq, "first_round": first.round,
                     "first_phase": first.phase, "channel": first.channel, "first_by": first.author}
        fates.append(ItemFate(item_id=item.item_id, holder=item.holder, kind=item.kind, text=item.text,
                              digest=item.digest, pooled=True if first is not None else None if unknown_before
                              else False, in_hypothesis=None if in_hypothesis is None
                              else item.item_id in in_hypothesis, **where))
    return fates


def pooling_values(fates: Sequence[ItemFate], prefix: str) -> tuple[dict[str, Value], list[str]]:
    """The session columns and flags of `fates` (module docstring; missing, never 0, when unknown)."""
    values: dict[str, Value] = dict.fromkeys(columns(prefix))
    if not fates:
        return values, [f"{prefix}:no_private_items"]
    flags = []
    unknown = [f.item_id for f in fates if f.pooled is None]
    if unknown:
        flags.append(missing_flag(prefix, unknown))
    else:
        values[prefix] = sum(bool(f.pooled) for f in fates) / len(fates)
    if any(f.in_hypothesis is None for f in fates):
        flags.append(f"{prefix}:hypothesis_unjudged")
    else:
        values[f"{prefix}_hyp"] = sum(bool(f.in_hypothesis) for f in fates) / len(fates)
    reached = [f for f in fates if f.pooled]
    located = not unknown and all(f.channel is not None for f in reached)
    if not located and not unknown:
        flags.append(f"{prefix}:first_appearance_unknown")
    if located:
        values.update({f"{prefix}_first_{c}": sum(f.channel == c for f in reached) for c in CHANNELS})
        if reached:
            values[f"{prefix}_delay"] = statistics.fmean(0 if f.first_phase == "build" else f.first_round or 0
                                                         for f in reached)
        else:
            flags.append(f"{prefix}:nothing_pooled")  # no delay to measure: missing, and why
    return values, flags


def session_items(record: SessionRecord) -> tuple[list[PrivateItem] | None, list[str]]:
    """The team's humans' items from the briefings they received; None when a briefing is not stored."""
    items: list[PrivateItem] = []
    for human in humans_of(record.spec.variant.team):
        briefing = record.briefings.get(human)
        if briefing is None:
            return None, [f"pooling:no_briefing_stored({human})"]
        items += split_briefing(human, briefing)
    return items, []


def lexical_fates(items: Sequence[PrivateItem], texts: Sequence[RecordText], hypothesis: str) -> list[ItemFate]:
    """Every item's fate by the lexical bound (deterministic: the explorer recomputes it on the fly)."""
    used = {i.item_id for i in items if lexically_conveys(i, hypothesis)}
    return item_fates(items, texts, lexical_decisions(items, texts), used)


class ConveyVerdict(BaseModel):
    """The judge's answer about one text: the numbers of the items it conveys."""

    reason: str = Field(max_length=200, description="one short sentence")
    conveyed: list[int] = Field(description="the numbers of the private notes the text conveys; [] if none")


POOLING_PROMPT = JudgePrompt(id="pooling_conveys", version=1, instructions="""\
You decide which private notes a text conveys. The input is JSON: numbered "private_notes" that
members of a data-analysis team privately held, and ONE "text" from what the team shared (a chat
message, a code cell, the team's shared memory, a request or a decision reason, an edit of the
result, or the submitted hypothesis). A text conveys a note when a reader of the text alone would
learn that note's specific content (the fact, the data quirk, what a column means), in any
wording; naming a column or a file without its meaning, or a generic remark, conveys nothing.
List the numbers of the notes the text conveys, [] if none. Answer in JSON.""")


def pooling_fields(items: Sequence[PrivateItem], channel: str, text: str) -> dict[str, Any]:
    """What the judge sees about one text: neither who wrote it nor who held each note, so that
    "conveys" is judged on content alone (as the profile judge is not told the contributor)."""
    return {"private_notes": [{"n": n, "note": i.text} for n, i in enumerate(items, 1)],
            "text": {"kind": channel, "content": clip(text)}}


@register_scorer
class PoolingLexicalScorer(Scorer):
    """The lexical lower bound of pooling: no judge, deterministic (`private_items`)."""

    name = "pooling_lexical"
    version = "1"
    columns = (*columns("pooling_lex"), "private_items")
    opt_in = True

    async def score(self, ctx: SessionContext) -> ScoreResult:
        items, flags = session_items(ctx.record)
        if not humans_of(ctx.record.spec.variant.team) or items is None:
            return ScoreResult(values=dict.fromkeys(self.columns), flags=flags)
        texts = shared_record(ctx.events)
        fates = lexical_fates(items, texts, ctx.hypothesis)
        values, flags = pooling_values(fates, "pooling_lex")
        return ScoreResult(values={**values, "private_items": len(items)}, flags=flags,
                           details={"decider": "lexical", "n_texts": len(texts),
                                    "undecidable": [i.item_id for i in items if not i.decidable],
                                    "items": [f.model_dump(mode="json") for f in fates]})


@register_scorer
class PoolingScorer(Scorer):
    """Pooling as a judge decides it (module docstring); fails closed per text."""

    name = "pooling"
    version = "1"
    prompts = (POOLING_PROMPT,)
    columns = (*columns("pooling"), "private_items")
    opt_in = True

    async def score(self, ctx: SessionContext) -> ScoreResult:
        items, flags = session_items(ctx.record)
        if not humans_of(ctx.record.spec.variant.team) or items is None:
            return ScoreResult(values=dict.fromkeys(self.columns), flags=flags)
        texts = shared_record(ctx.events)
        asked = {t.text_id: pooling_fields(items, _CHANNEL_WORDS[t.channel], t.text) for t in texts}
        if ctx.delivered:
            asked[HYPOTHESIS] = pooling_fields(items, "the submitted hypothesis", ctx.hypothesis)
        verdicts = await ask_each(ctx, POOLING_PROMPT, asked if items else {}, ConveyVerdict)
        decisions: dict[str, set[str] | None] = {}
        out_of_range = 0
        for text_id, verdict in verdicts.items():
            numbers = None if verdict.value is None else set(verdict.value.conveyed)
            if numbers is not None and not numbers <= set(range(1, len(items) + 1)):
                numbers, out_of_range = None, out_of_range + 1  # garbage: unknown, never a positive
            decisions[text_id] = None if numbers is None else {items[n - 1].item_id for n in numbers}
        hypothesis = decisions.get(HYPOTHESIS) if ctx.delivered else set()
        fates = item_fates(items, texts, decisions, hypothesis)
        values, derived = pooling_values(fates, "pooling")
        flags = [*derived, *verdict_flags(verdicts)]
        if out_of_range:
            flags.append(f"pooling:judge_named_no_note({out_of_range})")
        return ScoreResult(values={**values, "private_items": len(items)}, flags=flags, complete=not transient(flags),
                           judgements=self._judgements(ctx, verdicts, fates),
                           details={"decider": "judge", "n_texts": len(texts),
                                    "items": [f.model_dump(mode="json") for f in fates]})

    @staticmethod
    def _judgements(ctx: SessionContext, verdicts: Mapping[str, Any], fates: Sequence[ItemFate]) -> list[Judgement]:
        """Per text the judge's answer; per item its pooled and used-in-hypothesis labels (the
        questions whose agreement across repeats is the decider's reliability)."""
        out = [Judgement.of(v, metric="pooling", item=f"text:{text_id}",
                            label=None if v.value is None else ",".join(map(str, sorted(set(v.value.conveyed)))) or "none")
               for text_id, v in verdicts.items()]
        model = ctx.judge.config.model if ctx.judge is not None else ""

        def label(value: bool | None) -> str | None:
            return None if value is None else "yes" if value else "no"

        for fate in fates:
            for kind, value in (("pooled", fate.pooled), ("hyp", fate.in_hypothesis)):
                out.append(Judgement(metric="pooling", item=f"{kind}:{fate.item_id}", repeat=ctx.repeat,
                                     label=label(value), flag=None if value is not None else "pooling:unknown",
                                     prompt_id=POOLING_PROMPT.id, prompt_version=POOLING_PROMPT.version, model=model))
        return out
