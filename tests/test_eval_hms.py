"""HMS and Performance: the pure arithmetic by hand, then the judged pipeline on scripted answers.

Every expected value is worked out in the test from the judged facts, following
DiscoveryBench's algorithm: greedy context matching, variable F1 from the judged set sizes,
relation A 1 / B 0.5 / C 0, HMS = recall_context x (sum of pair accuracies / predicted
sub-hypotheses), Performance = delivered x recall_context.
"""

from __future__ import annotations

import asyncio
from functools import partial

import pytest
from helpers.judges import use_judge_double

from colabkit.evaluation import (
    PairFacts,
    VariableCounts,
    greedy_pairs,
    hms_from_facts,
    pair_accuracy,
    performance,
    variable_f1,
)
from colabkit.evaluation.judge import Judge, judge_config
from colabkit.evaluation.metrics.hypothesis import judge_hypotheses
from colabkit.llm import Gateway, RetryPolicy
from colabkit.tasks import load_tasks

TASK = load_tasks().get("demo_archaeology/0/0")


def counts(gold: int, pred: int, shared: int) -> VariableCounts:
    return VariableCounts(size_gold=gold, size_pred=pred, intersection=shared)


# ---- pure arithmetic ------------------------------------------------------------------------

def test_variable_f1_from_set_sizes_including_edge_cases():
    # P = 2/4, R = 2/3 -> F1 = 2 * (1/2)(2/3) / (1/2 + 2/3) = (2/3) / (7/6) = 4/7
    assert variable_f1(counts(3, 4, 2)) == pytest.approx(4 / 7)
    assert variable_f1(counts(2, 2, 2)) == 1.0
    assert variable_f1(counts(3, 2, 0)) == 0.0  # zero intersection: nothing shared
    assert variable_f1(counts(0, 2, 0)) == 0.0  # gold names no variable
    assert variable_f1(counts(2, 0, 0)) == 0.0  # prediction names none
    assert variable_f1(counts(0, 0, 0)) == 0.0  # neither: no division by zero, no credit
    with pytest.raises(ValueError, match="3 shared variables"):
        variable_f1(counts(2, 5, 3))  # more shared than the gold set holds: contradictory


def test_pair_accuracy_is_f1_times_relation_and_unknown_when_a_fact_is_missing():
    assert pair_accuracy(PairFacts(pred=0, gold=0, variables=counts(2, 2, 2), relation="A")) == 1.0
    assert pair_accuracy(PairFacts(pred=0, gold=0, variables=counts(2, 2, 2), relation="B")) == 0.5
    assert pair_accuracy(PairFacts(pred=0, gold=0, variables=counts(2, 2, 2), relation="C")) == 0.0
    assert pair_accuracy(PairFacts(pred=0, gold=0, variables=counts(3, 4, 2), relation="B")) == pytest.approx(2 / 7)
    assert pair_accuracy(PairFacts(pred=0, gold=0, variables=None, relation="A")) is None
    assert pair_accuracy(PairFacts(pred=0, gold=0, variables=counts(1, 1, 1), relation=None)) is None
    assert pair_accuracy(PairFacts(pred=0, gold=0, variables=counts(1, 1, 2), relation="A")) is None


def test_greedy_matching_takes_the_first_uncovered_gold_in_order():
    # p0 matches g0 and g1 -> takes g0; p1 matches only g0 (covered) then g1 -> takes g1; p2 none.
    table = {(0, 0): True, (1, 0): True, (1, 1): True, (2, 0): False, (2, 1): False}
    # p1 never asks about g0 (covered), so (1, 0) is unused; p2 skips covered g0 and g1.
    assert greedy_pairs(3, 2, table) == [(0, 0), (1, 1)]
    assert greedy_pairs(2, 2, {(0, 0): False, (0, 1): False, (1, 0): False, (1, 1): False}) == []
    assert greedy_pairs(1, 2, {(0, 0): None}) is None  # the judge could not say: unknown
    assert greedy_pairs(1, 2, {(0, 0): False}) is None  # (0, 1) never judged: unknown


