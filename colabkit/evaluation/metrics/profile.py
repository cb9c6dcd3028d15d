"""A_profile: how much of the simulated humans' work draws on their own persona's expertise.

The items are the humans' substantive contributions in the task phase (paper-metrics notes,
section 3): their initiative messages (as labelled by the initiative judge), their workspace
actions that took effect (the same set Work counts), and their gate decisions. A decision is
judged on the signatory's own words (its decision and stated reason), never on the proposal
it decided: the proposal's content is the proposer's work, and judging it would credit the
signatory with expertise it never showed, in the gated variants only (where with Preassigned
routing the proposal is on the signatory's own subject by construction). A judge sees
the persona cards and one contribution and says whose expertise it reflects: one of the
cards, or "generic" (anyone could have made it). The judge is not told who made it, so the
label cannot lean on the name; "own" then means the card it picked is the contributor's.

    A_profile = #own / #contributions

Decisions exist only where something is gated (and a bare "ok" is judged generic), so they
are structure, not expertise, when variants are compared: `a_profile`, the study tables'
column, is computed without the decision items (over the contributions every variant can
have); `a_profile_with_decisions` counts them too, for comparison.

It is N/A for a team without humans and missing (flagged) when the humans contributed
nothing or any needed label is missing (including an initiative label of a human message,
since then the set of contributions itself is unknown).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from colabkit.evaluation.judge import JudgePrompt
from colabkit.evaluation.metrics.initiative import INITIATIVE_PROMPT, InitiativeVerdict, initiative_fields
from colabkit.evaluation.metrics.process import (
    ChatTurn,
    ask_each,
    chat_turns,
    clip,
    event_item,
    humans_of,
    missing,
    missing_flag,
    task_events,
    transient,
    values_of,
    verdict_flags,
    workspace_actions,
)
from colabkit.evaluation.records import Judgement, ScoreResult
from colabkit.evaluation.scorer import Scorer, SessionContext, register_scorer
from colabkit.session.events import Event, is_decision
from colabkit.team import AI_ID, PERSONA_IDS, Persona, VariantConfig

METRIC = "a_profile"
GENERIC = "generic"


class Contribution(BaseModel):
    """One substantive contribution by a simulated human."""

    model_config = ConfigDict(frozen=True)

    item_id: str
    seq: int
    contributor: str
    kind: Literal["message", "execute_code", "edit_result", "decision"]
    content: str


class ProfileResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    a_profile: float | None
    own: int | None
    other: int | None
    generic: int | None
    n_contributions: int | None
    flags: tuple[str, ...] = ()


def persona_cards(variant: VariantConfig) -> tuple[Persona, ...]:
    """The cards the judge compares against: the team's humans, then the study's D and R.

    Both shipped expert cards are always shown, so that "the other expert's expertise" is a
    possible answer even in a one-human team.
    """
    ids = list(variant.humans)
    ids += [pid for pid in PERSONA_IDS if pid != AI_ID and pid not in ids]
    return tuple(variant.persona(pid) for pid in ids)


@cache
def verdict_schema(card_ids: tuple[str, ...]) -> type[BaseModel]:
    """The judge's answer schema: a reason and one of the card ids or "generic"."""
    choice = Literal[(*card_ids, GENERIC)]  # type: ignore[valid-type]
    fields: dict[str, Any] = {
        "reason": (str, Field(max_length=200, description="one short sentence")),
        "expertise": (choice, ...),
    }
    return create_model("ProfileVerdict", **fields)


def contributions(
    events: Sequence[Event], turns: Sequence[ChatTurn], team: Sequence[str],
    initiative: Mapping[str, InitiativeVerdict | None],
) -> tuple[list[Contribution] | None, list[str]]:
    """The humans' contributions, or None (and flags) when initiative labels are missing."""
    humans = set(humans_of(team))
    human_turns = [t for t in turns if t.sender in humans]
    absent = missing(initiative, [t.item_id for t in human_turns])
    if absent:
        return None, [missing_flag(METRIC, absent)]
    items = [Contribution(item_id=t.item_id, seq=t.seq, contributor=t.sender, kind="message", content=t.text)
             for t in human_turns if (v := initiative[t.item_id]) is not None and v.initiative != "none"]
    for e in workspace_actions(events):
        if e.participant in humans:
            kind: Literal["execute_code", "edit_result"] = "execute_code" if e.action == "execute_code" \
                else "edit_result"
            result = f"\n--- result ---\n{e.result}" if kind == "execute_code" else ""
            items.append(Contribution(item_id=event_item(e), seq=e.seq, contributor=e.participant, kind=kind,
                                      content=_payload(e) + result))
    for e in task_events(events):
        if e.participant in humans and is_decision(e) and e.status in ("approved", "rejected"):
            items.append(Contribution(item_id=event_item(e), seq=e.seq, contributor=e.participant, kind="decision",
                                      content=f"{e.status}; reason: {e.decision_reason or '(none given)'}"))
    return sorted(items, key=lambda c: c.seq), []


