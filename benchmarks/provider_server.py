"""A local OpenAI-compatible chat server that behaves like DeepSeek's API, with a latency model.

For `benchmarks/provider.py`: the suite's real provider path (litellm, the OpenAI SDK over
HTTP, JSON mode, retries) against a server that costs no money and no network. It listens on
127.0.0.1 only, answers `POST /chat/completions` (and `/v1/...`), and stops by itself: after
`--max-seconds`, after `--max-requests`, or when its standard input closes (the benchmark
holds it open, so a killed benchmark leaves no server behind).

It behaves as the rehearsal of issue 21 saw DeepSeek behave:

- `response_format` "json_schema" is refused with HTTP 400 ("This response_format type is
  unavailable now"); JSON mode and plain text are answered;
- latency is lognormal with the given median (`--latency`, sigma `--sigma`), slept with
  asyncio, so hundreds of requests wait at once at no CPU cost;
- `--fault-rate` of the requests get a 429 or a 500 (half each) after a short delay;
- usage reports prefix-cache hits in DeepSeek's fields (`prompt_cache_hit_tokens`,
  `prompt_cache_miss_tokens`): whole 64-token blocks of the prompt that some earlier prompt
  began with, as DeepSeek's disk cache counts them (a token is a whitespace word here).

The answers are the bench model's (`benchmodel.BenchModel.answer`): the participant comes
from the request's `X-Bench-Pid` header (else the model name `bench-<pid>`), the schema
from the JSON-mode instructions in the system message. `GET /stats` returns what was served: requests, faults, the sum of the
latencies slept (the benchmark's "model time"), when the first request arrived, and when
each session's first request arrived and the latency it slept in all (by its
`X-Bench-Session` header).

    PYTHONPATH=. .venv/bin/python benchmarks/provider_server.py --latency 2.0
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import re
import sys
import time
from typing import Any

BLOCK = 64
_SCHEMA = re.compile(r"It must match this JSON schema:\n(\{.*\})\s*$", re.DOTALL)
_MAX_BODY = 16 * 2**20


class Served:
    """The server's state: the answering model, the cache's blocks, the counters."""

    def __init__(self, args: argparse.Namespace) -> None:
        import benchmodel as bm

        self.model = bm.BenchModel([d.path.name for d in bm.task().datasets])
        self.median, self.sigma, self.fault_rate = args.latency, args.sigma, args.fault_rate
        self.rng = random.Random(args.seed)
        self.blocks: set[int] = set()
        self.stats: dict[str, Any] = {"requests": 0, "answered": 0, "faults": 0, "refused_format": 0,
                                      "model_s": 0.0, "first_request": None, "last_answer": None,
                                      "prompt_tokens": 0, "cached_tokens": 0, "first_by_session": {},
                                      "model_s_by_session": {}}
        self.max_requests = args.max_requests
        self.done = asyncio.Event()

    def cached(self, words: list[str]) -> int:
        """Tokens of `words` in whole blocks that an earlier prompt began with; remember these."""
        hits, key, hitting = 0, 0, True
        for start in range(0, len(words) - len(words) % BLOCK, BLOCK):
            key = hash((key, *words[start:start + BLOCK]))
            if hitting and key in self.blocks:
                hits += BLOCK
            else:
                hitting = False
                self.blocks.add(key)
        return hits

    async def reply(self, body: dict[str, Any], pid: str | None = None,
                    session: str | None = None) -> tuple[int, dict[str, Any]]:
        stats = self.stats
        stats["requests"] += 1
        stats["first_request"] = stats["first_request"] or time.time()
        if session is not None:
            stats["first_by_session"].setdefault(session, time.time())
        if self.max_requests and stats["requests"] >= self.max_requests:
            self.done.set()
        kind = (body.get("response_format") or {}).get("type", "text")
        if kind not in ("text", "json_object"):
            stats["refused_format"] += 1
            return 400, _error("This response_format type is unavailable now", "invalid_request_error")
        if self.rng.random() < self.fault_rate:
            stats["faults"] += 1
            await asyncio.sleep(0.05)
            return (429, _error("Rate limit reached for requests", "rate_limit_error")) if self.rng.random() < 0.5 \
                else (500, _error("The server had an error while processing your request", "server_error"))
        delay = self.median * math.exp(self.sigma * self.rng.gauss(0.0, 1.0))
        await asyncio.sleep(delay)
        stats["model_s"] += delay
        if session is not None:
            by_session = stats["model_s_by_session"]
            by_session[session] = by_session.get(session, 0.0) + delay
        messages = body.get("messages") or []
        system = str(messages[0].get("content", "")) if messages else ""
        found = _SCHEMA.search(system)
        schema = json.loads(found.group(1)) if found else {}
        pid = pid or str(body.get("model", "")).removeprefix("bench-")
        text = json.dumps(self.model.answer(pid, messages, schema))
        words = " ".join(str(m.get("content", "")) for m in messages).split()
        hits = self.cached(words)
        stats["answered"] += 1
        stats["prompt_tokens"] += len(words)
        stats["cached_tokens"] += hits
        stats["last_answer"] = time.time()
        usage = {"prompt_tokens": len(words), "completion_tokens": len(text.split()),
                 "total_tokens": len(words) + len(text.split()),
                 "prompt_cache_hit_tokens": hits, "prompt_cache_miss_tokens": len(words) - hits}
        return 200, {"id": f"chat-{stats['requests']}", "object": "chat.completion", "created": int(time.time()),
                     "model": body.get("model"), "usage": usage,
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": text}}]}


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


async def handle(served: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """HTTP/1.1 with keep-alive: one request after another on the connection."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
            length = min(int(headers.get("content-length", "0") or 0), _MAX_BODY)
            raw = await reader.readexactly(length) if length else b""
            if method == "GET" and path.rstrip("/") == "/stats":
                status, payload = 200, served.stats
            elif method == "POST" and path.rstrip("/").endswith("/chat/completions"):
                status, payload = await served.reply(json.loads(raw), headers.get("x-bench-pid"),
                                                   headers.get("x-bench-session"))
            else:
                status, payload = 404, _error(f"no route {method} {path}", "invalid_request_error")
            data = json.dumps(payload).encode()
            writer.write(f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\nContent-Type: application/json"
                         f"\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
            await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.CancelledError, ConnectionError, ValueError):
        pass  # the client went away, or the server is stopping
    finally:
        writer.close()


async def serve(args: argparse.Namespace) -> None:
    served = Served(args)
    server = await asyncio.start_server(lambda r, w: handle(served, r, w), "127.0.0.1", args.port, backlog=512)
    port = server.sockets[0].getsockname()[1]
    print(json.dumps({"port": port}), flush=True)
    loop = asyncio.get_running_loop()
    loop.call_later(args.max_seconds, served.done.set)
    loop.add_reader(sys.stdin.fileno(), lambda: None if sys.stdin.buffer.read1(1) else served.done.set())
    async with server:
        await served.done.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed as JSON on stdout)")
    parser.add_argument("--latency", type=float, default=2.0, help="median seconds per answer")
    parser.add_argument("--sigma", type=float, default=0.5, help="lognormal sigma of the latency")
    parser.add_argument("--fault-rate", type=float, default=0.02, help="share of requests answered 429 or 500")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=3600.0)
    parser.add_argument("--max-requests", type=int, default=0, help="stop after this many requests (0: no limit)")
    asyncio.run(serve(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
