"""The audit's double served over HTTP: requests recorded as they arrive from the gateway.

A real model is reached through litellm's OpenAI client over HTTP; so is the double here, so
what the trace compares (`trace`) is what actually left the gateway after every transform,
retry and repair, not what the engine rendered. `RecordingServer` listens on 127.0.0.1 (one
per process, started on first use), answers `POST /v1/chat/completions` from the
`PolicyDouble` of the run in progress, and records each request's body as it was received
(the messages and every parameter sent), with the answer given, into the double's `calls`.

The role is the model's name (`audit-<role>`): a declared seat beyond the study's roles has no
model of its own (it plays the default model) and is told apart only by the gateway's caller,
which does not travel over HTTP, so an arm with one is played in-process (`over_http`), all its
variants alike (a twin pair is always compared over one transport).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from colabkit.session import SessionSpec
from colabkit.team.personas import PERSONA_IDS

MODEL_PREFIX = "audit-"
"""The model name the server is asked for: `audit-<role>` (through litellm's `openai/` provider)."""


class RecordingServer:
    """An OpenAI-compatible chat endpoint on a free loopback port, answered by the current double."""

    _shared: ClassVar[RecordingServer | None] = None
    _start_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        server = self
        self.double: Any = None
        self.lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                status, payload = server.handle(raw)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @classmethod
    def shared(cls) -> RecordingServer:
        with cls._start_lock:
            if cls._shared is None:
                cls._shared = RecordingServer()
            return cls._shared

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def handle(self, raw: bytes) -> tuple[int, dict[str, Any]]:
        """One request: recorded as received, answered by the double (400 when none is serving)."""
        body = json.loads(raw)
        with self.lock:
            double = self.double
            if double is None:
                return 400, {"error": {"message": "no audit run in progress", "type": "invalid_request_error"}}
            role = str(body.get("model", "")).removeprefix(MODEL_PREFIX)
            messages = body.get("messages", [])
            params = {k: v for k, v in body.items() if k not in ("messages", "model")}
            text = double.record(role, messages, params)
        return 200, {"id": f"audit-{len(double.calls)}", "object": "chat.completion", "created": 0,
                     "model": body.get("model"),
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": text}}],
                     "usage": double.usage()}

    @contextmanager
    def serving(self, double: Any) -> Iterator[None]:
        """`double` answers while the block runs (one run at a time)."""
        with self.lock:
            self.double = double
        try:
            yield
        finally:
            with self.lock:
                self.double = None


def over_http(spec: SessionSpec) -> bool:
    """Whether every seat of `spec` has a model role of its own (so the server can tell it apart)."""
    return all(pid in PERSONA_IDS for pid in spec.variant.team)
