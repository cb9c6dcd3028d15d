"""Gateway mechanics with the scripted double: retries, repair, cache, budgets, accounting.

Fault injection uses a real litellm CustomLLM registered as a provider, so the errors take
the same path through litellm as a remote provider's would.
"""

import asyncio
import json
import time
from typing import Any, Literal

import litellm
import pytest
from helpers.scripted import rate_limited, server_error, timed_out, use_scripted
from litellm import CustomLLM
from pydantic import BaseModel, Field

from colabkit.errors import ColabkitError
from colabkit.llm import (
    Budget,
    BudgetExceeded,
    Gateway,
    LLMCallError,
    ModelConfig,
    ProviderError,
    ProviderUnavailable,
    RetryPolicy,
    StructuredOutputError,
    register_provider,
)
from colabkit.llm.gateway import _plan, _with_system_text
from colabkit.llm.providers import starting_mode
from colabkit.llm.schema import bounded_schema

FAST = RetryPolicy(max_attempts=3, base_delay_s=0.0, jitter_s=0.0)
MESSAGES = [{"role": "system", "content": "You act."}, {"role": "user", "content": "Next step?"}]
VALID = {"thought": "look at the data", "action": {"type": "execute_code", "content": "df.head()"}}


class Action(BaseModel):
    type: Literal["send_message", "execute_code", "finish"]
    content: str = Field(max_length=200)


class Step(BaseModel):
    thought: str = Field(max_length=120)
    action: Action


def scripted(name: str = "ai") -> ModelConfig:
    return ModelConfig(model=f"scripted/{name}")


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_valid_answer_is_parsed_and_recorded():
    model = use_scripted({"ai": [VALID]})
    gateway = Gateway(retry=FAST)
    step, records = run(gateway.structured(scripted(), MESSAGES, Step, caller="ai"))
    assert step == Step.model_validate(VALID)
    assert len(records) == 1 and records[0].attempts == 1 and records[0].error is None
    assert records[0].caller == "ai" and records[0].model == "scripted/ai"
    assert records[0].prompt_tokens == 4 and records[0].cost == 0.0
    assert gateway.records == records
    call = model.calls[0]
    assert call["caller"] == "ai" and call["messages"] == MESSAGES  # no instructions added
    sent = call["params"]["response_format"]["json_schema"]["schema"]
    assert sent["properties"]["thought"]["maxLength"] == 120
    assert call["params"]["max_tokens"] >= 120 + 200 + 60  # sized from the bounds
    assert call["params"]["seed"] == 0


def test_sample_index_shifts_the_seed():
    model = use_scripted({"ai": [VALID, VALID]})
    gateway = Gateway(retry=FAST)
    run(gateway.structured(ModelConfig(model="scripted/ai", seed=7), MESSAGES, Step,
                           caller="ai", sample=2))
    assert model.calls[0]["params"]["seed"] == 9


def test_invalid_then_valid_uses_one_repair_showing_the_error():
    dance = '{"thought": "x", "action": {"type": "dance", "content": ""}}'
    model = use_scripted({"ai": [dance, VALID]})
    step, records = run(Gateway(retry=FAST).structured(scripted(), MESSAGES, Step, caller="ai"))
    assert step.action.type == "execute_code"
    assert [r.error is None for r in records] == [False, True]
    assert "action.type" in records[0].error
    repair = model.calls[1]["messages"]
    assert repair[:2] == MESSAGES and repair[2]["role"] == "assistant"
    assert "action.type" in repair[3]["content"] and repair[3]["role"] == "user"


def test_malformed_json_twice_raises_with_attempts():
    model = use_scripted({"ai": ["{not json", "still {not json"]}, default=VALID)
    with pytest.raises(StructuredOutputError) as info:
        run(Gateway(retry=FAST).structured(scripted(), MESSAGES, Step, caller="ai"))
    assert info.value.attempts == 2 and len(info.value.records) == 2
    assert all(r.error and "invalid Step" in r.error for r in info.value.records)
    assert "no valid Step" in str(info.value)
    assert len(model.calls) == 2


def test_deeply_nested_garbage_is_invalid_output_not_a_crash():
    nested = '{"thought": ' + "[" * 50_000 + "]" * 50_000 + "}"
    use_scripted({"ai": [nested, nested]})
    with pytest.raises(StructuredOutputError) as info:
        run(Gateway(retry=FAST).structured(scripted(), MESSAGES, Step, caller="ai"))
    assert info.value.attempts == 2


