"""Real providers over real HTTP: structured-output fallbacks, fatal refusals and preflight.

`FakeDeepSeek` is an OpenAI-compatible chat endpoint on 127.0.0.1 (standard library only)
that behaves as DeepSeek's API documents: `response_format` "json_schema" is refused with
HTTP 400 "This response_format type is unavailable now", JSON mode needs the word "json" in
the prompt, a wrong key is a 401. Faults (429, 500, ...) are queued per request. litellm
reaches it through `DEEPSEEK_API_BASE`, exactly as it would reach api.deepseek.com, so the
whole path (litellm's request mapping and exception mapping, the gateway, the session, the
CLI) is the real one.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import litellm
import pytest
from helpers.loopback import LoopbackServer, serving_as_deepseek
from helpers.scripted import use_scripted
from pydantic import BaseModel, Field

from colabkit.cli import main
from colabkit.llm import Gateway, ModelConfig, ProviderError, ProviderUnavailable, RetryPolicy
from colabkit.llm import providers as provider_table
from colabkit.llm.preflight import check_model, preflight
from colabkit.session import Event
from colabkit.store import SessionRecord

TASK_ID = "demo_archaeology/0/0"
MODEL = "deepseek/deepseek-chat"
KEY = "sk-test-emulated"
HYPOTHESIS = "Bronze axes dominate the hoards of the 12th century BCE."
STEPS = [
    {"thought": "look at the data", "action": "execute_code", "content": "print(6 * 7)", "to": ""},
    {"thought": "write it down", "action": "edit_result", "content": HYPOTHESIS, "to": ""},
    {"thought": "done", "action": "finish", "content": "checked", "to": ""},
]
FAST = RetryPolicy(max_attempts=3, base_delay_s=0.0)
UNAVAILABLE = "This response_format type is unavailable now"


def _error(status: int, message: str, kind: str = "invalid_request_error") -> tuple[int, dict]:
    return status, {"error": {"message": message, "type": kind, "param": None, "code": kind}}


RATE_LIMITED = _error(429, "Rate limit reached for requests", "rate_limit_error")
SERVER_ERROR = _error(500, "The server had an error while processing your request", "server_error")


class FakeDeepSeek(LoopbackServer):
    """DeepSeek's chat API as documented, with scripted answers and queued faults.

    `answers` are popped per successful request (dicts are sent as JSON text); `faults` are
    `(status, body)` replies popped before answers. `json_object` False emulates a provider
    that refuses JSON mode too. Every request body is kept in `requests`.
    """

    def __init__(self, answers: list[dict | str], *, faults: list[tuple[int, dict]] = (),
                 json_object: bool = True) -> None:
        self.answers = list(answers)
        self.faults = list(faults)
        self.json_object = json_object
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        super().__init__()

    def formats(self) -> list[str | None]:
        """The `response_format` type of every request, in order."""
        return [(r.get("response_format") or {}).get("type") for r in self.requests]

    def handle(self, path: str, auth: str | None, body: dict) -> tuple[int, dict]:
        with self.lock:
            self.requests.append(body)
            if path.rstrip("/") != "/chat/completions":
                return _error(404, f"no route {path}")
            if auth != f"Bearer {KEY}":
                return _error(401, "Authentication Fails, Your api key is invalid", "authentication_error")
            if body.get("model") != "deepseek-chat":
                return _error(400, "Model Not Exist")
            kind = (body.get("response_format") or {}).get("type", "text")
            if kind not in ("text", "json_object") or (kind == "json_object" and not self.json_object):
                return _error(400, UNAVAILABLE)
            prompt = " ".join(str(m.get("content", "")) for m in body["messages"]).lower()
            if kind == "json_object" and "json" not in prompt:
                return _error(400, "Prompt must contain the word 'json' in some form to use "
                                   "'response_format' of type 'json_object'.")
            if self.faults:
                return self.faults.pop(0)
            answer = self.answers.pop(0) if self.answers else {"thought": "idle", "action": "wait"}
            text = answer if isinstance(answer, str) else json.dumps(answer)
            return 200, {"id": f"chat-{len(self.requests)}", "object": "chat.completion", "created": 1,
                         "model": "deepseek-chat",
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": text}}],
                         "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split()),
                                   "total_tokens": len(prompt.split()) + len(text.split())}}


@pytest.fixture
def deepseek(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Start a FakeDeepSeek and point litellm's deepseek provider at it with the right key."""
    yield from serving_as_deepseek(monkeypatch, FakeDeepSeek, KEY)


