"""Provider faults are infrastructure, never a participant's step (issue 35, Build 1).

Against `FaultyProvider` on 127.0.0.1, reached by litellm through `DEEPSEEK_API_BASE` as it
would reach api.deepseek.com: connections refused, responses cut half-way, reads that stall
past the timeout, TLS spoken to a plain server, names that do not resolve, 503s, and an
outage window. A fault the retry bound rides out is invisible in the session; one it does
not ends the session `provider_unavailable` (no failed step, no team outcome), the batch
stops starting sessions, and the next batch finishes everything without paying twice; a
scoring job whose judge is out of reach stops at the first outage, its scores missing and flagged.
The retry bounds and read timeouts are set short, so each test takes seconds.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.faulty_provider import KEY, FaultyProvider
from helpers.stored import store_session
from pydantic import BaseModel, Field

from colabkit.cli import main
from colabkit.evaluation import load_scores
from colabkit.llm import Gateway, ModelConfig, ProviderUnavailable, RetryPolicy
from colabkit.runner import build_session
from colabkit.runner.batch import ProviderRefused, arun_sessions
from colabkit.runner.progress import read_journal
from colabkit.session import Event, SessionSettings
from colabkit.store import SessionRecord

MODEL = "deepseek/deepseek-chat"
TASK_ID = "demo_archaeology/0/0"
HYPOTHESIS = "Bronze axes dominate the hoards of the 12th century BCE."
QUICK = RetryPolicy(max_attempts=20, base_delay_s=0.05, max_delay_s=0.2, max_elapsed_s=3.0, jitter_s=0.05)
# A fault that outlasts the bound: the bound is short (a second), but leaves room for a second
# attempt after a stalled first one (read timeout 0.3 s plus one backoff).
GIVES_UP_QUICK = QUICK.model_copy(update={"max_elapsed_s": 1.0})
RIDES_OUT = "max_attempts=50,base_delay_s=0.1,max_delay_s=0.3,max_elapsed_s=6,jitter_s=0.05"
GIVES_UP = "max_attempts=50,base_delay_s=0.05,max_delay_s=0.1,max_elapsed_s=0.4,jitter_s=0.02"
THREE_ATTEMPTS = "max_attempts=3,base_delay_s=0.05,max_delay_s=0.1,max_elapsed_s=30,jitter_s=0.02"


class Verdict(BaseModel):
    verdict: str = Field(max_length=40)


def step(body: dict) -> dict:
    """The AI's answer: write the hypothesis, then (once the editor shows it) finish."""
    last = str(body["messages"][-1].get("content", ""))
    if "Verdict" in json.dumps(body["messages"][0]):
        return {"verdict": "clean"}
    if HYPOTHESIS in last:
        return {"thought": "done", "action": "finish", "content": "checked", "to": ""}
    return {"thought": "write it down", "action": "edit_result", "content": HYPOTHESIS, "to": ""}


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultyProvider]:
    server = FaultyProvider(step, stall_s=1.5)
    monkeypatch.setenv("DEEPSEEK_API_BASE", server.base)
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    yield server
    server.close()


def ask(gateway: Gateway, timeout: float = 0.5) -> tuple[Verdict, list]:
    messages = [{"role": "user", "content": "Is the data clean? Answer in json."}]
    return asyncio.run(gateway.structured(ModelConfig(model=MODEL, timeout=timeout), messages, Verdict,
                                          caller="judge"))


# --- one call: every fault is retried, and past the bound it is the provider's, not the answer's ---

@pytest.mark.parametrize("fault", ["drop", "stall", 503, 429])
def test_a_transient_fault_is_retried_and_the_answer_arrives(provider, fault):
    provider.queue(fault, 2)
    answer, [record] = ask(Gateway(retry=QUICK), timeout=0.4)
    # a cut connection may also spoil the client's pooled one: one more attempt at most
    assert answer.verdict == "clean" and record.attempts in (3, 4) and record.error is None
    assert provider.requests == record.attempts and len(provider.answered) == 1


@pytest.mark.parametrize("fault", ["refused", "drop", "stall", "tls"])
def test_a_fault_that_outlasts_the_bound_is_provider_unavailable(provider, monkeypatch, fault):
    if fault == "refused":
        provider.down()
    elif fault == "tls":  # TLS spoken to a plain-HTTP server: the handshake fails
        monkeypatch.setenv("DEEPSEEK_API_BASE", provider.base.replace("http://", "https://"))
    else:
        provider.queue(fault, 100)
    with pytest.raises(ProviderUnavailable) as info:
        ask(Gateway(retry=GIVES_UP_QUICK), timeout=0.3)
    message = str(info.value)
    assert message.startswith(f"{MODEL}: provider unavailable after ") and "\n" not in message
    [record] = info.value.records
    assert record.attempts >= 2 and record.error and provider.answered == []


def test_a_name_that_does_not_resolve_is_provider_unavailable(monkeypatch, socket_guard):
    monkeypatch.setenv("DEEPSEEK_API_BASE", "http://no-such-provider.invalid")
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    with pytest.raises(ProviderUnavailable) as info:
        ask(Gateway(retry=GIVES_UP_QUICK), timeout=0.3)
    assert info.value.records[0].attempts >= 2
    assert socket_guard and all("no-such-provider.invalid" in attempt for attempt in socket_guard)


# --- a session: an outage past the bound ends it as infrastructure, and asking again finishes it ---

def records(out: Path) -> list[tuple[SessionRecord, list[Event]]]:
    found = []
    for folder in sorted(p.parent for p in out.glob("*/session.json")):
        record = SessionRecord.model_validate_json((folder / "session.json").read_bytes())
        events = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]
        found.append((record, events))
    return found


