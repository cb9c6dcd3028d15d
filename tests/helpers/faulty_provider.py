"""A DeepSeek-like chat server on 127.0.0.1 that fails the way networks fail, for fault tests.

Standard library only. It answers `POST /chat/completions` in DeepSeek's JSON mode with
`answer(body)` (a dict is sent as JSON), and misbehaves below HTTP on request:

- `drop` the next n requests: headers and half the body are sent, then the connection
  is closed (a response cut mid-way, a reset);
- `stall` the next n requests: nothing is sent for `stall_s` seconds (past the client's read
  timeout), then the connection is closed;
- `fail` the next n requests with an HTTP status (503, 429...);
- `down()` / `up()`: the listening socket is closed (connections are refused) and opened
  again on the same port; `outage(after=k, window_s=w)` goes down once k answers were
  sent, and comes back by itself w seconds later.

`answered` holds the request bodies that got a whole answer (what a provider bills), so a
test can check that nothing was paid twice; `seen` every request body that arrived.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEY = "sk-test-faulty"


class FaultyProvider:
    def __init__(self, answer: Callable[[dict], dict | str], *, stall_s: float = 2.0) -> None:
        self.answer = answer
        self.stall_s = stall_s
        self.faults: list[str | int] = []
        self.answered: list[dict[str, Any]] = []
        self.seen: list[dict[str, Any]] = []  # every request body, answered or not
        self.requests = 0
        self.lock = threading.Lock()
        self._outage: tuple[int, float] | None = None
        self.outages: list[tuple[float, float]] = []
        self.port = 0
        self.server: ThreadingHTTPServer | None = None
        self.up()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, fault: str | int, n: int = 1) -> None:
        """Misbehave on the next `n` requests: "drop", "stall" or an HTTP status."""
        self.faults += [fault] * n

    def outage(self, *, after: int, window_s: float) -> None:
        """Go down (refusing connections) once `after` answers were sent, for `window_s` seconds."""
        self._outage = (after, window_s)

    def up(self) -> None:
        handler = _handler(self)
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self.port = self.server.server_address[1]
        # a short poll: shutdown() (each test's teardown, each outage) waits at most this long
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def down(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def close(self) -> None:
        self.down()

    def _maybe_go_down(self) -> None:
        """After an answer: start the outage window if its moment has come."""
        if self._outage is None or len(self.answered) < self._outage[0]:
            return
        window = self._outage[1]
        self._outage = None
        started = time.monotonic()

        def window_then_up() -> None:
            self.down()
            time.sleep(window)
            self.up()
            self.outages.append((started, time.monotonic()))

        threading.Thread(target=window_then_up, daemon=True).start()

    def reply(self, body: dict) -> tuple[str | int, dict | None]:
        """("ok", payload), or the fault to act out."""
        with self.lock:
            self.requests += 1
            self.seen.append(body)
            fault = self.faults.pop(0) if self.faults else "ok"
        if fault not in ("ok", "drop"):
            return fault, None
        answer = self.answer(body)
        text = answer if isinstance(answer, str) else json.dumps(answer)
        prompt = " ".join(str(m.get("content", "")) for m in body["messages"])
        payload = {"id": "chat-1", "object": "chat.completion", "created": 1, "model": body.get("model"),
                   "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                   "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split()),
                             "total_tokens": len(prompt.split()) + len(text.split())}}
        return fault, payload


def _handler(fake: FaultyProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            what, payload = fake.reply(body)
            if what == "stall":
                time.sleep(fake.stall_s)
                self.close_connection = True
                return
            if isinstance(what, int):
                payload = {"error": {"message": f"HTTP {what} from the fault queue", "type": "server_error"}}
                status = what
            else:
                status = 200
            data = json.dumps(payload).encode()
            self.close_connection = True  # no keep-alive: a connection never outlives an outage
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            if what == "drop":
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(data)
            self.wfile.flush()
            if what == "ok":
                with fake.lock:
                    fake.answered.append(body)
                    fake._maybe_go_down()

        def log_message(self, *args: Any) -> None:
            pass

    return Handler
