"""What the embedded judge is asked and may write (issue 21, item 4), on a judge double.

- HMS's four questions about one task share the task's context (query, datasets) as one
  prompt prefix, ahead of each question's instructions; the questions and fields are the
  same as before, only laid out differently.
- Every matched pair's variables question is asked before any relation question, so
  consecutive requests share their instructions as well.
- An empty hypothesis is decomposed by rule (no sub-hypotheses) for every judge: no request.
- A plumbing-grade judge is sanity-checked on one task, and its free-text answer fields are
  and lists bounded by its profile (`JUDGE_PROFILES`); a capable judge gets neither change.
"""

from __future__ import annotations

import asyncio
import json
from functools import partial

from helpers.judges import payload_of, use_judge_double
from test_eval_judge_prefix import common_prefix

from colabkit.evaluation.judge import JUDGE_PROFILES, Judge, judge_config
from colabkit.evaluation.metrics.hypothesis import (
    CONTEXT_MATCH,
    DECOMPOSE,
    RELATION,
    VARIABLES,
    judge_hypotheses,
    task_fields,
)
from colabkit.evaluation.reliability import PLUMBING_SANITY_TASKS, run_sanity_check
from colabkit.llm import Gateway, RetryPolicy
from colabkit.tasks import load_tasks

SUITE = load_tasks()
TASK = SUITE.get("demo_archaeology/0/0")


def judge(grade: str = "capable") -> Judge:
    the_judge = Judge(Gateway(retry=RetryPolicy(max_attempts=1, base_delay_s=0)), judge_config("judgedouble/perfect"))
    the_judge.grade = grade  # type: ignore[assignment]  # the double stands in for the embedded model
    return the_judge


def test_hms_questions_about_one_task_share_its_context_before_their_instructions():
    context = task_fields(TASK)
    sub = {"text": "t", "context": "c", "variables": ["v"], "relation": "r"}
    asked = [(DECOMPOSE, {**context, "hypothesis": "Axes peak in 1200 BCE."}),
             (CONTEXT_MATCH, {**context, "gold_context": "1200 BCE", "predicted_context": "12th century BCE"}),
             (VARIABLES, {**context, "gold_sub_hypothesis": sub, "predicted_sub_hypothesis": sub}),
             (RELATION, {**context, "gold_sub_hypothesis": sub, "predicted_sub_hypothesis": sub})]
    rendered = [prompt.render(fields) for prompt, fields in asked]
    texts = ["\n".join(m["content"] for m in messages) for messages in rendered]
    shared = common_prefix(texts)
    assert TASK.query in shared and TASK.datasets[0].description in shared  # the whole context is shared
    for (prompt, fields), messages, text in zip(asked, rendered, texts, strict=True):
        assert prompt.instructions in text[len(shared):]  # each question's own instructions follow it
        assert payload_of(messages) == json.loads(json.dumps(fields))  # the same fields, nothing lost
        assert prompt.version == 2  # the layout changed the text: a new version


def test_every_pairs_variables_question_comes_before_any_relation_question():
    double = use_judge_double()
    gold = "Axes peak in 1200 BCE. Swords rise after 1100 BCE."
    scripts_decompose = {"sub_hypotheses": [
        {"text": f"claim {i}", "context": f"ctx {i}", "variables": ["v"], "relation": "r"} for i in range(2)]}
    double.scripts = {"hms_decompose": [scripts_decompose, scripts_decompose]}
    the_judge = judge()
    judged = asyncio.run(judge_hypotheses(partial(the_judge.verdict, repeat=0), TASK, gold, gold + " "))
    asked = [c["prompt_id"] for c in double.calls if c["prompt_id"] in ("hms_variables", "hms_relation")]
    assert asked == ["hms_variables", "hms_variables", "hms_relation", "hms_relation"]
    assert [(f.pred, f.gold) for f in judged.facts] == [(0, 0), (1, 1)]  # facts still per pair, in order
    assert judged.score.hms == 1.0


