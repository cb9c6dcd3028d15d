"""The judge's questions of one batch share a prompt prefix: instructions, then the fields
every question of the batch has in common (a session's cells, its persona cards), then the
item's own fields. A lone question is rendered in key order, exactly as before."""

from __future__ import annotations

import json

from colabkit.evaluation.judge import JudgePrompt
from colabkit.evaluation.metrics.process import shared_fields

PROMPT = JudgePrompt(id="profile", version=1, instructions="Who wrote this?")
CARDS = [{"id": "D", "name": "Data Analyst", "card": "careful " * 50}, {"id": "R", "name": "Researcher", "card": "x"}]


def common_prefix(texts: list[str]) -> str:
    first = texts[0]
    end = next((i for i in range(len(first)) if any(i >= len(t) or t[i] != first[i] for t in texts[1:])), len(first))
    return first[:end]


def items() -> list[dict]:
    return [{"persona_cards": CARDS, "contribution": {"kind": "chat message", "content": text},
             "answer_with_one_of": ["D", "R", "generic"]} for text in ("first", "second", "third")]


def test_a_lone_question_is_rendered_in_key_order_as_before():
    [fields] = items()[:1]
    before = json.dumps(fields, ensure_ascii=False, indent=1, sort_keys=True, default=str)
    assert PROMPT.render(fields)[1]["content"] == before
    assert shared_fields([fields]) == frozenset()


def test_questions_of_a_batch_share_the_instructions_and_common_fields_as_a_prefix():
    batch = items()
    shared = shared_fields(batch)
    assert shared == {"persona_cards", "answer_with_one_of"}
    rendered = ["\n".join(m["content"] for m in PROMPT.render(f, shared)) for f in batch]
    common = common_prefix(rendered)
    assert '"careful careful' in common and '"generic"' in common  # every card and the answer list
    assert common.endswith('"contribution": {\n  "content": "')  # the item's own fields come last
    before = ["\n".join(m["content"] for m in PROMPT.render(f)) for f in batch]  # key order: cards last
    assert len(common_prefix(before)) < len(common) / 4
    assert [json.loads(PROMPT.render(f, shared)[1]["content"]) for f in batch] == batch  # same content
