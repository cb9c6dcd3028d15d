"""What a batch does before its first model request: a timeline of every session's start.

For `provider.py`. `Timeline.install()` wraps, for the benchmark's process only (undone by
`uninstall`), the steps a session takes from the batch's start to its first answer, and
stamps each session's first pass through each with `time.monotonic()`:

    queued          run_one entered (the session's asyncio task began)
    slot            the process cap and the machine slot held (record_if_needed entered)
    ws_open         Workspace.open entered          ws_opened   it returned
    kernel_start    SandboxedKernel.start entered   kernel_spawned  its process launched
    kernel_ready    the kernel answered (start returned)
    ended           run_one returned (the session was recorded)
    prompt          the first model request built (Gateway._request entered)
    litellm         litellm.acompletion entered     response    it returned

plus `sent` (the server's arrival time of the session's first request, from the server's
per-session stats, converted to this clock) and an event-loop lag probe (a 20 ms timer;
how late it fires is how long the loop was blocked by synchronous work). A session is told
apart by a context variable set when its task enters `run_one`; tasks it starts (its kernel
start) inherit it. Only names that exist in every version of the suite being compared are
wrapped, so the same timeline runs against "before" and "after" trees.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import itertools
import statistics
import time
from collections.abc import Callable
from typing import Any

SESSION: contextvars.ContextVar[int | None] = contextvars.ContextVar("bench_session", default=None)
STEPS = ("queued", "slot", "ws_open", "ws_opened", "kernel_start", "kernel_spawned", "kernel_ready",
         "prompt", "litellm", "sent", "response")
LAG_TICK_S = 0.02


class Timeline:
    """Per-session first-time marks, the loop's lag, and the patches that feed them."""

    def __init__(self) -> None:
        self.marks: dict[int, dict[str, float]] = {}
        self.backoff: dict[int, float] = {}  # per session: seconds its retries waited (the provider's faults)
        self.kernel_wait: dict[int, float] = {}  # per session: how long its first cell waited for its kernel
        self.t0 = time.monotonic()
        self.lags: list[tuple[float, float]] = []  # (when, how late the tick fired)
        self._undo: list[Callable[[], None]] = []
        self._lag_task: asyncio.Task[None] | None = None

    def mark(self, step: str) -> None:
        session = SESSION.get()
        if session is not None:
            self.marks.setdefault(session, {}).setdefault(step, time.monotonic())

    def start(self) -> None:
        """The batch starts now (call inside the loop): marks are relative to it; lag probing begins."""
        self.marks.clear()
        self.backoff.clear()
        self.kernel_wait.clear()
        self.lags.clear()
        self.t0 = time.monotonic()
        self._lag_task = asyncio.create_task(self._probe_lag())

    async def stop(self) -> None:
        if self._lag_task is not None:
            self._lag_task.cancel()
            await asyncio.gather(self._lag_task, return_exceptions=True)

    async def _probe_lag(self) -> None:
        while True:
            due = time.monotonic() + LAG_TICK_S
            await asyncio.sleep(LAG_TICK_S)
            now = time.monotonic()
            self.lags.append((now, max(0.0, now - due)))

    def add_arrivals(self, arrivals: dict[str, float]) -> None:
        """The server's first-arrival wall times per session key: stamp them as `sent`."""
        offset = time.monotonic() - time.time()
        for key, wall in arrivals.items():
            if key.isdigit() and int(key) in self.marks:
                self.marks[int(key)].setdefault("sent", wall + offset)

    # -- patches -----------------------------------------------------------------------
    def _patch(self, owner: Any, name: str, wrapper: Callable[[Any], Any]) -> None:
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        setattr(owner, name, wrapper(original))
        self._undo.append(lambda: setattr(owner, name, original))

    def install(self) -> None:
        import litellm

        from colabkit.llm.gateway import Gateway
        from colabkit.llm.retry import RetryPolicy
        from colabkit.runner import batch
        from colabkit.runner.executors import one_session
        from colabkit.workspace.kernel import SandboxedKernel
        from colabkit.workspace.workspace import Workspace

        timeline = self

        def run_one(original: Any) -> Any:
            @functools.wraps(original)
            async def wrapped(spec: Any, *args: Any, **kwargs: Any) -> Any:
                SESSION.set(spec.seed)  # this task's context: what it starts inherits it
                timeline.mark("queued")
                try:
                    return await original(spec, *args, **kwargs)
                finally:
                    timeline.mark("ended")
            return wrapped

        def entered(step: str) -> Callable[[Any], Any]:
            def wrap(original: Any) -> Any:
                @functools.wraps(original)
                async def wrapped(*args: Any, **kwargs: Any) -> Any:
                    timeline.mark(step)
                    return await original(*args, **kwargs)
                return wrapped
            return wrap

        def around(begin: str, end: str) -> Callable[[Any], Any]:
            def wrap(original: Any) -> Any:
                @functools.wraps(original)
                async def wrapped(*args: Any, **kwargs: Any) -> Any:
                    timeline.mark(begin)
                    result = await original(*args, **kwargs)
                    timeline.mark(end)
                    return result
                return wrapped
            return wrap

        def ws_open(original: Any) -> Any:
            function = original.__func__

            async def wrapped(cls: Any, *args: Any, **kwargs: Any) -> Any:
                timeline.mark("ws_open")
                result = await function(cls, *args, **kwargs)
                timeline.mark("ws_opened")
                return result
            return classmethod(wrapped)

        def retrying(original: Any) -> Any:
            @functools.wraps(original)
            def wrapped(policy: Any, transient: Any) -> Any:
                loop = original(policy, transient)
                real_sleep = loop.sleep

                async def sleep(seconds: float) -> None:
                    session = SESSION.get()
                    if session is not None:
                        timeline.backoff[session] = timeline.backoff.get(session, 0.0) + seconds
                    await real_sleep(seconds)

                loop.sleep = sleep
                return loop
            return wrapped

        def first_cell(original: Any) -> Any:
            @functools.wraps(original)
            async def wrapped(ws: Any) -> Any:
                started = time.monotonic()
                try:
                    return await original(ws)
                finally:
                    session = SESSION.get()
                    if session is not None:
                        timeline.kernel_wait.setdefault(session, time.monotonic() - started)
            return wrapped

        self._patch(batch, "run_one", run_one)
        self._patch(Workspace, "_kernel_started", first_cell)
        self._patch(RetryPolicy, "retrying", retrying)
        self._patch(one_session, "record_if_needed", entered("slot"))
        self._patch(Workspace, "open", ws_open)
        self._patch(SandboxedKernel, "start", around("kernel_start", "kernel_ready"))
        self._patch(SandboxedKernel, "_connect", entered("kernel_spawned"))
        self._patch(Gateway, "_request", entered("prompt"))
        self._patch(litellm, "acompletion", around("litellm", "response"))

    def critical_path(self, provider_s: dict[int, float], top: int = 3) -> list[dict[str, float]]:
        """The sessions that ended last, each one's wall split: before its first request went
        out, its provider time (latencies and retry waits), its first cell's wait for its
        kernel, and the rest (cells, the suite's own work and its queueing for the CPU, the
        close and the record). The last one's end is the batch's wall."""
        rows = []
        for session, marks in self.marks.items():
            if "ended" not in marks:
                continue
            end = marks["ended"] - self.t0
            sent = marks.get("sent", marks.get("litellm", self.t0)) - self.t0
            provider = provider_s.get(session, 0.0) + self.backoff.get(session, 0.0)
            wait = self.kernel_wait.get(session, 0.0)
            rows.append({"session": session, "end_s": end, "first_request_s": sent, "provider_s": provider,
                         "kernel_wait_s": wait, "rest_s": end - sent - provider - wait})
        return sorted(rows, key=lambda r: -r["end_s"])[:top]

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()

    # -- report ------------------------------------------------------------------------
    def breakdown(self) -> dict[str, Any]:
        """Per step: how many sessions reached it, and when (s after the batch's start):
        the first, the median and the last session; with the loop's lag before the first request."""
        steps: dict[str, dict[str, float]] = {}
        for step in STEPS:
            times = sorted(m[step] - self.t0 for m in self.marks.values() if step in m)
            if times:
                steps[step] = {"n": len(times), "first": times[0], "median": statistics.median(times),
                               "last": times[-1]}
        first_sent = steps.get("sent", {}).get("first")
        horizon = self.t0 + (first_sent if first_sent is not None else 0.0)
        before = [lag for when, lag in self.lags if when <= horizon]
        gaps = {}  # per session: median time between consecutive steps
        for a, b in itertools.pairwise(STEPS):
            spans = [m[b] - m[a] for m in self.marks.values() if a in m and b in m]
            if spans:
                gaps[f"{a}->{b}"] = statistics.median(spans)
        return {"steps": steps, "median_step_s": gaps,
                "loop_lag_before_first_request": {"ticks": len(before), "max_s": max(before, default=0.0),
                                                  "blocked_s": sum(before)},
                "loop_lag_max_s": max((lag for _, lag in self.lags), default=0.0)}


def print_breakdown(found: dict[str, Any]) -> None:
    steps = found["steps"]
    print("  first request, step by step (s after the batch's start; first / median / last session):")
    for step in STEPS:
        if step in steps:
            s = steps[step]
            print(f"    {step:15s} {s['first']:7.2f} {s['median']:7.2f} {s['last']:7.2f}   ({s['n']:.0f} sessions)")
    lag = found["loop_lag_before_first_request"]
    print(f"  event loop before the first request: blocked {lag['blocked_s']:.2f} s in all, longest "
          f"{lag['max_s']:.2f} s ({lag['ticks']} ticks of {LAG_TICK_S * 1000:.0f} ms); "
          f"longest over the level {found['loop_lag_max_s']:.2f} s")
    spans = ", ".join(f"{k} {v:.2f}" for k, v in found["median_step_s"].items())
    print(f"  median per session: {spans}", flush=True)
    for row in found.get("critical_path", []):
        print(f"  ended at {row['end_s']:.1f} s: first request {row['first_request_s']:.1f} s + provider "
              f"{row['provider_s']:.1f} s + first cell's wait for its kernel {row['kernel_wait_s']:.1f} s + the rest "
              f"{row['rest_s']:.1f} s (cells, the suite, the close)", flush=True)