def _payload(event: Event) -> str:
    return str(event.args.get("code") or event.args.get("text") or "")


def a_profile(
    items: Sequence[Contribution] | None, labels: Mapping[str, str | None], team: Sequence[str],
    upstream_flags: Sequence[str] = (),
) -> ProfileResult:
    """A_profile from the contributions and the judge's expertise label for each."""
    none = ProfileResult(a_profile=None, own=None, other=None, generic=None, n_contributions=None,
                         flags=tuple(upstream_flags))
    if not humans_of(team) or items is None:
        return none
    if not items:
        return none.model_copy(update={"n_contributions": 0, "flags": (*upstream_flags,
                                                                      f"{METRIC}:no_human_contributions")})
    absent = missing(labels, [c.item_id for c in items])
    if absent:
        return none.model_copy(update={"flags": (*upstream_flags, missing_flag(METRIC, absent))})
    kinds = Counter("own" if labels[c.item_id] == c.contributor else GENERIC if labels[c.item_id] == GENERIC
                    else "other" for c in items)
    return ProfileResult(a_profile=kinds["own"] / len(items), own=kinds["own"], other=kinds["other"],
                         generic=kinds[GENERIC], n_contributions=len(items), flags=tuple(upstream_flags))


PROFILE_PROMPT = JudgePrompt(id="profile", version=2, instructions="""\
You annotate the work of a team doing a data-analysis task. The team's human experts are
described by persona cards (their role and what they privately know). The input is JSON:
"persona_cards" and ONE "contribution" (a chat message, a code cell and its output, an edit
of the submitted hypothesis, or an approval decision with its stated reason: judge the reason
only, what was decided is not shown). Say whose expertise the contribution
draws on: the id of the card whose knowledge or skills it shows, or "generic" if it needs
neither expert's particular knowledge (anyone on the team could have made it). You are not
told who made it; judge the content only. Answer in JSON.""")


def profile_fields(item: Contribution, cards: Sequence[Persona]) -> dict[str, Any]:
    """What the profile judge sees about one contribution (not who made it)."""
    kind = {"message": "chat message", "execute_code": "code cell and its output",
            "edit_result": "edit of the submitted hypothesis",
            "decision": "approval decision and its reason"}[item.kind]
    return {"persona_cards": [{"id": p.id, "name": p.name, "card": clip(p.prompt, 900)} for p in cards],
            "contribution": {"kind": kind, "content": clip(item.content)},
            "answer_with_one_of": [*(p.id for p in cards), GENERIC]}


@register_scorer
class ProfileScorer(Scorer):
    """A_profile. Asks the initiative question again for the humans' messages (with the same
    fields, so a session already scored for initiative replays it from the cache) rather
    than depending on another scorer's stored result."""

    name = "a_profile"
    version = "3"  # 2: a decision is judged on its own reason; 3: a_profile leaves decisions out
    prompts = (INITIATIVE_PROMPT, PROFILE_PROMPT)
    columns = ("a_profile", "a_profile_with_decisions")

    async def score(self, ctx: SessionContext) -> ScoreResult:
        variant = ctx.record.spec.variant
        team = variant.team
        if not humans_of(team):
            return ScoreResult(values={"a_profile": None, "a_profile_with_decisions": None})
        turns = chat_turns(ctx.events)
        humans = set(humans_of(team))
        asked = await ask_each(ctx, INITIATIVE_PROMPT, {t.item_id: initiative_fields(turns, i)
                                                        for i, t in enumerate(turns) if t.sender in humans},
                               InitiativeVerdict)
        items, upstream = contributions(ctx.events, turns, team, values_of(asked))
        cards = persona_cards(variant)
        schema = verdict_schema(tuple(c.id for c in cards))
        judged = await ask_each(ctx, PROFILE_PROMPT, {c.item_id: profile_fields(c, cards) for c in items or ()},
                                schema)
        labels = {item: getattr(v.value, "expertise", None) for item, v in judged.items()}
        with_decisions = a_profile(items, labels, team, upstream)
        result = a_profile(None if items is None else [c for c in items if c.kind != "decision"], labels, team,
                           upstream)
        flags = list(dict.fromkeys([*result.flags, *with_decisions.flags, *verdict_flags(asked, judged)]))
        by_item = {c.item_id: c for c in items or ()}
        judgements = [Judgement.of(v, metric="a_profile", item=f"contribution:{item}",
                                   label=None if labels[item] is None else
                                   ("own" if labels[item] == by_item[item].contributor else
                                    GENERIC if labels[item] == GENERIC else "other"))
                      for item, v in judged.items()]
        counts = {"own", "other", "generic", "n_contributions"}
        return ScoreResult(values={"a_profile": result.a_profile,
                                   "a_profile_with_decisions": with_decisions.a_profile},
                           flags=flags, judgements=judgements, complete=not transient(flags),
                           details={**result.model_dump(include=counts),
                                    "with_decisions": with_decisions.model_dump(include=counts)})
