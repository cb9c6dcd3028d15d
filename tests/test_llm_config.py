"""ModelConfig identity, schema bounds and reply parsing: the pure parts of the gateway."""

from typing import Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from colabkit.llm import Budget, BudgetExceeded, CallRecord, ModelConfig
from colabkit.llm.schema import (
    DEFAULT_MAX_STRING,
    SLACK_TOKENS,
    bounded_schema,
    parse_as,
    token_bound,
)


class Action(BaseModel):
    type: Literal["send_message", "execute_code", "finish"]
    content: str = Field(max_length=400)


class Step(BaseModel):
    thought: str = Field(max_length=240)
    action: Action


class Loose(BaseModel):
    note: str
    tags: list[str]


def test_identity_is_stable_and_known():
    config = ModelConfig()
    assert config.identity() == ModelConfig().identity()
    assert config.identity() == ModelConfig.model_validate(config.model_dump()).identity()
    assert len(config.identity()) == 64 and int(config.identity(), 16) >= 0
    assert config.model == "local/smollm2-135m" and config.seed == 0
    assert hash(config) == hash(ModelConfig())
    reordered = ModelConfig(extra={"b": 2, "a": 1})
    assert ModelConfig(extra={"a": 1, "b": 2}).identity() == reordered.identity()


@pytest.mark.parametrize("change", [
    {"model": "deepseek/deepseek-chat"}, {"temperature": 0.0}, {"max_tokens": 300},
    {"seed": 1}, {"seed": None}, {"api_base": "http://127.0.0.1:8000/v1"}, {"timeout": 30.0},
    {"extra": {"top_p": 0.9}},
])
def test_identity_changes_with_every_field(change):
    assert ModelConfig(**change).identity() != ModelConfig().identity()


def test_output_identity_ignores_only_the_timeout():
    assert ModelConfig(timeout=5).output_identity() == ModelConfig().output_identity()
    assert ModelConfig(seed=3).output_identity() != ModelConfig().output_identity()


def test_config_is_frozen_and_strict():
    with pytest.raises(ValidationError, match="frozen"):
        ModelConfig().seed = 4  # type: ignore[misc]
    with pytest.raises(ValidationError, match="modle"):
        ModelConfig(modle="typo")  # type: ignore[call-arg]


def test_bounded_schema_keeps_model_bounds_and_bounds_the_rest():
    step = bounded_schema(Step)
    assert step["properties"]["thought"]["maxLength"] == 240
    assert step["$defs"]["Action"]["properties"]["content"]["maxLength"] == 400
    assert "maxLength" not in step["$defs"]["Action"]["properties"]["type"]
    loose = bounded_schema(Loose)
    assert loose["properties"]["note"]["maxLength"] == DEFAULT_MAX_STRING
    assert loose["properties"]["tags"]["maxItems"] > 0
    assert loose["properties"]["tags"]["items"]["maxLength"] == DEFAULT_MAX_STRING


def test_token_bound_covers_every_character_plus_slack():
    bound = token_bound(bounded_schema(Step))
    assert bound >= 240 + 400 + SLACK_TOKENS
    assert bound < 240 + 400 + SLACK_TOKENS + 150


def test_parse_accepts_fences_prose_and_raw_newlines():
    body = '{"thought": "t", "action": {"type": "finish", "content": "a\nb"}}'
    raw = f"Here it is:\n```json\n{body}\n```"
    step = parse_as(Step, raw)
    assert step.action.content == "a\nb"


@pytest.mark.parametrize("text, fragment", [
    ('{"thought": "t"}', "action"),
    ('{"thought": "t", "action": {"type": "dance", "content": ""}}', "action.type"),
    ("not json", "<root>"),
    ('{"thought": "' + "x" * 241 + '", "action": {"type": "finish", "content": ""}}', "thought"),
])
def test_parse_errors_name_the_problem(text, fragment):
    with pytest.raises(ValueError, match=fragment.replace(".", r"\.")):
        parse_as(Step, text)


def test_budget_parent_chain_charges_and_refuses():
    experiment = Budget(max_tokens=100)
    session = Budget(max_cost=1.0, parent=experiment)
    session.check()
    session.charge(CallRecord(caller="ai", model="m", prompt_tokens=60, completion_tokens=40,
                              cost=0.5))
    assert experiment.spent_tokens == 100 and session.spent_cost == 0.5
    with pytest.raises(BudgetExceeded, match="token budget"):
        session.check()
    assert Budget(max_cost=0.0).exceeded().startswith("cost budget")