def paid_twice(provider: FaultyProvider) -> list[str]:
    """Request bodies the provider answered in whole more than once (what it would bill twice)."""
    bodies = [json.dumps(body, sort_keys=True) for body in provider.answered]
    return [body for body in set(bodies) if bodies.count(body) > 1]


def wait_until_up(provider: FaultyProvider, timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not provider.outages and time.monotonic() < deadline:
        time.sleep(0.05)
    assert provider.outages, "the outage window never ended"


@pytest.mark.slow  # sessions with kernels
def test_an_outage_mid_session_ends_it_unavailable_and_a_rerun_finishes_it_without_paying_twice(
        provider, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("COLABKIT_PROVIDER_RETRY", GIVES_UP)
    provider.outage(after=1, window_s=1.5)
    argv = ["run", "--task", TASK_ID, "--variant", "single", "--seed", "0", "--model", MODEL,
            "--out", str(tmp_path), "--quiet", "--action-budget", "3"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    [error] = captured.err.splitlines()
    assert "provider unavailable after" in error and "ended by: provider_unavailable" in captured.out
    [(record, events)] = records(tmp_path)
    assert record.ended_by == "provider_unavailable" and record.totals.failed_steps == 0
    assert [(e.action, e.status) for e in events if e.participant == "ai"] == [("edit_result", "ok")]
    assert events[-1].action == "session_end" and events[-1].args["ended_by"] == "provider_unavailable"

    wait_until_up(provider)
    assert main(argv) == 0  # no result yet: asking again runs it, the paid edit replayed
    [(record, events)] = records(tmp_path)
    assert record.ended_by == "finish" and record.final_hypothesis == HYPOTHESIS
    assert record.totals.suite_replays == 1 and paid_twice(provider) == []


# --- a batch: the circuit breaker, and after the window every session finishes ----------------------

def grid(n: int) -> list[tuple[Any, Any]]:
    return [build_session(TASK_ID, "single", seed, model=MODEL, settings=SessionSettings(action_budget=3))
            for seed in range(n)]


def batch(out: Path, items: list) -> Any:
    return asyncio.run(arun_sessions(items, out=out, sessions=1, kernels=1, progress=False))


@pytest.mark.slow  # sessions with kernels
def test_an_outage_within_the_bound_is_ridden_out_by_every_session(provider, monkeypatch, tmp_path):
    monkeypatch.setenv("COLABKIT_PROVIDER_RETRY", RIDES_OUT)
    provider.outage(after=1, window_s=1.0)
    summary = batch(tmp_path, grid(2))
    assert summary.count("done") == 2 and provider.outages
    assert all(record.ended_by == "finish" and record.totals.failed_steps == 0 for record, _ in records(tmp_path))
    assert paid_twice(provider) == []


@pytest.mark.slow  # sessions with kernels
def test_an_outage_past_the_bound_stops_the_batch_and_the_next_batch_finishes_every_session(
        provider, monkeypatch, tmp_path):
    monkeypatch.setenv("COLABKIT_PROVIDER_RETRY", GIVES_UP)
    provider.outage(after=1, window_s=2.0)
    items = grid(3)
    with pytest.raises(ProviderRefused) as info:
        batch(tmp_path, items)
    message = str(info.value)
    assert "provider unavailable" in message and "1 session(s) stopped by the provider, 2 not started" in message
    assert "\n" not in message
    [(record, _)] = records(tmp_path)  # the breaker opened: the other two never started
    assert record.ended_by == "provider_unavailable" and record.totals.failed_steps == 0
    journal = read_journal(tmp_path)
    assert journal.ended_by.tolist() == ["provider_unavailable"]

    wait_until_up(provider)
    summary = batch(tmp_path, items)  # no --retry-errors: an outage is no result
    assert summary.count("done") == 3
    ended = [(record.ended_by, record.totals.failed_steps) for record, _ in records(tmp_path)]
    assert ended == [("finish", 0)] * 3
    assert paid_twice(provider) == []


# --- a scoring job: the judge's provider out of reach opens the job's breaker ---------------------

def test_an_unreachable_judge_ends_the_scoring_job_once_and_every_judged_score_is_missing_and_flagged(
        provider, monkeypatch, tmp_path, capsys):
    for seed in range(4):
        store_session(tmp_path, TASK_ID, f"{HYPOTHESIS} ({seed})", seed=seed)  # a question each
    monkeypatch.setenv("COLABKIT_PROVIDER_RETRY", THREE_ATTEMPTS)
    provider.queue(503, 10_000)  # reachable (the preflight passes), but never answers
    argv = ["score", str(tmp_path), "--judge", MODEL, "--metrics", "performance", "--sanity-tasks", "1", "--quiet"]
    assert main(argv) == 1
    [line] = [text for text in capsys.readouterr().out.splitlines() if text.startswith("stopped early:")]
    assert "provider unavailable after" in line and MODEL in line
    # the first question rode out its bound; no other question was sent (without the breaker
    # each of the 4 sessions' questions, and the sanity check's, would have been)
    assert provider.requests == 3 and len({json.dumps(body, sort_keys=True) for body in provider.seen}) == 1
    scores = load_scores(tmp_path)
    assert len(scores) == 4 and scores["performance"].isna().all()  # fail closed: missing, not 0
    assert all("judge_error: " in flags and "not sent" in flags for flags in scores["flags"])
    stored = [json.loads(path.read_bytes()) for path in tmp_path.glob("*/scores/*.json")]
    assert len(stored) == 4 and not any(score["result"]["complete"] for score in stored)  # the next job redoes them