@pytest.mark.parametrize("fault", [timed_out, rate_limited, server_error,
                                   lambda: ConnectionError("reset by peer")])
def test_transient_faults_are_retried_then_the_provider_is_unavailable_not_a_failed_step(fault):
    model = use_scripted({"ai": [fault() for _ in range(5)]})
    gateway = Gateway(retry=FAST)
    with pytest.raises(ProviderUnavailable) as info:
        run(gateway.structured(scripted(), MESSAGES, Step, caller="ai"))
    assert len(model.calls) == 3 and "provider unavailable after 3 attempt(s)" in str(info.value)
    [record] = info.value.records
    assert record.attempts == 3 and record.error and record.suite_replay is False
    assert gateway.records == [record] and gateway.sent == 1


def test_transient_fault_then_success_counts_attempts():
    use_scripted({"ai": [rate_limited(), server_error(), VALID]})
    step, [record] = run(Gateway(retry=FAST).structured(scripted(), MESSAGES, Step, caller="ai"))
    assert step.thought == "look at the data" and record.attempts == 3 and record.error is None


def test_permanent_errors_are_not_retried():
    bad = litellm.BadRequestError("bad key", model="x", llm_provider="scripted")
    model = use_scripted({"ai": [bad, VALID]})
    with pytest.raises(ProviderError) as info:
        run(Gateway(retry=FAST).structured(scripted(), MESSAGES, Step, caller="ai"))
    assert info.value.status == 400 and len(model.calls) == 1
    [record] = info.value.records
    assert record.attempts == 1 and "BadRequestError" in record.error


def test_backoff_is_exponential_and_bounded():
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=3.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    use_scripted({"ai": [rate_limited(), VALID]})
    started = time.perf_counter()
    gateway = Gateway(retry=RetryPolicy(base_delay_s=0.2, jitter_s=0.0))
    run(gateway.structured(scripted(), MESSAGES, Step, caller="ai"))
    assert time.perf_counter() - started >= 0.2


def test_retries_stop_at_the_time_bound_whatever_the_attempts_left():
    model = use_scripted({"ai": [rate_limited() for _ in range(50)]})
    policy = RetryPolicy(max_attempts=50, base_delay_s=0.1, max_delay_s=0.1, max_elapsed_s=0.35, jitter_s=0.05)
    started = time.perf_counter()
    with pytest.raises(ProviderUnavailable) as info:
        run(Gateway(retry=policy).structured(scripted(), MESSAGES, Step, caller="ai"))
    assert time.perf_counter() - started < 1.0 and 2 <= len(model.calls) <= 4
    assert info.value.records[0].attempts == len(model.calls)


def test_the_retry_policy_is_settable_from_the_environment(monkeypatch):
    monkeypatch.setenv("COLABKIT_PROVIDER_RETRY", "max_elapsed_s=2, max_attempts=3")
    assert Gateway().retry == RetryPolicy(max_elapsed_s=2, max_attempts=3)
    monkeypatch.setenv("COLABKIT_PROVIDER_RETRY", "max_elapsed=2")
    with pytest.raises(ColabkitError, match="COLABKIT_PROVIDER_RETRY='max_elapsed=2'"):
        Gateway()


class Hanging(CustomLLM):
    """A provider that never answers (a stalled connection)."""

    async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(60)


def test_hanging_provider_times_out_and_is_retried():
    register_provider("hanging", Hanging())
    config = ModelConfig(model="hanging/x", timeout=0.1)
    started = time.perf_counter()
    with pytest.raises(ProviderUnavailable) as info:
        run(Gateway(retry=RetryPolicy(max_attempts=2, base_delay_s=0)).structured(
            config, MESSAGES, Step, caller="ai"))
    assert info.value.records[0].attempts == 2 and "Timeout" in info.value.records[0].error
    assert time.perf_counter() - started < 5


def test_complete_returns_text_or_a_typed_error():
    too_long = litellm.ContextWindowExceededError("prompt too long", model="scripted", llm_provider="scripted")
    use_scripted({"ai": ["plain words", too_long, rate_limited(), rate_limited(), rate_limited()]})
    gateway = Gateway(retry=FAST)
    text, record = run(gateway.complete(scripted(), MESSAGES, caller="ai"))
    assert text == "plain words" and record.completion_tokens == 2
    with pytest.raises(LLMCallError) as info:  # this prompt's own refusal: only this call fails
        more = MESSAGES + [{"role": "user", "content": "more"}]
        run(gateway.complete(scripted(), more, caller="ai"))
    assert not isinstance(info.value, StructuredOutputError)
    assert info.value.attempts == 1 and "ContextWindowExceededError" in info.value.records[0].error
    with pytest.raises(ProviderUnavailable) as unavailable:
        run(gateway.complete(scripted(), [*MESSAGES, {"role": "user", "content": "again"}], caller="ai"))
    assert unavailable.value.records[0].attempts == 3 and "RateLimitError" in unavailable.value.records[0].error