def run_cli(out: Path, *extra: str, model: str = MODEL) -> int:
    return main(["run", "--task", TASK_ID, "--variant", "single", "--seed", "0", "--model", model,
                 "--out", str(out), "--quiet", *extra])


def stored(out: Path) -> tuple[SessionRecord, list[Event]]:
    [folder] = [p.parent for p in out.glob("*/events.jsonl")]
    record = SessionRecord.model_validate_json((folder / "session.json").read_bytes())
    events = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    return record, events


# --- the must-show: DeepSeek runs, the mode is recorded, a 401 stops at once ---------------------

def test_deepseek_session_completes_in_json_mode_through_429_and_500(tmp_path, capsys, deepseek):
    server = deepseek(STEPS, faults=[RATE_LIMITED, SERVER_ERROR])
    assert run_cli(tmp_path) == 0
    out = capsys.readouterr().out
    assert "ended by: finish after 3 actions" in out and HYPOTHESIS in out
    record, events = stored(tmp_path)
    steps = [e for e in events if e.participant == "ai"]
    assert [(e.action, e.status) for e in steps] == [("execute_code", "ok"), ("edit_result", "ok"), ("finish", "ok")]
    assert "42" in steps[0].result and record.final_hypothesis == HYPOTHESIS
    calls = [call for e in steps for call in e.llm_calls]
    assert [c.output_mode for c in calls] == ["json_object"] * 3  # the known-exceptions table, no 400 first
    assert [c.attempts for c in calls] == [3, 1, 1] and all(c.error is None for c in calls)  # 429, 500, ok
    assert server.formats() == ["json_object"] * 5  # json_schema was never sent
    system = server.requests[0]["messages"][0]["content"]
    assert "It must match this JSON schema" in system and '"action"' in system
    assert record.totals.failed_steps == 0 and record.totals.paid_cost > 0


def test_a_401_ends_the_session_at_once_and_a_fixed_key_reruns_it(tmp_path, capsys, deepseek, monkeypatch):
    server = deepseek(STEPS)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-wrong")
    assert run_cli(tmp_path) == 2
    captured = capsys.readouterr()
    [error] = captured.err.splitlines()
    assert error.startswith("colabkit: error: deepseek/deepseek-chat: authentication failed")
    assert "HTTP 401" in error and "Authentication Fails" in error and "sk-wrong" not in error
    assert "ended by: provider_error after 0 actions" in captured.out
    assert len(server.requests) == 1  # not retried, and no second step was tried
    record, events = stored(tmp_path)
    assert record.ended_by == "provider_error"
    assert [(e.action, e.status) for e in events] == [("session_start", "info"), ("session_end", "error")]
    end = events[-1]
    assert end.args["ended_by"] == "provider_error" and end.result == error.removeprefix("colabkit: error: ")
    [call] = end.llm_calls
    assert call.attempts == 1 and "AuthenticationError" in call.error and call.output_mode == "json_object"

    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)  # a provider failure is no result: asking again runs it
    assert run_cli(tmp_path) == 0
    assert "already finished" not in capsys.readouterr().out
    assert stored(tmp_path)[0].ended_by == "finish"


def test_a_wrong_capability_flag_falls_back_once_and_the_mode_is_remembered(tmp_path, capsys, deepseek, monkeypatch):
    """Without the table entry litellm's flag says json_schema; the 400 teaches the gateway."""
    monkeypatch.setattr(provider_table, "KNOWN_MODES", {})
    server = deepseek(STEPS)
    assert run_cli(tmp_path) == 0
    record, events = stored(tmp_path)
    assert record.ended_by == "finish" and record.totals.failed_steps == 0
    modes = [[c.output_mode for c in e.llm_calls] for e in events if e.participant == "ai"]
    assert modes == [["json_schema", "json_object"], ["json_object"], ["json_object"]]
    first = [e for e in events if e.participant == "ai"][0].llm_calls[0]
    assert UNAVAILABLE in first.error and first.attempts == 1
    assert server.formats() == ["json_schema", "json_object", "json_object", "json_object"]