def test_an_empty_hypothesis_has_no_sub_hypotheses_by_rule_without_asking():
    # A judge that would invent claims for an empty text is never asked about one.
    double = use_judge_double({"hms_decompose": [
        {"sub_hypotheses": [{"text": "gold", "context": "c", "variables": ["v"], "relation": "r"}]},
        {"sub_hypotheses": [{"text": "invented", "context": "c", "variables": ["v"], "relation": "r"}]}]})
    the_judge = judge()
    judged = asyncio.run(judge_hypotheses(partial(the_judge.verdict, repeat=0), TASK, "gold", "  \n"))
    assert [c["payload"]["hypothesis"] for c in double.asked("hms_decompose")] == ["gold"]
    assert judged.prediction == [] and judged.score.hms == 0.0 and judged.score.recall_context == 0.0
    assert not any("empty_decomposition" in f for f in judged.flags)  # an empty text is not a judge failure


def sanity_tasks(grade: str, tmp_path) -> set[str]:
    use_judge_double()
    (tmp_path / grade).mkdir()
    with_gold = [t for t in SUITE.ids if SUITE.gold_for(t)][:3]
    assert len(with_gold) == 3
    check = asyncio.run(run_sanity_check(judge(grade), SUITE, with_gold, tmp_path / grade, n_tasks=3))
    assert check.passed is True  # the whole check ran (all its cases) either way
    return {c.task_id for c in check.cases}


def test_a_plumbing_judge_is_sanity_checked_on_one_task_a_capable_one_on_all_asked(tmp_path):
    assert len(sanity_tasks("plumbing", tmp_path)) == PLUMBING_SANITY_TASKS == 1
    assert len(sanity_tasks("capable", tmp_path)) == 3


def bounds_in(schema: dict, kind: str, key: str) -> list[int]:
    """Every `key` bound of the `kind` nodes in a JSON schema (maxLength of strings, ...)."""
    found: list[int] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == kind and key in node:
                found.append(node[key])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return found


def asked_schema(grade: str) -> tuple[dict, int]:
    double = use_judge_double()
    the_judge = judge(grade)
    judged = asyncio.run(judge_hypotheses(partial(the_judge.verdict, repeat=0), TASK, "Axes peak.", "Axes peak."))
    assert judged.score.hms == 1.0  # the answers validate either way
    call = double.asked("hms_decompose")[0]
    return call["response_format"]["json_schema"]["schema"], call["max_tokens"]


def test_a_plumbing_judges_answers_are_bounded_by_its_profile_a_capable_judges_are_not():
    plumbing, plumbing_tokens = asked_schema("plumbing")
    capable, capable_tokens = asked_schema("capable")
    bounds = JUDGE_PROFILES["plumbing"]
    assert bounds is not None and JUDGE_PROFILES["capable"] is None
    texts, lists = bounds_in(plumbing, "string", "maxLength"), bounds_in(plumbing, "array", "maxItems")
    assert texts and max(texts) == bounds.text_chars and lists and max(lists) == bounds.list_items
    own_texts, own_lists = bounds_in(capable, "string", "maxLength"), bounds_in(capable, "array", "maxItems")
    assert max(own_texts) > bounds.text_chars and max(own_lists) > bounds.list_items  # the schema's own
    assert len(own_texts) == len(texts) and len(own_lists) == len(lists)  # the same fields
    assert plumbing_tokens < capable_tokens


def test_the_plumbing_judges_answer_bounds_are_part_of_its_scorers_ids(monkeypatch):
    # Stored scores are reused by id: scores written under other answer bounds must not be.
    from colabkit.evaluation import scorer_id, scorers_for
    from colabkit.evaluation.judge import AnswerBounds
    from colabkit.llm import DEFAULT_MODEL, ModelConfig

    performance, work = scorers_for(["performance", "work"])
    plumbing, capable = judge_config(DEFAULT_MODEL), ModelConfig(model="judgedouble/x")
    before = {name: scorer_id(performance, judge, 1) for name, judge in (("plumbing", plumbing), ("capable", capable))}
    rule_based = scorer_id(work, plumbing, 1)
    monkeypatch.setitem(JUDGE_PROFILES, "plumbing", AnswerBounds(text_chars=200, list_items=3))
    assert scorer_id(performance, plumbing, 1) != before["plumbing"]
    assert scorer_id(performance, capable, 1) == before["capable"]  # no bounds: its ids did not move
    assert scorer_id(work, plumbing, 1) == rule_based  # asks no judge
