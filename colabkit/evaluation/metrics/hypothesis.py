"""Performance and HMS of the submitted hypothesis against the gold one, judged.

The judge answers four kinds of question (prompts written here, following DiscoveryBench's
published algorithm, not its prompt text): decompose a hypothesis into sub-hypotheses,
does this context match that one, how many variables do two sub-hypotheses name and share,
and which relation option holds. `judge_hypotheses` asks them; the arithmetic is in
`colabkit.evaluation.metrics.hms`.

Variables and relations are judged on the **matched sub-hypotheses**, as the paper's formula
states (varF1(h_p,i, h_g,i), relacc(h_p,i, h_g,i)), not on the whole hypotheses as
DiscoveryBench's code passes them: with whole hypotheses every matched pair of a session
gets the same variable and relation answer, so a prediction with one right and one wrong
sub-hypothesis scores both as the same, and the per-pair mean becomes meaningless. With the
usual one sub-hypothesis per side the two choices coincide.

Exact context matches (same text, ignoring case and spacing) are decided without the judge,
as upstream does; every other pair the greedy walk reaches is judged.

A non-empty hypothesis the judge decomposes into no sub-hypotheses scores HMS 0 by the
arithmetic, like an empty one; the score stands (upstream's rule) but carries the flag
`EMPTY_DECOMPOSITION`, because it may be the judge's failure rather than the team's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from colabkit.evaluation.judge import JudgePrompt, Verdict
from colabkit.evaluation.metrics.hms import (
    HmsScore,
    Pair,
    PairFacts,
    VariableCounts,
    greedy_pairs,
    hms_from_facts,
    performance,
    variable_f1,
)
from colabkit.evaluation.metrics.process import transient
from colabkit.evaluation.records import Judgement, ScoreResult
from colabkit.evaluation.scorer import Scorer, SessionContext, register_scorer
from colabkit.tasks import Task

T = TypeVar("T", bound=BaseModel)
EMPTY_DECOMPOSITION = "hms:empty_decomposition"
"""Flag prefix: a non-empty hypothesis decomposed into no sub-hypotheses."""
Ask = Callable[[JudgePrompt, Mapping[str, Any], type[T]], Awaitable[Verdict[T]]]

# Version 2 of the four questions: the same texts, laid out so that every question about one
# task shares its CONTEXT (query and datasets) as a prompt prefix (`JudgePrompt.render`).
_SHARED = (
    "You evaluate scientific hypotheses about a dataset for a research study. Judge only what "
    "the texts say; do not reward fluent wording, length or confidence. Reply with the JSON "
    "object asked for and nothing else. Each request gives the task's CONTEXT (its query and "
    "the datasets' descriptions), then the QUESTION, then the INPUT the question is about.")
_TASK_FIELDS = ("query", "datasets")

DECOMPOSE = JudgePrompt(
    id="hms_decompose", version=2, preamble=_SHARED, context_fields=_TASK_FIELDS, instructions=(
    "Split the HYPOTHESIS into its sub-hypotheses: separate claims that could each be true or "
    "false on their own. For each give\n"
    "- text: the claim in one sentence;\n"
    "- context: the boundary conditions that limit where the claim holds (a time window, a "
    "place, a subgroup, a condition); if it holds over the whole dataset, describe the whole "
    "dataset briefly using the dataset descriptions;\n"
    "- variables: the concepts or measured quantities the claim relates, one short noun phrase "
    "each;\n"
    "- relation: how the variables relate (e.g. 'peaks', 'increases with', 'positively "
    "correlated', 'no relationship').\n"
    "An empty or contentless hypothesis has no sub-hypotheses: return an empty list. Do not "
    "invent claims the text does not make."))

CONTEXT_MATCH = JudgePrompt(
    id="hms_context_match", version=2, preamble=_SHARED, context_fields=_TASK_FIELDS, instructions=(
    "Decide whether the PREDICTED context describes the same scope as the GOLD context: the "
    "same time window, place, subgroup or condition, allowing different wording, units or "
    "calendar notation for the same span. Contexts that both cover the whole dataset match. "
    "A context that is broader, narrower or different does not match. Give a one-sentence "
    "reason, then match true or false."))

VARIABLES = JudgePrompt(
    id="hms_variables", version=2, preamble=_SHARED, context_fields=_TASK_FIELDS, instructions=(
    "Count the distinct variables (concepts or measured quantities) named in the GOLD "
    "sub-hypothesis (size_gold) and in the PREDICTED one (size_pred), and how many of them "
    "the two share (intersection). Two names count as shared when they denote the same "
    "concept, even if worded differently. The intersection cannot exceed either size. "
    "Give a one-sentence explanation first."))

RELATION = JudgePrompt(
    id="hms_relation", version=2, preamble=_SHARED, context_fields=_TASK_FIELDS, instructions=(
    "Compare how the variables relate in the PREDICTED sub-hypothesis with the GOLD one. "
    "Relations form a hierarchy from general to specific, e.g. 'some relationship' > "
    "'a positive relationship' > 'a positive linear relationship'. Answer\n"
    "A: the predicted relation is the same as the gold one, or equivalent;\n"
    "B: the predicted relation is compatible with the gold one but more general;\n"
    "C: the predicted relation is different, opposite, or absent.\n"
    "Give a one-sentence explanation first."))


HMS_PROMPTS = (DECOMPOSE, CONTEXT_MATCH, VARIABLES, RELATION)


class SubHypothesis(BaseModel):
    text: str = Field(max_length=400)
    context: str = Field(max_length=300)
    variables: list[str] = Field(max_length=10)
    relation: str = Field(max_length=200)


class Decomposition(BaseModel):
    sub_hypotheses: list[SubHypothesis] = Field(max_length=6)


class ContextMatch(BaseModel):
    reason: str = Field(max_length=300)
    match: bool


class VariableAnswer(BaseModel):
    explanation: str = Field(max_length=300)
    size_gold: int = Field(ge=0, le=20)
    size_pred: int = Field(ge=0, le=20)
    intersection: int = Field(ge=0, le=20)


class RelationAnswer(BaseModel):
    explanation: str = Field(max_length=300)
    option: Literal["A", "B", "C"]


class HypothesisJudged(BaseModel):
    """The judged facts of one gold-vs-prediction comparison and the scores they give."""

    gold: list[SubHypothesis] | None
    prediction: list[SubHypothesis] | None
    context_match: dict[str, bool | None] = {}
    """'p<i>:g<j>' -> the match decided (exactly or by the judge) for each pair asked."""
    pairs: list[Pair] | None = None
    facts: list[PairFacts] = []
    score: HmsScore
    flags: list[str] = []
    judgements: list[Judgement] = []


def task_fields(task: Task | None) -> dict[str, Any]:
    """What the judge knows of the task: the query and the datasets' descriptions."""
    if task is None:
        return {}
    return {"query": task.query, "datasets": [
        {"name": d.name, "description": d.description,
         "columns": {c.name: c.description for c in d.columns}} for d in task.datasets]}