def test_hms_and_performance_from_facts():
    # 3 gold, 2 predicted; p0-g0 (F1 1, A -> 1.0), p1-g2 (F1 4/7, B -> 2/7).
    facts = {(0, 0): PairFacts(pred=0, gold=0, variables=counts(2, 2, 2), relation="A"),
             (1, 2): PairFacts(pred=1, gold=2, variables=counts(3, 4, 2), relation="B")}
    score = hms_from_facts(3, 2, [(0, 0), (1, 2)], facts)
    assert score.recall_context == pytest.approx(2 / 3)
    assert score.mean_accuracy == pytest.approx((1.0 + 2 / 7) / 2)  # 9/14
    assert score.hms == pytest.approx(2 / 3 * 9 / 14)  # 3/7
    assert performance(True, score.recall_context) == pytest.approx(2 / 3)
    assert performance(False, score.recall_context) == 0.0
    assert performance(True, None) is None

    # An unmatched extra prediction dilutes the mean: 1 gold, 2 predicted, one perfect pair.
    one = {(0, 0): PairFacts(pred=0, gold=0, variables=counts(1, 1, 1), relation="A")}
    assert hms_from_facts(1, 2, [(0, 0)], one).hms == pytest.approx(1.0 * (1.0 / 2))
    # No match: recall 0, HMS 0.
    assert hms_from_facts(2, 1, [], {}).model_dump(exclude={"problems"}) == \
        {"recall_context": 0.0, "mean_accuracy": 0.0, "hms": 0.0}
    # Nothing predicted: recall 0, mean accuracy 0 (not 0/0).
    assert hms_from_facts(1, 0, [], {}).hms == 0.0
    # Unknown matching or a missing pair fact: missing, never a number.
    assert hms_from_facts(1, 1, None, {}).hms is None
    broken = {(0, 0): PairFacts(pred=0, gold=0, variables=None, relation="A")}
    assert hms_from_facts(1, 1, [(0, 0)], broken).hms is None
    assert hms_from_facts(1, 1, [(0, 0)], broken).recall_context == 1.0  # recall is still known
    assert hms_from_facts(0, 1, [], {}).recall_context is None  # gold without sub-hypotheses


# ---- the judged pipeline on scripted answers ------------------------------------------------

def sub(context: str, text: str = "claim", variables: tuple[str, ...] = ("x",)) -> dict:
    return {"text": text, "context": context, "variables": list(variables), "relation": "r"}


def decomposition(*subs: dict) -> dict:
    return {"sub_hypotheses": list(subs)}


def run(scripts: dict, gold: str = "gold hypothesis", prediction: str = "predicted hypothesis"):
    double = use_judge_double(scripts, fallback=None)
    gateway = Gateway(retry=RetryPolicy(max_attempts=1, base_delay_s=0))
    judge = Judge(gateway, judge_config("judgedouble/scripted"))
    judged = asyncio.run(judge_hypotheses(partial(judge.verdict, repeat=0), TASK, gold, prediction))
    return judged, double


def var(gold: int, pred: int, shared: int) -> dict:
    return {"explanation": "counted", "size_gold": gold, "size_pred": pred, "intersection": shared}


def rel(option: str) -> dict:
    return {"explanation": "compared", "option": option}


def test_exact_and_judged_context_matches_with_variable_f1_and_relations():
    scripts = {
        # gold: g0 "1200-1100 BCE", g1 "Bronze Age hoards"; prediction: p0 exact, p1 judged, p2 none
        "hms_decompose": [decomposition(sub("1200-1100 BCE"), sub("Bronze Age hoards")),
                          decomposition(sub("1200-1100 bce "), sub("hoards of the Bronze Age"), sub("Roman era"))],
        # p0 vs g0 is exact (case and spacing ignored): no judge call. p1 vs g1 judged a match.
        # p2: g0 and g1 are covered, so nothing is asked.
        "hms_context_match": [{"reason": "same scope", "match": True}],
        "hms_variables": [var(2, 2, 2), var(3, 4, 2)],
        "hms_relation": [rel("A"), rel("B")],
    }
    judged, double = run(scripts)
    assert judged.pairs == [(0, 0), (1, 1)]
    assert len(double.asked("hms_context_match")) == 1
    assert double.asked("hms_context_match")[0]["payload"]["predicted_context"] == "hoards of the Bronze Age"
    # recall = 2/2 = 1; accuracies: 1 x F1(2,2,2)=1 x A=1 -> 1; 1 x F1(3,4,2)=4/7 x B=0.5 -> 2/7
    # mean over 3 predicted sub-hypotheses = (1 + 2/7) / 3 = 3/7; HMS = 1 x 3/7
    assert judged.score.recall_context == 1.0
    assert judged.score.mean_accuracy == pytest.approx(3 / 7)
    assert judged.score.hms == pytest.approx(3 / 7)
    assert judged.flags == []
    # variables and relation are judged on the matched sub-hypotheses, not the whole texts
    asked = double.asked("hms_variables")[1]["payload"]
    assert asked["predicted_sub_hypothesis"]["context"] == "hoards of the Bronze Age"
    assert asked["gold_sub_hypothesis"]["context"] == "Bronze Age hoards"