def test_same_request_is_a_suite_replay_without_a_model_call():
    model = use_scripted({"ai": [VALID, {**VALID, "thought": "other"}]})
    gateway = Gateway(retry=FAST)
    first, _ = run(gateway.structured(scripted(), MESSAGES, Step, caller="ai"))
    again, [record] = run(gateway.structured(scripted(), MESSAGES, Step, caller="ai"))
    assert again == first and len(model.calls) == 1
    assert record.suite_replay and record.attempts == 0 and record.latency_s < 0.05
    assert (gateway.suite_replays, gateway.sent) == (1, 1)
    other, _ = run(gateway.structured(scripted(), MESSAGES, Step, caller="ai", sample=1))
    assert other.thought == "other" and gateway.sent == 2


def test_failed_calls_are_not_cached_but_invalid_answers_replay(tmp_path):
    use_scripted({"ai": [rate_limited(), "{broken", VALID]})
    gateway = Gateway(cache_dir=tmp_path, retry=RetryPolicy(max_attempts=1))
    with pytest.raises(ProviderUnavailable):
        run(gateway.structured(scripted(), MESSAGES, Step, caller="ai"))
    step, records = run(gateway.structured(scripted(), MESSAGES, Step, caller="ai"))
    assert len(records) == 2 and step.thought == "look at the data"
    gateway.close()
    model = use_scripted({}, default="{}")
    replay = Gateway(cache_dir=tmp_path)
    again, hits = run(replay.structured(scripted(), MESSAGES, Step, caller="ai"))
    assert again == step and model.calls == []
    assert [r.suite_replay for r in hits] == [True, True] and hits[0].error is not None
    assert replay.suite_replays == 2 and replay.sent == 0
    replay.close()


def test_damaged_cache_entry_is_a_miss_not_a_crash(tmp_path):
    import diskcache

    model = use_scripted({"ai": [VALID, VALID]})
    gateway = Gateway(cache_dir=tmp_path, retry=FAST)
    run(gateway.structured(scripted(), MESSAGES, Step, caller="ai"))
    with diskcache.Cache(str(tmp_path)) as raw:
        for key in list(raw):
            raw[key] = "not an answer"
    step, [record] = run(gateway.structured(scripted(), MESSAGES, Step, caller="ai"))
    assert step.thought == "look at the data" and not record.suite_replay
    assert len(model.calls) == 2 and gateway.sent == 2
    gateway.close()


def test_caches_on_one_folder_share_one_store_until_the_last_closes_and_a_recreated_folder_gets_its_own(tmp_path):
    # a batch opens a gateway per session over one folder: one diskcache set-up, not 64
    import shutil

    from colabkit.llm.cache import CachedAnswer, ResponseCache

    answer = CachedAnswer(text="t", prompt_tokens=1, completion_tokens=1, cost=0.0)
    folder = tmp_path / "llm-cache"
    first, second = ResponseCache(folder), ResponseCache(folder)
    assert first._store is second._store
    first.put("k", answer)
    first.close()
    assert second.get("k") == answer  # still open for the other user
    second.close()
    third = ResponseCache(folder)
    assert third.get("k") == answer  # the last close closed it; reopened, nothing lost
    shutil.rmtree(folder)  # deleted and made again while `third` is open (a rerun's folder)
    fourth = ResponseCache(folder)
    assert fourth._store is not third._store and fourth.get("k") is None
    fourth.put("new", answer)
    third.close()
    fourth.close()
    fifth = ResponseCache(folder)
    assert fifth.get("new") == answer  # written to the folder that exists, never to the deleted one
    fifth.close()


