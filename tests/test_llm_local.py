"""The real embedded model through litellm: constrained actions, determinism, replay.

These load SmolLM2-135M (about 100 MB) in process; each call is kept short.
"""

import asyncio
from typing import Literal

import pytest
from litellm.types.utils import ModelResponse
from pydantic import BaseModel, Field

from colabkit.errors import ColabkitError
from colabkit.llm import Gateway, ModelConfig, ProviderError, RetryPolicy, StructuredOutputError, local
from colabkit.llm.local import THREADS_ENV, LocalLlamaProvider, locate_gguf, shared_local_provider
from colabkit.llm.providers import litellm_module

MESSAGES = [
    {"role": "system", "content": "You are a data analyst in a team. Reply with one JSON "
                                  "object: a short thought and one action."},
    {"role": "user", "content": "Task: find the mean of column 'age' in data/people.csv. "
                                "What is your next action?"},
]


ACTION_TYPES = ("send_message", "execute_code", "finish")


class Action(BaseModel):
    type: Literal["send_message", "execute_code", "finish"]
    content: str = Field(max_length=120)


class Step(BaseModel):
    thought: str = Field(max_length=80)
    action: Action


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def model_calls(monkeypatch):
    """Counts requests that reach the embedded model (cache hits never do)."""
    provider = shared_local_provider()
    litellm_module()
    calls = []
    real = provider.completion

    def counting(*args, **kwargs):
        calls.append(kwargs.get("model"))
        return real(*args, **kwargs)

    monkeypatch.setattr(provider, "completion", counting)
    return calls


@pytest.mark.slow
def test_schema_constrained_actions_are_valid_several_times_in_a_row(model_calls):
    gateway = Gateway()
    for sample in range(3):
        step, records = run(gateway.structured(ModelConfig(), MESSAGES, Step, caller="ai",
                                               sample=sample))
        assert isinstance(step, Step) and step.action.type in ACTION_TYPES
        assert len(records) == 1 and records[0].error is None  # valid first time: no repair
        assert records[0].cost == 0.0 and records[0].completion_tokens > 0
        assert records[0].prompt_tokens > 50  # the usage of the whole prompt is reported, not 0
    assert len(model_calls) == 3


@pytest.mark.slow
def test_same_prompt_and_seed_give_identical_output_and_replay_from_cache(tmp_path, model_calls):
    config = ModelConfig(seed=42)
    gateway = Gateway(cache_dir=tmp_path)
    first, [record] = run(gateway.structured(config, MESSAGES, Step, caller="ai"))
    assert len(model_calls) == 1 and not record.suite_replay
    again, [hit] = run(gateway.structured(config, MESSAGES, Step, caller="ai"))
    assert again == first and len(model_calls) == 1
    assert hit.suite_replay and hit.attempts == 0 and hit.latency_s < 0.05
    assert hit.completion_tokens == record.completion_tokens
    assert (gateway.suite_replays, gateway.sent) == (1, 1)
    gateway.close()
    # Without the cache, the model itself repeats an answer computed from scratch (fresh KV
    # contexts). A reused context may differ in low-order bits, hence in samples: exact replay of
    # a session is the cache's guarantee, not the model's.
    fresh = [run(Gateway().structured(config, MESSAGES, Step, caller=f"fresh-{i}"))[0] for i in range(2)]
    assert fresh[0] == fresh[1]
    assert len(model_calls) == 3


@pytest.mark.slow
def test_any_gguf_path_is_a_model_and_free(model_calls):
    path = locate_gguf("smollm2-135m")
    config = ModelConfig(model=f"local/{path}", max_tokens=6, temperature=0.0)
    text, record = run(Gateway().complete(config, [{"role": "user", "content": "Say hi."}],
                                          caller="ai"))
    assert text and record.model == f"local/{path}" and record.cost == 0.0
    assert 0 < record.completion_tokens <= 6 and model_calls == [str(path)]
    assert record.prompt_tokens > 0


