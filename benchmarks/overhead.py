"""Where a session's time goes besides the model: scheduling, prompt building, kernel, store.

With an API model the model must be the bottleneck, never the suite. Phase 1 runs whole
stored sessions (real engine, real sandboxed kernel, real event log and records) with the
zero-latency scripted bench model and splits the suite's time per session by wrapping the
functions of each part: prompt building (observation + rendering), the gateway (litellm,
cache, validation), the kernel (start/close apart from running cells), the store (event
sink, snapshot, atomic records) and the rest: scheduling (engine loop, scheduler, gates,
events). Wall time and the suite process's CPU time are both recorded: on a shared machine
CPU time is the steadier figure. Phase 2 runs the same sessions with a fixed 1 s latency
per model call and reports the suite's overhead as a share of model time:
(wall - model time) / model time. Target: <= 2%.

Running the participants' code in the kernel is the study's work, not overhead; it is
reported apart (`kernel_cells`), and the share is given without and with it.

For comparison, Co-Gym's fixed sleeps for the same session shape, from its code's constants
(not run here): 5 s per member process spawned, 1 s `wait_time` after every agent step.

    PYTHONPATH=. .venv/bin/python benchmarks/overhead.py [--variants single,default-dr]
        [--sessions 2] [--latency 1.0] [--skip-latency]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchmodel as bm

from colabkit.llm import Gateway
from colabkit.session import Observation, engine
from colabkit.store import sink as sink_module
from colabkit.workspace import Workspace

TARGET_SHARE = 0.02
COGYM_SPAWN_S, COGYM_AGENT_WAIT_S = 5.0, 1.0
PARTS = ("prompt", "gateway", "kernel_start", "kernel_close", "kernel_cells", "store")


class Clock:
    """Wall and CPU seconds per part; a part's time excludes nothing (parts never nest here)."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)

    def wrap(self, owner: Any, name: str, part: str) -> None:
        fn = getattr(owner, name)
        raw = fn.__func__ if isinstance(fn, classmethod) else fn
        if asyncio.iscoroutinefunction(raw):
            @functools.wraps(raw)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                w, c = time.perf_counter(), time.process_time()
                try:
                    return await raw(*args, **kwargs)
                finally:
                    self.wall[part] += time.perf_counter() - w
                    self.cpu[part] += time.process_time() - c
            wrapped: Callable[..., Any] = timed_async
        else:
            @functools.wraps(raw)
            def timed(*args: Any, **kwargs: Any) -> Any:
                w, c = time.perf_counter(), time.process_time()
                try:
                    return raw(*args, **kwargs)
                finally:
                    self.wall[part] += time.perf_counter() - w
                    self.cpu[part] += time.process_time() - c
            wrapped = timed
        setattr(owner, name, wrapped)

    def reset(self) -> None:
        self.wall.clear()
        self.cpu.clear()


def instrument(clock: Clock) -> None:
    clock.wrap(engine._Session, "observe", "prompt")
    clock.wrap(Observation, "render", "prompt")
    clock.wrap(Gateway, "structured", "gateway")
    clock.wrap(Workspace, "execute", "kernel_cells")
    clock.wrap(Workspace, "snapshot", "store")
    clock.wrap(Workspace, "close", "kernel_close")
    clock.wrap(sink_module.JsonlEventSink, "emit", "store")
    clock.wrap(sink_module.JsonlEventSink, "finalise", "store")
    # `Workspace.open` is a classmethod: wrap the function and re-bind it as one.
    raw_open = Workspace.__dict__["open"].__func__

    async def timed_open(cls: type, *args: Any, **kwargs: Any) -> Any:
        w, c = time.perf_counter(), time.process_time()
        try:
            return await raw_open(cls, *args, **kwargs)
        finally:
            clock.wall["kernel_start"] += time.perf_counter() - w
            clock.cpu["kernel_start"] += time.process_time() - c
    Workspace.open = classmethod(timed_open)  # type: ignore[method-assign,assignment]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def one_session(variant: str, seed: int, out: Path, clock: Clock, model: bm.BenchModel) -> dict[str, Any]:
    clock.reset()
    calls0, model0 = model.calls, model.model_time
    kids0 = children_cpu()
    w, c = time.perf_counter(), time.process_time()
    folder = await bm.arecord_session(bm.spec(variant, seed), bm.task(), out=out)
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    model_time = model.model_time - model0
    parts_wall = {p: clock.wall.get(p, 0.0) for p in PARTS}
    parts_cpu = {p: clock.cpu.get(p, 0.0) for p in PARTS}
    # The gateway's wall time includes the model's latency; the rest of the gateway is suite time.
    parts_wall["gateway"] -= model_time
    parts_wall["scheduling"] = wall - model_time - sum(parts_wall[p] for p in PARTS)
    parts_cpu["scheduling"] = cpu - sum(parts_cpu[p] for p in PARTS)
    suite_wall = wall - model_time
    return {"variant": variant, "seed": seed, "session": folder.name, "calls": model.calls - calls0,
            "wall_s": wall, "cpu_s": cpu, "kernel_process_cpu_s": children_cpu() - kids0,
            "model_s": model_time, "suite_wall_s": suite_wall,
            "suite_wall_excl_cells_s": suite_wall - parts_wall["kernel_cells"],
            "parts_wall_s": parts_wall, "parts_cpu_s": parts_cpu}