def test_no_match_and_relation_c_score_zero():
    no_match = {"hms_decompose": [decomposition(sub("1200 BCE")), decomposition(sub("Roman era"))],
                "hms_context_match": [{"reason": "different", "match": False}]}
    judged, double = run(no_match)
    assert (judged.score.recall_context, judged.score.hms) == (0.0, 0.0)
    assert double.asked("hms_variables") == [] and double.asked("hms_relation") == []

    relation_c = {"hms_decompose": [decomposition(sub("1200 BCE")), decomposition(sub("1200 BCE"))],
                  "hms_variables": [var(1, 1, 1)], "hms_relation": [rel("C")]}
    judged, _ = run(relation_c)
    # matched (recall 1) but 1 x F1 1 x C 0 = 0 -> HMS 0; Performance would be 1 (recall only)
    assert (judged.score.recall_context, judged.score.hms) == (1.0, 0.0)


@pytest.mark.parametrize(("variables", "expected_hms"), [
    (var(2, 3, 0), 0.0),  # zero intersection: F1 0
    (var(0, 0, 0), 0.0),  # zero sizes: F1 0, no division by zero
    (var(1, 2, 1), 2 / 3),  # P 1/2, R 1 -> F1 2/3; relation A -> 2/3
])
def test_variable_f1_edge_cases_through_the_judge(variables, expected_hms):
    scripts = {"hms_decompose": [decomposition(sub("c")), decomposition(sub("c"))],
               "hms_variables": [variables], "hms_relation": [rel("A")]}
    judged, _ = run(scripts)
    assert judged.score.hms == pytest.approx(expected_hms)
    assert judged.flags == []


@pytest.mark.parametrize(("scripts", "flag"), [
    # relation answered with an option outside A/B/C twice (answer, then repair): missing
    ({"hms_relation": ["{\"explanation\": \"x\", \"option\": \"D\"}", "D again"]}, "relation p0:g0: judge_invalid"),
    # variables not JSON, twice
    ({"hms_variables": ["three or so", "still not json"]}, "variables p0:g0: judge_invalid"),
    # variables JSON but contradictory (intersection above both sizes)
    ({"hms_variables": [var(1, 1, 2)]}, "intersection larger than a set"),
    # the context judge fails in transport (no answer at all)
    ({"hms_context_match": [RuntimeError("boom")]}, "context p0:g0: judge_error"),
    # decomposition of the gold is garbage
    ({"hms_decompose": ["{\"sub_hypotheses\": \"nope\"}", "nope"]}, "decompose gold: judge_invalid"),
])
def test_parse_failures_leave_hms_missing_and_flagged(scripts, flag):
    base = {"hms_decompose": [decomposition(sub("1200 BCE")), decomposition(sub("around 1200 BCE"))],
            "hms_context_match": [{"reason": "same", "match": True}],
            "hms_variables": [var(1, 1, 1)], "hms_relation": [rel("A")]}
    if "hms_decompose" in scripts:  # the gold's two failed answers come first, then the prediction
        scripts = {"hms_decompose": [*scripts["hms_decompose"], decomposition(sub("x"))]}
    judged, _ = run({**base, **scripts})
    assert judged.score.hms is None
    assert any(flag in f for f in judged.flags), judged.flags
    assert all(j.flag is None or (j.label is None and j.score is None) for j in judged.judgements)


def test_a_non_empty_hypothesis_decomposed_into_nothing_scores_0_with_a_flag():
    scripts = {"hms_decompose": [decomposition(sub("1200-1100 BCE")), decomposition()]}
    judged, _ = run(scripts, prediction="Axes peak in the 12th century BCE.")
    assert judged.score.hms == 0.0 and judged.score.recall_context == 0.0  # upstream's arithmetic stands
    assert [f for f in judged.flags if f.startswith("hms:empty_decomposition")] == [
        "hms:empty_decomposition(prediction): a non-empty hypothesis has no sub-hypotheses"]
    # an empty hypothesis decomposed into nothing is no surprise: no flag
    empty, _ = run({"hms_decompose": [decomposition(sub("1200-1100 BCE")), decomposition()]}, prediction="  ")
    assert empty.score.hms == 0.0 and not any(f.startswith("hms:empty_decomposition") for f in empty.flags)