@pytest.mark.slow
def test_prompt_beyond_the_context_fails_once_without_retries(model_calls):
    huge = [{"role": "user", "content": "data " * 9000}]
    with pytest.raises(StructuredOutputError) as info:
        run(Gateway(retry=RetryPolicy(base_delay_s=0)).structured(ModelConfig(), huge, Step,
                                                                  caller="ai"))
    assert info.value.attempts == 1 and "ContextWindowExceeded" in info.value.records[0].error


@pytest.mark.slow
def test_each_caller_of_each_session_keeps_its_own_context():
    provider = shared_local_provider()
    session, other = Gateway(), Gateway()  # a gateway per session, as the runner makes them
    for gateway, caller in ((session, "D"), (session, "R"), (other, "D")):
        asked = [*MESSAGES[:-1], {"role": "user", "content": f"{MESSAGES[-1]['content']} ({caller})"}]  # no cache hit
        run(gateway.complete(ModelConfig(max_tokens=2), asked, caller=caller))
    [weights] = [w for w in provider._weights.values() if w.path == locate_gguf("smollm2-135m")]
    assert {f"{session.kv_scope}/D", f"{session.kv_scope}/R", f"{other.kv_scope}/D"} <= set(weights.contexts)
    assert session.kv_scope != other.kv_scope
    assert len(weights.contexts) <= provider.max_contexts


def test_missing_gguf_is_a_fatal_provider_error_naming_the_file(tmp_path):
    missing = tmp_path / "nope.gguf"
    with pytest.raises(ProviderError) as info:
        run(Gateway().structured(ModelConfig(model=f"local/{missing}"), MESSAGES, Step,
                                 caller="ai"))
    assert [r.attempts for r in info.value.records] == [1] and "nope.gguf" in str(info.value)


def test_one_decoding_thread_and_an_8bit_kv_cache_unless_the_environment_says_otherwise(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    monkeypatch.setattr(local, "_usable_cores", lambda: 2)
    provider = LocalLlamaProvider()
    assert (provider.n_threads, provider.n_threads_batch, provider.kv_type, provider.parallel) == (1, 2, "q8_0", 2)
    monkeypatch.setattr(local, "_usable_cores", lambda: 1)
    assert (LocalLlamaProvider().n_threads_batch, LocalLlamaProvider().parallel) == (1, 1)
    monkeypatch.setenv(THREADS_ENV, "2")
    assert (LocalLlamaProvider().n_threads, LocalLlamaProvider().n_threads_batch) == (2, 2)
    assert LocalLlamaProvider(n_threads=3).n_threads == 3
    monkeypatch.setenv(THREADS_ENV, "two")
    with pytest.raises(ColabkitError, match=THREADS_ENV):
        LocalLlamaProvider()


@pytest.mark.slow
def test_prefill_threads_do_not_change_the_answer():
    """The default prefills on two threads and decodes on one; that is safe only because the
    prefill's thread count leaves the numbers, hence the sampled text, exactly as they were."""
    long = [MESSAGES[0], {"role": "user", "content": MESSAGES[1]["content"] + " Column notes: " + " ".join(
        f"col{i} holds counts of hoard type {i} per century." for i in range(60))}]
    answers = []
    for prefill in (1, 2):
        provider = LocalLlamaProvider(n_threads=1, n_threads_batch=prefill)
        try:
            out = provider.completion(
                model="smollm2-135m", messages=long, api_base=None, custom_prompt_dict={},
                model_response=ModelResponse(), print_verbose=None, encoding=None, api_key=None,
                logging_obj=None, optional_params={"max_tokens": 60, "temperature": 0.7, "seed": 3},
                litellm_params={"metadata": {"kv_slot": f"prefill-{prefill}"}})
        finally:
            provider.close()
        answers.append((out.choices[0].message.content, out.usage.prompt_tokens))  # type: ignore[union-attr,attr-defined]
    assert answers[0][1] > 500 and answers[0] == answers[1]