async def run_phase(variants: list[str], sessions: int, latency: float, clock: Clock) -> list[dict[str, Any]]:
    model = bm.install(latency)
    rows = []
    with tempfile.TemporaryDirectory(prefix="colabkit-overhead-") as tmp:
        if not latency:  # warm-up (imports, litellm's first call, the isolation trial): not counted
            await bm.arecord_session(bm.spec("default-d", 99, budget=3), bm.task(), out=Path(tmp))
        for variant in variants:
            for seed in range(sessions):
                row = await one_session(variant, seed, Path(tmp), clock, model)
                rows.append(row)
                parts = "  ".join(f"{p} {v * 1000:6.0f}" for p, v in row["parts_wall_s"].items())
                print(f"{variant:<15} seed {seed}  calls {row['calls']:3d}  wall {row['wall_s']:6.2f} s  "
                      f"model {row['model_s']:6.2f} s  suite ms: {parts}", flush=True)
    return rows


def cogym_sleeps(variant: str, ai_calls: int) -> float:
    """Co-Gym's fixed sleeps for a session of this shape (one process per member)."""
    members = len(bm.variant(variant).team)
    return COGYM_SPAWN_S * members + COGYM_AGENT_WAIT_S * ai_calls


def summarise(zero: list[dict[str, Any]], slow: list[dict[str, Any]]) -> dict[str, Any]:
    by_variant: dict[str, Any] = {}
    for variant in dict.fromkeys(r["variant"] for r in zero):
        rows = [r for r in zero if r["variant"] == variant]
        parts = list(rows[0]["parts_wall_s"])
        entry: dict[str, Any] = {
            "calls": statistics.mean(r["calls"] for r in rows),
            "suite_wall_s": statistics.median(r["suite_wall_s"] for r in rows),
            "suite_cpu_s": statistics.median(r["cpu_s"] for r in rows),
            "kernel_process_cpu_s": statistics.median(r["kernel_process_cpu_s"] for r in rows),
            "per_call_wall_ms_excl_cells": 1000 * statistics.median(
                r["suite_wall_excl_cells_s"] / r["calls"] for r in rows),
            "parts_wall_s": {p: statistics.median(r["parts_wall_s"][p] for r in rows) for p in parts},
            "parts_cpu_s": {p: statistics.median(r["parts_cpu_s"][p] for r in rows) for p in parts},
        }
        late = [r for r in slow if r["variant"] == variant]
        if late:
            model = sum(r["model_s"] for r in late)
            over = sum(r["suite_wall_s"] for r in late)
            cells = sum(r["parts_wall_s"]["kernel_cells"] for r in late)
            ai_calls = entry["calls"] if variant == "single" else entry["calls"] / 2
            entry["latency"] = {
                "model_s": model,
                "overhead_share": over / model,
                "overhead_share_excl_cells": (over - cells) / model,
                "cpu_share": sum(r["cpu_s"] for r in late) / model,
                "cogym_sleep_share": sum(cogym_sleeps(variant, int(ai_calls)) for _ in late) / model,
            }
        by_variant[variant] = entry
    return by_variant


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="single,default-dr,scaffolded-dr,preassigned-dr")
    parser.add_argument("--latency-variants", default="single,default-dr",
                        help="variants run again with the model latency (each call costs --latency s)")
    parser.add_argument("--sessions", type=int, default=2, help="seeds per variant")
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args(argv)
    clock = Clock()
    instrument(clock)
    print("== phase 1: zero-latency bench model, real kernel and store")
    zero = asyncio.run(run_phase(args.variants.split(","), args.sessions, 0.0, clock))
    slow: list[dict[str, Any]] = []
    if not args.skip_latency:
        print(f"== phase 2: {args.latency:g} s per model call")
        slow = asyncio.run(run_phase(args.latency_variants.split(","), 1, args.latency, clock))
    summary = summarise(zero, slow)
    print("\nper session (medians)      calls  suite wall  suite CPU   ms/call*  " + "  ".join(
        f"{p:>12}" for p in next(iter(summary.values()))["parts_wall_s"]))
    for variant, entry in summary.items():
        print(f"{variant:<26} {entry['calls']:5.0f} {entry['suite_wall_s']:9.2f} s {entry['suite_cpu_s']:8.2f} s "
              f"{entry['per_call_wall_ms_excl_cells']:8.1f}  " + "  ".join(
                  f"{v * 1000:9.0f} ms" for v in entry["parts_wall_s"].values()))
    print("  (* suite wall per model call, kernel cells excluded)")
    met = True
    for variant, entry in summary.items():
        if "latency" not in entry:
            continue
        lat = entry["latency"]
        ok = lat["overhead_share_excl_cells"] <= TARGET_SHARE
        met = met and ok
        print(f"{variant}: overhead {lat['overhead_share']:.2%} of model time "
              f"({lat['overhead_share_excl_cells']:.2%} without running cells; suite CPU "
              f"{lat['cpu_share']:.2%}); Co-Gym's fixed sleeps alone {lat['cogym_sleep_share']:.0%} "
              f"-> target <= {TARGET_SHARE:.0%}: {'met' if ok else 'NOT met'}")
    bm.write_result("overhead", {"command": " ".join(["benchmarks/overhead.py", *sys.argv[1:]]),
                                 "target_share": TARGET_SHARE, "met": met if slow else None,
                                 "summary": summary, "sessions": zero, "latency_sessions": slow})


if __name__ == "__main__":
    main()
