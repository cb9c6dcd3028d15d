"""An HTTP server on 127.0.0.1 for provider tests: every POST is answered by `handle`.

The fake providers (tests/test_llm_provider_http.py's DeepSeek, helpers/caching_provider.py)
subclass it and say only what they reply; serving, threading and the port live here once.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LoopbackServer(ABC):
    """Starts serving on a free loopback port when made; `handle` returns (status, JSON body)."""

    def __init__(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, payload = fake.handle(self.path, self.headers.get("Authorization"), body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # a short poll: shutdown() in each test's teardown waits at most this long (0.5 s by default)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @abstractmethod
    def handle(self, path: str, auth: str | None, body: dict) -> tuple[int, dict]:
        """(status, JSON body) for one POST: each fake provider says what it replies."""


def serving_as_deepseek(monkeypatch: Any, factory: Any, key: str) -> Iterator[Any]:
    """A fixture body: `start(...)` makes a server with `factory(...)` and points litellm's
    deepseek provider at it with `key`; every server started is closed at the end."""
    servers: list[LoopbackServer] = []

    def start(*args: Any, **options: Any) -> Any:
        server = factory(*args, **options)
        servers.append(server)
        monkeypatch.setenv("DEEPSEEK_API_BASE", server.base)
        monkeypatch.setenv("DEEPSEEK_API_KEY", key)
        return server

    yield start
    for server in servers:
        server.close()