# --- the gateway against the same server: every fallback and every kind of refusal ---------------

class Answer(BaseModel):
    verdict: str = Field(max_length=40)


def ask(gateway: Gateway, model: str = MODEL) -> tuple[Answer, list]:
    messages = [{"role": "user", "content": "Is the data clean?"}]
    return asyncio.run(gateway.structured(ModelConfig(model=model), messages, Answer, caller="judge"))


def test_a_provider_refusing_json_mode_too_falls_back_to_instructions(deepseek, monkeypatch):
    monkeypatch.setattr(provider_table, "KNOWN_MODES", {})
    server = deepseek([{"verdict": "clean"}, {"verdict": "still clean"}], json_object=False)
    gateway = Gateway(retry=FAST)
    answer, records = ask(gateway)
    assert answer.verdict == "clean"
    assert [r.output_mode for r in records] == ["json_schema", "json_object", "instructions"]
    assert server.formats() == ["json_schema", "json_object", None]
    assert "It must match this JSON schema" in server.requests[2]["messages"][0]["content"]
    assert gateway.modes == {MODEL: "instructions"}
    answer, [record] = asyncio.run(gateway.structured(ModelConfig(model=MODEL), [
        {"role": "user", "content": "And now?"}], Answer, caller="judge"))
    assert answer.verdict == "still clean" and record.output_mode == "instructions"
    assert len(server.requests) == 4  # remembered: no more refused requests


def test_session_gateways_of_a_batch_can_share_what_they_learnt(deepseek, monkeypatch):
    monkeypatch.setattr(provider_table, "KNOWN_MODES", {})
    server = deepseek([{"verdict": "a"}, {"verdict": "b"}])
    learnt: dict = {}
    ask(Gateway(retry=FAST, modes=learnt))
    _, [record] = ask(Gateway(retry=FAST, modes=learnt))
    assert learnt == {MODEL: "json_object"} and record.output_mode == "json_object"
    assert server.formats() == ["json_schema", "json_object", "json_object"]


@pytest.mark.parametrize(("fault", "status"), [
    (_error(400, "Invalid max_tokens value, the valid range of max_tokens is [1, 8192]"), 400),
    (_error(402, "Insufficient Balance"), 402),
    (_error(403, "Permission denied"), 403),
    (_error(404, "Model Not Exist"), 404),
    (_error(422, "Invalid request: unknown field `stream_mode`"), 422),
])
def test_refusals_no_retry_can_fix_raise_provider_error_after_one_attempt(deepseek, fault, status):
    server = deepseek([], faults=[fault, fault])
    with pytest.raises(ProviderError) as info:
        ask(Gateway(retry=FAST))
    assert info.value.status == status and info.value.model == MODEL
    assert str(info.value).startswith(f"{MODEL}: ") and f"HTTP {status}" in str(info.value)
    assert fault[1]["error"]["message"] in str(info.value) and "\n" not in str(info.value)
    assert len(server.requests) == 1 and [r.attempts for r in info.value.records] == [1]


def test_free_text_calls_record_their_mode_and_stop_on_refusals_too(deepseek, monkeypatch):
    server = deepseek(["plain words"])
    messages = [{"role": "user", "content": "Say something."}]
    text, record = asyncio.run(Gateway(retry=FAST).complete(ModelConfig(model=MODEL), messages, caller="judge"))
    assert text == "plain words" and record.output_mode == "text" and server.formats() == [None]
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-wrong")
    with pytest.raises(ProviderError, match="HTTP 401") as info:
        asyncio.run(Gateway(retry=FAST).complete(ModelConfig(model=MODEL), messages, caller="judge"))
    assert [r.output_mode for r in info.value.records] == ["text"]


