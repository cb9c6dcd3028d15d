"""The embedded provider's contexts under concurrency, with llama.cpp's `Llama` replaced.

These test the locking, not the model (tests/test_llm_local.py runs the real one): two
callers decode at the same time, one caller's calls never overlap, and evicting a context
for a new caller never closes one in the middle of a call.
"""

import threading
import time
from typing import ClassVar

import llama_cpp
import pytest
from litellm.types.utils import ModelResponse

from colabkit.llm.local import LocalLlamaProvider


class FakeLlama:
    """Stands in for `llama_cpp.Llama`: records who is inside a call; `gate` can hold a call."""

    inside: ClassVar[dict[int, int]] = {}
    peak_together = 0
    barrier: threading.Barrier | None = None
    gate: threading.Event | None = None
    lock = threading.Lock()

    def __init__(self, **_: object) -> None:
        self.closed = False

    def create_chat_completion(self, messages: list, **_: object) -> dict:
        assert not self.closed, "a call ran on a closed context"
        cls = type(self)
        with cls.lock:
            cls.inside[id(self)] = cls.inside.get(id(self), 0) + 1
            assert cls.inside[id(self)] == 1, "two calls overlapped on one context"
            cls.peak_together = max(cls.peak_together, sum(cls.inside.values()))
        try:
            if cls.barrier is not None:
                cls.barrier.wait()
            if cls.gate is not None and messages[0]["content"] == "hold":
                cls.gate.wait(5)
            time.sleep(0.01)
        finally:
            with cls.lock:
                cls.inside[id(self)] -= 1
        return {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(llama_cpp, "Llama", FakeLlama)
    FakeLlama.inside, FakeLlama.peak_together, FakeLlama.barrier, FakeLlama.gate = {}, 0, None, None
    return FakeLlama


def call(provider: LocalLlamaProvider, slot: str, content: str = "hi") -> str:
    response = provider.completion(
        model="smollm2-135m", messages=[{"role": "user", "content": content}], api_base=None,
        custom_prompt_dict={}, model_response=ModelResponse(), print_verbose=None, encoding=None,
        api_key=None, logging_obj=None, optional_params={}, litellm_params={"metadata": {"kv_slot": slot}})
    return str(response.choices[0].message.content)  # type: ignore[union-attr]


def threads(*targets) -> None:
    """Run `targets` at once; an exception (a failed assertion too) in any of them fails the test
    (a thread's exception would otherwise only be printed as a warning)."""
    errors: list[BaseException] = []

    def guarded(target):
        def run() -> None:
            try:
                target()
            except BaseException as exc:
                errors.append(exc)
        return run

    started = [threading.Thread(target=guarded(target)) for target in targets]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join(10)
        assert not thread.is_alive()
    if errors:
        raise errors[0]


def test_a_failure_inside_a_worker_thread_fails_the_test():
    def fails() -> None:
        raise AssertionError("two calls overlapped on one context")

    with pytest.raises(AssertionError, match="overlapped"):
        threads(lambda: None, fails)


def test_two_callers_decode_at_the_same_time_up_to_the_parallel_limit(fake):
    provider = LocalLlamaProvider(n_threads=1)
    provider.parallel = 2
    fake.barrier = threading.Barrier(2, timeout=5)  # passes only if both calls are inside at once
    results: list[str] = []
    threads(lambda: results.append(call(provider, "1/D")), lambda: results.append(call(provider, "1/R")))
    assert results == ["ok", "ok"] and fake.peak_together == 2


def test_one_callers_calls_never_overlap_though_slots_are_free(fake):
    provider = LocalLlamaProvider(n_threads=1)
    provider.parallel = 4  # the compute slots would let all four in: only the context's lock keeps them apart
    threads(*[lambda: call(provider, "1/ai") for _ in range(4)])
    assert fake.peak_together == 1  # and FakeLlama fails the calling thread on any overlap


def test_the_parallel_limit_holds_across_callers(fake):
    provider = LocalLlamaProvider(n_threads=1)
    provider.parallel = 2
    threads(*[lambda slot=slot: call(provider, slot) for slot in ("1/ai", "1/D", "1/R", "2/ai", "2/D")])
    assert fake.peak_together == 2


def test_eviction_skips_a_context_in_the_middle_of_a_call(fake):
    provider = LocalLlamaProvider(n_threads=1, max_contexts=1)
    provider.parallel = 2
    fake.gate = threading.Event()
    held = threading.Thread(target=lambda: call(provider, "1/ai", "hold"))
    held.start()
    while not fake.inside:
        time.sleep(0.01)
    assert call(provider, "1/D") == "ok"  # opened beside the busy context instead of closing it
    [weights] = provider._weights.values()
    busy = weights.contexts["1/ai"]
    assert not busy.closed and not busy.llm.closed
    fake.gate.set()
    held.join(5)
    assert call(provider, "2/R") == "ok"  # now idle contexts are evicted down to the limit
    assert list(weights.contexts) == ["2/R"] and busy.closed and busy.llm.closed