def _same_context(a: str, b: str) -> bool:
    norm_a, norm_b = " ".join(a.casefold().split()), " ".join(b.casefold().split())
    return bool(norm_a) and norm_a == norm_b


async def judge_hypotheses(ask: Ask, task: Task | None, gold: str, prediction: str) -> HypothesisJudged:
    """Ask the judge everything HMS needs about `prediction` vs `gold`; score from the facts."""
    judgements: list[Judgement] = []
    flags: list[str] = []
    context = task_fields(task)

    async def decompose(side: str, text: str) -> list[SubHypothesis] | None:
        if not text.strip():  # fixed by rule for every judge: nothing to decompose (the prompt's own rule)
            return []
        verdict = await ask(DECOMPOSE, {**context, "hypothesis": text}, Decomposition)
        n = len(verdict.value.sub_hypotheses) if verdict.value is not None else None
        judgements.append(Judgement.of(verdict, metric="hms", item=f"decompose:{side}", score=n))
        if verdict.value is None:
            flags.append(f"decompose {side}: {verdict.flag}")
            return None
        return verdict.value.sub_hypotheses

    gold_subs = await decompose("gold", gold)
    pred_subs = await decompose("prediction", prediction)
    for side, text, subs in (("gold", gold, gold_subs), ("prediction", prediction, pred_subs)):
        if subs == [] and text.strip():
            flags.append(f"{EMPTY_DECOMPOSITION}({side}): a non-empty hypothesis has no sub-hypotheses")
    if gold_subs is None or pred_subs is None:
        unknown = HmsScore(recall_context=None, mean_accuracy=None, hms=None, problems=("decomposition failed",))
        return HypothesisJudged(gold=gold_subs, prediction=pred_subs, score=unknown, flags=flags,
                                judgements=judgements)

    matches: dict[Pair, bool | None] = {}
    covered: set[int] = set()
    for p, pred in enumerate(pred_subs):
        for g, gold_sub in enumerate(gold_subs):
            if g in covered:
                continue
            if _same_context(pred.context, gold_sub.context):
                matches[(p, g)] = True
            else:
                verdict = await ask(CONTEXT_MATCH, {**context, "gold_context": gold_sub.context,
                                                    "predicted_context": pred.context}, ContextMatch)
                value = verdict.value.match if verdict.value is not None else None
                judgements.append(Judgement.of(verdict, metric="hms", item=f"context:p{p}:g{g}",
                                               label=None if value is None else str(value).lower()))
                if value is None:
                    flags.append(f"context p{p}:g{g}: {verdict.flag}")
                matches[(p, g)] = value
            if matches[(p, g)] is None:
                break  # unknown: the walk cannot go on; greedy_pairs will say so
            if matches[(p, g)]:
                covered.add(g)
                break
        if any(v is None for v in matches.values()):
            break

    pairs = greedy_pairs(len(pred_subs), len(gold_subs), matches)
    facts = await _pair_facts(ask, context, [(p, g, pred_subs[p], gold_subs[g]) for p, g in pairs or []],
                              judgements, flags)
    score = hms_from_facts(len(gold_subs), len(pred_subs), pairs, {(f.pred, f.gold): f for f in facts})
    flags.extend(score.problems)
    return HypothesisJudged(gold=gold_subs, prediction=pred_subs,
                            context_match={f"p{p}:g{g}": v for (p, g), v in matches.items()},
                            pairs=pairs, facts=facts, score=score, flags=flags, judgements=judgements)