def test_transient_faults_are_retried_then_the_provider_is_unavailable_not_a_failed_step(deepseek):
    server = deepseek([], faults=[RATE_LIMITED, SERVER_ERROR, RATE_LIMITED])
    with pytest.raises(ProviderUnavailable) as info:  # infrastructure: the session stops, reruns later
        ask(Gateway(retry=FAST))
    [record] = info.value.records
    assert record.attempts == 3 and len(server.requests) == 3 and "RateLimitError" in record.error


def test_unknown_model_on_the_server_is_fatal_too(deepseek):
    deepseek([])
    with pytest.raises(ProviderError, match="deepseek/deepseek-nope: request rejected .*Model Not Exist"):
        ask(Gateway(retry=FAST), model="deepseek/deepseek-nope")


def test_a_batch_stops_at_the_first_refusal_and_reports_it_once(tmp_path, capsys, deepseek, monkeypatch):
    server = deepseek(STEPS)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-wrong")
    code = main(["demo", "--model", MODEL, "--out", str(tmp_path), "--variants", "single,default-dr", "--quiet"])
    assert code == 2
    captured = capsys.readouterr()
    assert captured.err.count("authentication failed") == 1 and captured.err.count("\n") == 1
    assert "default-dr" not in captured.out.split("single:")[-1]  # the second session never started
    assert len(server.requests) == 1


# --- preflight: before anything runs -------------------------------------------------------------

@pytest.mark.parametrize(("model", "unset", "message"), [
    ("nosuchprovider/x", None, "model 'nosuchprovider/x': unknown provider 'nosuchprovider'"),
    ("openai/gpt-4o", "OPENAI_API_KEY",
     "model 'openai/gpt-4o' needs the environment variable OPENAI_API_KEY, which is not set"),
    ("deepseek/deepseek-chat", "DEEPSEEK_API_KEY", "needs the environment variable DEEPSEEK_API_KEY"),
    ("local/no-such-model.gguf", None, "model 'local/no-such-model.gguf': local model 'no-such-model.gguf' is"),
])
@pytest.mark.parametrize("command", ["run", "demo"])
def test_preflight_is_one_line_before_any_session(tmp_path, capsys, monkeypatch, socket_guard, model, unset,
                                                  message, command):
    if unset:
        monkeypatch.delenv(unset, raising=False)
    argv = (["run", "--task", TASK_ID, "--variant", "single", "--seed", "0"] if command == "run"
            else ["demo", "--variants", "single"])
    assert main([*argv, "--model", model, "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    assert line.startswith("colabkit: error: ") and message in line
    assert "running" not in captured.out and not (tmp_path / "out").exists()
    assert socket_guard == []  # decided locally: no request was sent


def test_preflight_passes_models_that_can_run(monkeypatch, socket_guard):
    use_scripted({})
    monkeypatch.setenv("OPENAI_API_KEY", "sk-anything")
    preflight([ModelConfig(), ModelConfig(model="scripted/x"), ModelConfig(model="openai/gpt-4o"),
               ModelConfig(model="ollama/llama3")])  # Ollama has a default local address
    monkeypatch.delenv("OPENAI_API_KEY")
    check_model(ModelConfig(model="openai/gpt-4o", extra={"api_key": "sk-given"}))
    assert socket_guard == []


def test_a_refusal_during_the_memory_build_ends_the_session_there(tmp_path, capsys):
    response = httpx.Response(403, request=httpx.Request("POST", "http://scripted"))
    denied = litellm.PermissionDeniedError("no access to this model", llm_provider="scripted", model="x",
                                           response=response)
    model = use_scripted({"everyone": [denied]})
    code = main(["run", "--task", TASK_ID, "--variant", "memory-d", "--seed", "0", "--model", "scripted/everyone",
                 "--out", str(tmp_path), "--quiet"])
    assert code == 2 and "permission denied (HTTP 403" in capsys.readouterr().err
    record, events = stored(tmp_path)
    assert record.ended_by == "provider_error" and len(model.calls) == 1
    assert [(e.phase, e.action) for e in events] == [("build", "session_start"), ("task", "session_end")]
