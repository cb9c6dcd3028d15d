"""The suite's own CPU per model call on the real provider path, and what it means for a grid.

Runs whole sessions through `colabkit.runner.arun_sessions` (what a run_variant notebook
runs) with every role on `deepseek/deepseek-chat` (litellm's DeepSeek provider and prices;
each role's requests carry an `X-Bench-Pid` header for the server), the OpenAI SDK over real HTTP, JSON mode, retries, to `provider_server.py` on 127.0.0.1 (lognormal latency,
2% 429/500, prefix-cache usage; started here, stopped when this ends). Per concurrency level
(N = waves x the concurrency sessions, so the ideal is the same at every level; with one
wave the slowest session's sum of lognormal latencies, not the suite, adds about 10-15% to
wall / ideal) it reports:

- wall / ideal, ideal = the latency the server slept in all (its "model time") / concurrency;
- the suite's CPU: this process's (every thread) plus its kernels' (sampled), per answered
  request and per session; the server's CPU is not counted;
- the time from the batch's start (this process already running, colabkit imported, litellm
  not yet) to the server's first request, and each session's way there step by step
  (`timeline.py`: workspace open, kernel start, first prompt, litellm, arrival, answer) with
  the event loop's lag before it;
- wall / the slowest session's own latencies (what the suite adds to the one-wave bound);
- the projection for the paper grid (1,482 sessions at the measured calls per session): the
  measured throughput at the top level, beside the two bounds it cannot beat (latency:
  calls x mean latency / concurrency; CPU: the suite's CPU / the usable cores).

    PYTHONPATH=. .venv/bin/python benchmarks/provider.py [--concurrency 8,32,64] [--latency 2.0]
        [--budget 20] [--variant default-dr] [--label after]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import benchmodel as bm
import psutil
from timeline import Timeline, print_breakdown

from colabkit.llm import ModelConfig
from colabkit.runner import arun_sessions
from colabkit.session import SessionSettings, SessionSpec
from colabkit.team import variant

GRID = 1482
HERE = Path(__file__).resolve().parent


def spec(variant_name: str, seed: int, budget: int) -> SessionSpec:
    var = variant(variant_name)
    return SessionSpec(task_id=bm.TASK_ID, variant=var, seed=seed,
                       models={pid: ModelConfig(model="deepseek/deepseek-chat", extra={"extra_headers": {
                           "X-Bench-Pid": pid, "X-Bench-Session": str(seed)}})
                               for pid in var.team},
                       settings=SessionSettings(action_budget=budget))


def stats(base: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base}/stats", timeout=10) as reply:
        return json.loads(reply.read())


def descendants_cpu(me: psutil.Process, seen: dict[int, float]) -> None:
    """Record every descendant's CPU seconds so far (kernels are never waited for by this
    process, so `RUSAGE_CHILDREN` misses them; the last half second of each is missed here)."""
    for proc in me.children(recursive=True):
        try:
            times = proc.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        seen[proc.pid] = max(seen.get(proc.pid, 0.0), times.user + times.system)


async def sample_cpu(stop: asyncio.Event, seen: dict[int, float]) -> None:
    me = psutil.Process()
    while not stop.is_set():
        await asyncio.to_thread(descendants_cpu, me, seen)
        try:
            await asyncio.wait_for(stop.wait(), 0.5)
        except TimeoutError:
            pass


async def one_level(concurrency: int, n: int, args: argparse.Namespace, base: str, out: Path,
                    seed0: int) -> dict[str, Any]:
    items = [(spec(args.variant, seed0 + i, args.budget), bm.task()) for i in range(n)]
    before = await asyncio.to_thread(stats, base)
    stop, cpu_seen, cpu_before = asyncio.Event(), {}, {}
    await asyncio.to_thread(descendants_cpu, psutil.Process(), cpu_before)  # the server's, a template's so far
    sampler = asyncio.create_task(sample_cpu(stop, cpu_seen))
    load0 = os.getloadavg()
    timeline = Timeline()
    timeline.install()
    timeline.start()
    started, cpu0, t0 = time.time(), time.process_time(), time.perf_counter()
    waited0 = os.times()
    try:
        summary = await arun_sessions(items, out=out, sessions=concurrency, kernels=concurrency, progress=False)
    finally:
        timeline.uninstall()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    waited = os.times()
    helpers_cpu = (waited.children_user - waited0.children_user) + (waited.children_system - waited0.children_system)
    await timeline.stop()
    stop.set()
    await sampler
    after = await asyncio.to_thread(stats, base)
    timeline.add_arrivals(after.get("first_by_session", {}))
    found = timeline.breakdown()
    by_seed = {int(k): v for k, v in (after.get("model_s_by_session") or {}).items() if k.isdigit()}
    found["critical_path"] = timeline.critical_path(by_seed)
    kernels_cpu = sum(cpu - cpu_before.get(pid, 0.0) for pid, cpu in cpu_seen.items())
    answered = after["answered"] - before["answered"]
    model_s = after["model_s"] - before["model_s"]
    ideal = model_s / concurrency
    first = (after["first_request"] - started) if before["first_request"] is None else None
    # One wave: no session can end before its own latencies are slept; the slowest one's sum
    # bounds the wall time whatever the suite does (the ideal is the mean).
    by_session = after.get("model_s_by_session") or {}
    slowest = max(by_session.get(str(s.seed), 0.0) for s, _ in items)
    # ... and with the waits its retries made after the server's faults (the retry policy's
    # backoff: provider time no scheduler can shorten either)
    slowest_provider = max(by_session.get(str(s.seed), 0.0) + timeline.backoff.get(s.seed, 0.0) for s, _ in items)
    statuses = [o.status for o in summary.outcomes]
    suite_cpu = cpu + kernels_cpu
    row = {"concurrency": concurrency, "sessions": n, "requests": after["requests"] - before["requests"],
           "answered": answered, "faults": after["faults"] - before["faults"],
           "calls_per_session": answered / n, "wall_s": wall, "model_s": model_s, "ideal_s": ideal,
           "wall_over_ideal": wall / ideal if ideal else None,
           "slowest_session_model_s": slowest, "slowest_session_provider_s": slowest_provider,
           "retry_wait_s": sum(timeline.backoff.values()), "wall_over_slowest": wall / slowest if slowest else None, "cpu_s": cpu, "kernels_cpu_s": kernels_cpu,
           "cpu_per_call_ms": 1000 * suite_cpu / max(answered, 1), "cpu_per_session_s": suite_cpu / n,
           "process_cpu_per_call_ms": 1000 * cpu / max(answered, 1),
           "first_request_s": first, "waited_children_cpu_s": helpers_cpu, "first_request_breakdown": found,
           "done": statuses.count("done"), "failed": statuses.count("failed"),
           "failures": sorted({f"{o.ended_by}: {(o.error or '')[:300]}" for o in summary.outcomes
                               if o.status == "failed"}),
           "load_before": load0, "load_after": os.getloadavg(),
           "provider_cached_share": (after["cached_tokens"] - before["cached_tokens"])
           / max(after["prompt_tokens"] - before["prompt_tokens"], 1)}
    print(f"concurrency {concurrency:3d}: {n} sessions, {answered} calls ({answered / n:.1f}/session, "
          f"{row['faults']} faults), wall {wall:.1f} s, ideal {ideal:.1f} s, wall/ideal {row['wall_over_ideal']:.2f} "
          f"(the slowest session's own latencies {slowest:.1f} s: wall / that {wall / max(slowest, 1e-9):.2f}); "
          f"suite CPU {suite_cpu:.0f} s ({cpu:.0f} here + {kernels_cpu:.0f} kernels): "
          f"{row['cpu_per_call_ms']:.0f} ms/call, {row['cpu_per_session_s']:.1f} s/session; first request "
          f"{'-' if first is None else f'{first:.1f} s'}; done {row['done']}, failed {row['failed']}; "
          f"load {load0[0]:.1f} -> {row['load_after'][0]:.1f}; waited-for helpers (mkfs, mount, ...) "
          f"{helpers_cpu:.1f} s CPU", flush=True)
    print_breakdown(found)
    return row


def projection(top: dict[str, Any], cores: int, latency: float) -> dict[str, float]:
    """Hours for the grid: at the measured throughput, and the latency and CPU bounds."""
    calls = top["calls_per_session"]
    mean_latency = top["model_s"] / max(top["answered"], 1)
    return {"measured_h": GRID * top["wall_s"] / top["sessions"] / 3600,
            "latency_bound_h": GRID * calls * mean_latency / top["concurrency"] / 3600,
            "cpu_bound_h": GRID * top["cpu_per_session_s"] / cores / 3600}


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    server = subprocess.Popen([sys.executable, str(HERE / "provider_server.py"), "--latency", str(args.latency),
                               "--fault-rate", str(args.fault_rate), "--max-seconds", "7200"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ,
                                                                                  "PYTHONPATH": os.pathsep.join(
                                                                                      [str(HERE), os.environ.get("PYTHONPATH", "")])})
    try:
        assert server.stdout is not None
        base = f"http://127.0.0.1:{json.loads(server.stdout.readline())['port']}"
        os.environ["DEEPSEEK_API_BASE"], os.environ["DEEPSEEK_API_KEY"] = base, "sk-bench"
        rows, seed = [], 0
        for concurrency in args.levels:
            with tempfile.TemporaryDirectory(prefix="colabkit-provider-") as tmp:
                n = args.waves * concurrency
                rows.append(await one_level(concurrency, n, args, base, Path(tmp), seed))
                seed += n
        return rows
    finally:
        server.stdin.close() if server.stdin else None
        server.wait(30)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default="8,32,64")
    parser.add_argument("--latency", type=float, default=2.0, help="median seconds per answer (lognormal)")
    parser.add_argument("--fault-rate", type=float, default=0.02)
    parser.add_argument("--variant", default="default-dr")
    parser.add_argument("--budget", type=int, default=30, help="task-phase actions per side (30: ~60 calls)")
    parser.add_argument("--waves", type=int, default=2, help="sessions per level = waves x concurrency")
    parser.add_argument("--label", default="", help="a name for this run in results/provider.json")
    parser.add_argument("--profile", metavar="FILE", help="write this process's cProfile stats to FILE")
    args = parser.parse_args(argv)
    args.levels = [int(c) for c in args.concurrency.split(",")]
    if args.profile:
        import cProfile

        with cProfile.Profile() as profiler:
            rows = asyncio.run(run(args))
        profiler.dump_stats(args.profile)
    else:
        rows = asyncio.run(run(args))
    top, cores = rows[-1], len(os.sched_getaffinity(0))
    hours = projection(top, cores, args.latency)
    print(f"grid of {GRID} sessions at {top['calls_per_session']:.0f} calls each: {hours['measured_h']:.2f} h at the "
          f"throughput measured at {top['concurrency']} (bounds: latency {hours['latency_bound_h']:.2f} h, "
          f"CPU {hours['cpu_bound_h']:.2f} h on {cores} cores); target < 2 h: "
          f"{'met' if hours['measured_h'] < 2 else 'NOT met'}")
    print("\n| concurrency | wall / ideal | wall / slowest session's latencies | suite CPU per call | of it, the suite "
          "process | CPU per session | first request (first / last session) | load before -> after |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        sent = row["first_request_breakdown"]["steps"].get("sent", {})
        print(f"| {row['concurrency']} | {row['wall_over_ideal']:.2f} | {row['wall_over_slowest'] or 0:.2f} | "
              f"{row['cpu_per_call_ms']:.0f} ms | {row['process_cpu_per_call_ms']:.1f} ms | {row['cpu_per_session_s']:.1f} s | "
              f"{sent.get('first', float('nan')):.1f} / {sent.get('last', float('nan')):.1f} s | "
              f"{row['load_before'][0]:.1f} -> {row['load_after'][0]:.1f} |")
    path = bm.RESULTS / "provider.json"
    runs = json.loads(path.read_text())["runs"] if path.is_file() else []
    runs.append({"label": args.label, "command": " ".join(["benchmarks/provider.py", *sys.argv[1:]]),
                 "latency_s": args.latency, "variant": args.variant, "budget": args.budget, "projection": hours,
                 "machine": bm.machine(), "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "levels": rows})
    bm.write_result("provider", {"runs": runs})


if __name__ == "__main__":
    main()
