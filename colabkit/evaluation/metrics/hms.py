"""The arithmetic of Performance and HMS, as pure functions of what the judge decided.

DiscoveryBench's hypothesis match score (HMS) and Co-Gym's performance rating both start
from LLM-judged facts: each hypothesis decomposed into sub-hypotheses (context, variables,
relation), which predicted sub-hypothesis matches which gold one by context, and, for each
matched pair, the judged sizes of the two variable sets and their fuzzy intersection and
the relation option (A same, B more general, C different). Everything after those facts is
arithmetic, kept here apart from the judge calls so it can be checked by hand:

- greedy context matching: each predicted sub-hypothesis, in order, takes the first gold
  sub-hypothesis not yet covered whose context matches (`greedy_pairs`);
- recall_context = covered gold / all gold sub-hypotheses;
- per matched pair: accuracy = context (1) x variable F1 x relation (A 1, B 0.5, C 0);
- mean accuracy = sum of pair accuracies / number of *predicted* sub-hypotheses (an
  unmatched prediction counts 0: DiscoveryBench's precision penalty);
- HMS = recall_context x mean accuracy; Performance = delivered x recall_context (Co-Gym).

Unlike the upstream code, nothing unknown is ever turned into a number: a context match,
variable count or relation the judge could not give makes the affected score None (missing),
never -1, 0 or 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Relation = Literal["A", "B", "C"]
RELATION_SCORE: dict[str, float] = {"A": 1.0, "B": 0.5, "C": 0.0}
Pair = tuple[int, int]
"""(index of the predicted sub-hypothesis, index of the gold one)."""


class VariableCounts(BaseModel):
    """The judge's count of variables in a gold and a predicted sub-hypothesis, and of the
    variables they share (matched fuzzily: 'openness' and 'landscape openness' are one)."""

    model_config = ConfigDict(frozen=True)

    size_gold: int = Field(ge=0)
    size_pred: int = Field(ge=0)
    intersection: int = Field(ge=0)


class PairFacts(BaseModel):
    """The judged facts of one matched pair; None where the judge gave no usable answer."""

    model_config = ConfigDict(frozen=True)

    pred: int
    gold: int
    variables: VariableCounts | None
    relation: Relation | None


class HmsScore(BaseModel):
    """Recall of gold contexts, mean pair accuracy and their product; None = unknown."""

    model_config = ConfigDict(frozen=True)

    recall_context: float | None
    mean_accuracy: float | None
    hms: float | None
    problems: tuple[str, ...] = ()


def variable_f1(counts: VariableCounts) -> float:
    """F1 of the variable sets from their sizes: P = shared / predicted, R = shared / gold.

    Zero shared variables, or an empty side, gives 0 (there is nothing to be precise or
    complete about). A count of shared variables larger than either set is contradictory
    and raises ValueError: the caller treats it as an invalid judge answer.
    """
    if counts.intersection > min(counts.size_gold, counts.size_pred):
        raise ValueError(f"{counts.intersection} shared variables but sets of "
                         f"{counts.size_gold} (gold) and {counts.size_pred} (predicted)")
    if counts.intersection == 0:
        return 0.0
    precision = counts.intersection / counts.size_pred
    recall = counts.intersection / counts.size_gold
    return 2 * precision * recall / (precision + recall)


def pair_accuracy(facts: PairFacts) -> float | None:
    """context (matched: 1) x variable F1 x relation score; None if a fact is missing or
    contradictory."""
    if facts.variables is None or facts.relation is None:
        return None
    try:
        f1 = variable_f1(facts.variables)
    except ValueError:
        return None
    return 1.0 * f1 * RELATION_SCORE[facts.relation]


def greedy_pairs(n_pred: int, n_gold: int, context_match: Mapping[Pair, bool | None]) -> list[Pair] | None:
    """DiscoveryBench's greedy matching over judged context matches.

    Predicted sub-hypotheses are taken in order; each is linked to the first gold one not
    yet covered whose context matches. `context_match` must hold every (pred, gold) entry
    the greedy walk reaches; an entry that is None (the judge could not say) or absent makes
    the matching unknown and returns None.
    """
    covered: set[int] = set()
    pairs: list[Pair] = []
    for p in range(n_pred):
        for g in range(n_gold):
            if g in covered:
                continue
            match = context_match.get((p, g))
            if match is None:
                return None
            if match:
                covered.add(g)
                pairs.append((p, g))
                break
    return pairs


def hms_from_facts(n_gold: int, n_pred: int, pairs: list[Pair] | None,
                   facts: Mapping[Pair, PairFacts]) -> HmsScore:
    """Recall of gold contexts, mean pair accuracy over predicted sub-hypotheses, and HMS.

    `pairs` is the greedy matching (None = unknown); `facts` holds each pair's judged facts.
    A prediction with no sub-hypotheses matches nothing (mean accuracy 0); a gold hypothesis
    with none cannot be scored against (all None).
    """
    if n_gold <= 0:
        return HmsScore(recall_context=None, mean_accuracy=None, hms=None,
                        problems=("gold hypothesis has no sub-hypotheses",))
    if pairs is None:
        return HmsScore(recall_context=None, mean_accuracy=None, hms=None,
                        problems=("a context match is unknown",))
    recall = len(pairs) / n_gold
    if n_pred == 0 or not pairs:
        return HmsScore(recall_context=recall, mean_accuracy=0.0, hms=0.0)
    accuracies = [pair_accuracy(facts[pair]) if pair in facts else None for pair in pairs]
    if any(a is None for a in accuracies):
        missing = [f"p{p}-g{g}" for (p, g), a in zip(pairs, accuracies, strict=True) if a is None]
        return HmsScore(recall_context=recall, mean_accuracy=None, hms=None,
                        problems=(f"pair facts missing or contradictory: {', '.join(missing)}",))
    mean_accuracy = sum(a for a in accuracies if a is not None) / n_pred
    return HmsScore(recall_context=recall, mean_accuracy=mean_accuracy, hms=recall * mean_accuracy)


def performance(delivered: bool, recall_context: float | None) -> float | None:
    """Co-Gym's collaboration score: 0 when nothing was delivered, else the context recall
    (None when the recall is unknown: a judge failure is never a score)."""
    if not delivered:
        return 0.0
    return recall_context