async def _pair_facts(ask: Ask, context: dict[str, Any], pairs: list[tuple[int, int, SubHypothesis, SubHypothesis]],
                      judgements: list[Judgement], flags: list[str]) -> list[PairFacts]:
    """The variable counts and relation option of every matched pair.

    Every pair's variables question is asked before any relation question, so consecutive
    requests share the question's instructions too (asked pair by pair, the two questions
    alternated and each request prefilled its instructions afresh on the embedded judge).
    """
    fields = {(p, g): {**context, "gold_sub_hypothesis": gold.model_dump(),
                       "predicted_sub_hypothesis": pred.model_dump()} for p, g, pred, gold in pairs}
    counts: dict[tuple[int, int], VariableCounts | None] = {}
    for p, g, _, _ in pairs:
        var = await ask(VARIABLES, fields[(p, g)], VariableAnswer)
        counts[(p, g)] = None
        if var.value is not None:
            counts[(p, g)] = VariableCounts(size_gold=var.value.size_gold, size_pred=var.value.size_pred,
                                            intersection=var.value.intersection)
        f1 = _f1_or_none(counts[(p, g)])
        judgements.append(Judgement.of(var, metric="hms", item=f"variables:p{p}:g{g}", score=f1))
        if var.value is None:
            flags.append(f"variables p{p}:g{g}: {var.flag}")
        elif f1 is None:
            flags.append(f"variables p{p}:g{g}: judge_invalid: intersection larger than a set")
    facts = []
    for p, g, _, _ in pairs:
        rel = await ask(RELATION, fields[(p, g)], RelationAnswer)
        option = rel.value.option if rel.value is not None else None
        judgements.append(Judgement.of(rel, metric="hms", item=f"relation:p{p}:g{g}", label=option))
        if option is None:
            flags.append(f"relation p{p}:g{g}: {rel.flag}")
        facts.append(PairFacts(pred=p, gold=g, variables=counts[(p, g)], relation=option))
    return facts


def _f1_or_none(counts: VariableCounts | None) -> float | None:
    if counts is None:
        return None
    try:
        return variable_f1(counts)
    except ValueError:
        return None


@register_scorer
class PerformanceScorer(Scorer):
    """Performance (delivered x context recall, Co-Gym) and HMS (DiscoveryBench) per session.

    Undelivered sessions score 0 on both without asking the judge; a session whose task or
    gold is unknown gets missing values and a flag.
    """

    name = "performance"
    version = "1"
    prompts = HMS_PROMPTS
    columns = ("delivered", "performance", "hms", "recall_context", "hms_mean_accuracy")

    async def score(self, ctx: SessionContext) -> ScoreResult:
        delivered = ctx.delivered
        if not delivered:
            return ScoreResult(values={"delivered": False, "performance": 0.0, "hms": 0.0,
                                       "recall_context": 0.0, "hms_mean_accuracy": 0.0})
        if ctx.gold is None:
            return ScoreResult(values={"delivered": True, **dict.fromkeys(self.columns[1:])},
                               flags=[f"no_gold: task {ctx.record.task_id}"])
        judged = await judge_hypotheses(ctx.verdict, ctx.task, ctx.gold.hypothesis, ctx.hypothesis)
        s = judged.score
        return ScoreResult(
            values={"delivered": True, "performance": performance(True, s.recall_context), "hms": s.hms,
                    "recall_context": s.recall_context, "hms_mean_accuracy": s.mean_accuracy},
            flags=judged.flags, judgements=judged.judgements, complete=not transient(judged.flags),
            details=judged.model_dump(mode="json", include={"gold", "prediction", "context_match", "pairs", "facts"}))