def test_a_disk_cache_reads_and_writes_off_the_event_loop(tmp_path, monkeypatch):
    # every session of a batch shares one event loop: the SQLite steps run in the cache's thread
    import threading

    from colabkit.llm import cache

    threads: list[str] = []
    for name in ("get", "put"):
        real = getattr(cache.ResponseCache, name)

        def spy(self, *args, _real=real):
            threads.append(threading.current_thread().name)
            return _real(self, *args)
        monkeypatch.setattr(cache.ResponseCache, name, spy)
    use_scripted({"ai": [VALID]})
    on_disk = Gateway(cache_dir=tmp_path, retry=FAST)
    run(on_disk.structured(scripted(), MESSAGES, Step, caller="ai"))
    run(on_disk.structured(scripted(), MESSAGES, Step, caller="ai"))  # the replay
    on_disk.close()
    assert len(threads) == 3 and all(name.startswith("colabkit-cache") for name in threads)
    threads.clear()
    use_scripted({"ai": [VALID]})
    run(Gateway(retry=FAST).structured(scripted(), MESSAGES, Step, caller="ai"))  # in memory: no thread
    assert threads == [threading.main_thread().name] * 2


def test_token_budget_stops_new_calls_before_they_are_made():
    model = use_scripted({"ai": [VALID] * 5})
    budget = Budget(max_tokens=10)
    gateway = Gateway(budget=budget, retry=FAST)
    run(gateway.structured(scripted(), MESSAGES, Step, caller="ai"))
    assert budget.spent_tokens >= 10
    with pytest.raises(BudgetExceeded) as info:
        more = MESSAGES + [{"role": "user", "content": "go"}]
        run(gateway.structured(scripted(), more, Step, caller="ai"))
    assert "token budget" in info.value.reason and len(model.calls) == 1


def test_experiment_budget_is_shared_by_session_gateways():
    use_scripted({"a": [VALID] * 3, "b": [VALID] * 3})
    experiment = Budget(max_tokens=20)
    first = Gateway(budget=Budget(parent=experiment), retry=FAST)
    second = Gateway(budget=Budget(max_tokens=1000, parent=experiment), retry=FAST)
    run(first.structured(scripted("a"), MESSAGES, Step, caller="ai"))
    run(second.structured(scripted("b"), MESSAGES, Step, caller="ai"))
    assert experiment.spent_tokens == sum(r.total_tokens for r in first.records + second.records)
    with pytest.raises(BudgetExceeded):
        run(first.structured(scripted("a"), [{"role": "user", "content": "x"}], Step, caller="ai"))


def test_remote_provider_path_is_costed_and_offline(socket_guard):
    config = ModelConfig(model="deepseek/deepseek-chat", extra={"mock_response": json.dumps(VALID)})
    budget = Budget(max_cost=1e-9)
    gateway = Gateway(budget=budget, retry=FAST)
    step, [record] = run(gateway.structured(config, MESSAGES, Step, caller="judge"))
    assert step.action.content == "df.head()" and record.cost > 0
    assert budget.spent_cost == record.cost
    with pytest.raises(BudgetExceeded, match="cost budget"):
        run(gateway.structured(config, MESSAGES, Step, caller="judge", sample=1))
    assert socket_guard == []


def plan_for(model: str) -> Any:
    config = ModelConfig(model=model)
    return _plan(config, Step, bounded_schema(Step), starting_mode(config))


def test_schema_support_decides_how_the_schema_is_sent():
    native = plan_for("openai/gpt-4o")
    assert native.mode == "json_schema" and native.response_format is Step and native.instructions is None
    json_mode = plan_for("ollama/llama3")
    assert json_mode.mode == "json_object" and json_mode.response_format == {"type": "json_object"}
    assert '"maxLength":120' in json_mode.instructions
    prose = plan_for("replicate/meta/llama-2-70b-chat")
    assert prose.mode == "instructions" and prose.response_format is None and "JSON" in prose.instructions


def test_instructions_join_the_system_message():
    use_scripted({}, default=VALID)
    config = ModelConfig(model="scripted/ai")
    gateway = Gateway()
    plan = plan_for("ollama/llama3")
    merged = _with_system_text(MESSAGES, plan.instructions)
    assert len(merged) == 2 and merged[0]["content"].startswith("You act.\n\nAnswer with")
    assert _with_system_text(MESSAGES[1:], "x")[0] == {"role": "system", "content": "x"}
    assert run(gateway.structured(config, MESSAGES, Step, caller="ai"))[0].thought


def test_provider_names_are_checked():
    with pytest.raises(ColabkitError, match="built-in"):
        register_provider("openai", Hanging())
    with pytest.raises(ColabkitError, match="CustomLLM"):
        register_provider("mine", object())  # type: ignore[arg-type]
