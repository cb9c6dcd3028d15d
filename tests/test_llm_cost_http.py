"""Cost you can trust, over real HTTP: paid cost is the provider's usage priced by litellm,
the provider's cached prompt tokens are recorded, the suite's replays cost nothing, and a
batch's session and judge spend add up to its total.

The server (`helpers.caching_provider`) answers like DeepSeek's API and reports the prefix
it has seen before as cache hits, in DeepSeek's fields or in OpenAI's. litellm reaches it
through `DEEPSEEK_API_BASE`, as it would reach api.deepseek.com. Expected prices are
computed here from litellm's price table (input, cache-read and output rates per token),
not by litellm's cost function, so the test checks the gateway's arithmetic too.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
import yaml
from helpers.caching_provider import KEY, CachingProvider
from helpers.loopback import serving_as_deepseek
from pydantic import BaseModel, Field

from colabkit.evaluation import score_results
from colabkit.llm import Budget, CallRecord, Gateway, ModelConfig, RetryPolicy, Spend
from colabkit.runner import load_experiment, run_experiment
from colabkit.runner.pipeline import run_spend, spend_lines
from colabkit.session import Event
from colabkit.session.totals import upgrade_totals
from colabkit.store import SessionRecord, load_events, load_sessions

MODEL = "deepseek/deepseek-chat"
FAST = RetryPolicy(max_attempts=2, base_delay_s=0.0)
FINISH = {"thought": "done", "action": "finish", "content": "checked", "to": ""}
SHARED = "Background for every question: " + " ".join(f"fact{i}" for i in range(300))


class Answer(BaseModel):
    verdict: str = Field(max_length=40)


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    yield from serving_as_deepseek(monkeypatch, CachingProvider, KEY)


def priced(usage: dict[str, Any]) -> float:
    """The provider's usage at litellm's listed rates, cached prompt tokens at the cache rate."""
    info = litellm.get_model_info(MODEL)
    cached = usage.get("prompt_cache_hit_tokens", usage.get("prompt_tokens_details", {}).get("cached_tokens", 0))
    return ((usage["prompt_tokens"] - cached) * info["input_cost_per_token"]
            + cached * info["cache_read_input_token_cost"] + usage["completion_tokens"] * info["output_cost_per_token"])


def ask(gateway: Gateway, question: str) -> list[CallRecord]:
    messages = [{"role": "system", "content": SHARED}, {"role": "user", "content": question}]
    return asyncio.run(gateway.structured(ModelConfig(model=MODEL), messages, Answer, caller="judge"))[1]


@pytest.mark.parametrize("usage_format", ["deepseek", "openai"])
def test_paid_cost_is_the_providers_usage_priced_by_litellm_with_its_cache_hits(provider, usage_format):
    server = provider({"verdict": "clean"}, usage_format=usage_format)
    gateway = Gateway(retry=FAST)
    [first] = ask(gateway, "Is the data clean? Answer in json.")
    [second] = ask(gateway, "Is the data complete? Answer in json.")
    assert first.provider_cached_tokens == 0 and second.provider_cached_tokens > len(SHARED.split())
    assert second.provider_cached_tokens == (server.usages[1].get("prompt_cache_hit_tokens")
                                             or server.usages[1]["prompt_tokens_details"]["cached_tokens"])
    for record, usage in zip((first, second), server.usages, strict=True):
        assert record.prompt_tokens == usage["prompt_tokens"] and not record.suite_replay
        assert record.cost == pytest.approx(priced(usage), rel=1e-9) and record.cost > 0
    full_rate = priced({**server.usages[1], "prompt_cache_hit_tokens": 0})
    assert second.cost < 0.5 * full_rate  # the cache rate applied: most of the prompt was a hit
    spend = Spend.of(gateway.records)
    assert spend.paid_cost == pytest.approx(first.cost + second.cost)
    assert spend.provider_cached_tokens == second.provider_cached_tokens and spend.suite_replays == 0


def test_a_suite_replay_costs_nothing_now_and_keeps_its_original_cost_apart(provider, tmp_path):
    server = provider({"verdict": "clean"})
    paid = Gateway(cache_dir=tmp_path, retry=FAST)
    [original] = ask(paid, "Is the data clean? Answer in json.")
    paid.close()
    budget = Budget()
    replaying = Gateway(cache_dir=tmp_path, retry=FAST, budget=budget)
    [replay] = ask(replaying, "Is the data clean? Answer in json.")
    replaying.close()
    assert len(server.requests) == 1  # nothing was sent for the replay
    assert replay.suite_replay and replay.cost == 0.0 and replay.attempts == 0
    assert replay.replayed_cost == original.cost > 0 and replay.prompt_tokens == original.prompt_tokens
    assert budget.spent_cost == original.cost  # budgets see the answer's cost, so a replay ends where the run did
    spend = Spend.of([original, replay])
    assert (spend.paid_cost, spend.suite_replays, spend.replayed_cost) == (original.cost, 1, original.cost)
    assert "1 answers replayed from the suite's cache (not paid now" in spend.line()


def test_records_written_before_version_3_are_read_into_the_new_names():
    old_call = {"caller": "ai", "model": MODEL, "prompt_tokens": 10, "completion_tokens": 2, "cost": 0.5,
                "cache_hit": True, "attempts": 0}
    call = CallRecord.model_validate(old_call)
    assert (call.suite_replay, call.cost, call.replayed_cost) == (True, 0.0, 0.5)
    assert CallRecord.model_validate({**old_call, "cache_hit": False}).cost == 0.5
    assert upgrade_totals({"cost": 0.5, "cache_hits": 0, "llm_calls": 3}) == {
        "llm_calls": 3, "suite_replays": 0, "paid_cost": 0.5, "replayed_cost": 0.0, "provider_cached_tokens": 0}
    mixed = upgrade_totals({"cost": 0.5, "cache_hits": 2})  # replays were counted as paid: the split is unknown
    assert (mixed["paid_cost"], mixed["replayed_cost"], mixed["suite_replays"]) == (None, None, 2)


def config(tmp_path, **fields: Any):
    data = {"name": "cost", "tasks": {"ids": ["demo_archaeology/0/0"]}, "variants": ["single"],
            "seeds": [0, 1], "models": {"default": MODEL}, "judge": MODEL, "metrics": ["performance"],
            "settings": {"action_budget": 2, "max_rounds": 3},
            "concurrency": {"sessions": 2, "kernels": 2}, "results": str(tmp_path / "results"), **fields}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_experiment(path)


def test_session_and_judge_spend_add_up_to_the_batch_total(provider, tmp_path):
    provider(FINISH)  # the judge gets the same reply: invalid for it, so it is repaired, flagged, and paid
    exp = config(tmp_path)
    started = time.time()
    summary = run_experiment(exp, progress=False)
    report = score_results(exp.folder(), exp.scoring(), data_root=exp.tasks.data_root)
    sessions, judge = run_spend(exp.folder(), started, set(exp.session_ids()))

    folders = [exp.folder() / sid for sid in exp.session_ids()]
    records = [SessionRecord.model_validate_json((f / "session.json").read_bytes()) for f in folders]
    calls = [c for f in folders for line in (f / "events.jsonl").read_bytes().splitlines()
             for c in Event.model_validate_json(line).llm_calls]
    assert sessions.paid_cost > 0 and sessions.paid_cost == pytest.approx(sum(c.cost for c in calls))
    assert sessions.paid_cost == pytest.approx(sum(r.totals.paid_cost or 0 for r in records))
    assert sessions.paid_cost == pytest.approx(summary.spend().paid_cost)
    assert sessions.provider_cached_tokens == sum(r.totals.provider_cached_tokens for r in records) > 0
    assert judge.requests > 0 and judge.paid_cost > 0 and judge.paid_cost == pytest.approx(report.spend.paid_cost)
    assert load_sessions(exp.folder())["paid_cost"].sum() == pytest.approx(sessions.paid_cost)
    assert load_events(exp.folder())["cost"].sum() == pytest.approx(sessions.paid_cost)
    lines = spend_lines(sessions, judge)
    assert f"${sessions.paid_cost:.4f} paid" in lines[0] and f"${judge.paid_cost:.4f} paid" in lines[1]
    assert f"${sessions.paid_cost + judge.paid_cost:.4f} paid" in lines[2]

    again = time.time()  # a rerun replays the judge's answers from the suite's cache: nothing paid
    for path in [*(f / "scores" for f in folders), exp.folder() / "judge-checks"]:
        shutil.rmtree(path)
    rerun = score_results(exp.folder(), exp.scoring(), data_root=exp.tasks.data_root)
    first = report.spend
    assert rerun.spend.requests == 0 and rerun.spend.paid_cost == 0
    assert rerun.spend.suite_replays == first.requests + first.suite_replays
    assert rerun.spend.replayed_cost == pytest.approx(first.paid_cost + first.replayed_cost)
    assert run_spend(exp.folder(), again, set(exp.session_ids()))[1].paid_cost == 0


def test_the_dry_run_prices_a_call_at_the_providers_cache_rate_where_litellm_has_one():
    from colabkit.runner.plan import call_price

    info = litellm.get_model_info(MODEL)
    expected = 200 * info["input_cost_per_token"] + 800 * info["cache_read_input_token_cost"] \
        + 100 * info["output_cost_per_token"]
    assert call_price(ModelConfig(model=MODEL), 1000, 100, 0.8) == pytest.approx(expected)
    assert call_price(ModelConfig(model=MODEL), 1000, 100, 0.0) == pytest.approx(
        1000 * info["input_cost_per_token"] + 100 * info["output_cost_per_token"])
    assert call_price(ModelConfig(model="local/smollm2-135m"), 1000, 100, 0.8) == 0.0
    assert call_price(ModelConfig(model="nosuchprovider/x"), 1000, 100, 0.8) is None
