"""Many sessions at once through the batch runner: wall time over ideal, memory per live session.

A grid is 1,482 sessions of 30-60 model calls; with an API model a session mostly waits, so
the runner keeps many in flight (asyncio, one process). This runs N whole sessions with a
fixed model latency (default 1 s per call, the scripted bench model) through
`colabkit.runner.arun_sessions` at each concurrency (default 1, 8, 32, 64; N = 2 x the
concurrency, so the ideal time is the same at every level) and reports

- wall / ideal, where ideal = total model time / concurrency (target <= 1.1 at 64): what the
  suite adds on top of waiting, kernels included. tau2-bench measured a ceiling of about 10
  concurrent simulations per process; Co-Gym runs one OS process per member;
- the CPU the level needed, this process's and its kernels' (sampled with the memory; a
  slight undercount), and the floor it sets on a machine with this many cores:
  CPU seconds / cores. When the floor is above the ideal, no scheduler can reach the ideal
  there; wall / max(ideal, floor) then says how close the runner comes to what the machine allows;
- peak memory per live session, kernel included: the proportional set size (PSS, shared
  pages split between processes) of this process and all its children, sampled every 0.5 s,
  over the sessions alive at the peak. It is the typical footprint behind the runner's
  default kernel cap (`colabkit.runner.executors.capacity.TYPICAL_SESSION_MB`, checked here; the cap
  itself reserves each kernel's worst case under the sandbox limits; printed, see README).

    PYTHONPATH=. .venv/bin/python benchmarks/batch.py [--concurrency 1,8,32,64] [--latency 1.0]
        [--budget 30] [--variant default-d]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import benchmodel as bm
import psutil

from colabkit.runner import arun_sessions
from colabkit.runner.executors.capacity import MEMORY_SHARE, TYPICAL_SESSION_MB, machine_kernel_cap

TARGET_RATIO = 1.1


def memory_now(me: psutil.Process, cpu_seen: dict[int, float] | None = None) -> tuple[float, int]:
    """(PSS of this process and its descendants in bytes, live kernels = descendant Python processes).

    With `cpu_seen`, also records each descendant's CPU seconds so far (kernels are not
    waited for by this process, so `RUSAGE_CHILDREN` never sees them).
    """
    total, kernels = 0.0, 0
    for proc in [me, *me.children(recursive=True)]:
        try:
            info = proc.memory_full_info()
            total += getattr(info, "pss", info.rss)
            if proc.pid != me.pid:
                if cpu_seen is not None:
                    times = proc.cpu_times()
                    cpu_seen[proc.pid] = max(cpu_seen.get(proc.pid, 0.0), times.user + times.system)
                if "python" in proc.name().lower():
                    kernels += 1
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total, kernels


async def sample(me: psutil.Process, into: list[tuple[float, float, int]], stop: asyncio.Event,
                 cpu_seen: dict[int, float]) -> None:
    while not stop.is_set():
        pss, kernels = await asyncio.to_thread(memory_now, me, cpu_seen)
        into.append((time.perf_counter(), pss, kernels))
        try:
            await asyncio.wait_for(stop.wait(), 0.5)
        except TimeoutError:
            pass


async def one_level(concurrency: int, n: int, variant: str, budget: int, model: bm.BenchModel,
                    out: Path) -> dict[str, Any]:
    me = psutil.Process()
    base_pss, _ = memory_now(me)
    items = [(bm.spec(variant, seed, budget=budget), bm.task()) for seed in range(n)]
    samples: list[tuple[float, float, int]] = []
    stop = asyncio.Event()
    cpu_seen: dict[int, float] = {}
    sampler = asyncio.create_task(sample(me, samples, stop, cpu_seen))
    calls0, model0 = model.calls, model.model_time
    cpu0, t0 = time.process_time(), time.perf_counter()
    summary = await arun_sessions(items, out=out, sessions=concurrency, kernels=concurrency, progress=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    stop.set()
    await sampler
    kernels_cpu = sum(cpu_seen.values())  # sampled every 0.5 s: the last half second of each is missed
    floor = (cpu + kernels_cpu) / len(os.sched_getaffinity(0))
    calls, model_time = model.calls - calls0, model.model_time - model0
    ideal = model_time / concurrency
    peak = max(samples, key=lambda s: s[1]) if samples else (0.0, base_pss, 0)
    live = max(peak[2], 1)
    per_session = (peak[1] - base_pss) / live
    statuses = [o.status for o in summary.outcomes]
    return {"concurrency": concurrency, "sessions": n, "calls": calls, "wall_s": wall, "cpu_s": cpu,
            "kernels_cpu_s": kernels_cpu, "cpu_floor_s": floor,
            "wall_over_bound": wall / max(ideal, floor) if ideal else None,
            "model_s": model_time, "ideal_s": ideal, "wall_over_ideal": wall / ideal if ideal else None,
            "peak_pss_mb": peak[1] / 2**20, "base_pss_mb": base_pss / 2**20, "live_kernels_at_peak": peak[2],
            "per_live_session_mb": per_session / 2**20, "done": statuses.count("done"),
            "failed": statuses.count("failed"),
            "mean_kernels_alive": statistics.mean(s[2] for s in samples) if samples else 0}


async def run(levels: list[int], latency: float, variant: str, budget: int) -> list[dict[str, Any]]:
    model = bm.install(latency)
    rows = []
    for concurrency in levels:
        with tempfile.TemporaryDirectory(prefix="colabkit-batch-") as tmp:
            row = await one_level(concurrency, 2 * concurrency, variant, budget, model, Path(tmp))
        rows.append(row)
        print(f"concurrency {concurrency:3d}: {row['sessions']:4d} sessions, {row['calls']:5d} calls, "
              f"wall {row['wall_s']:7.1f} s, ideal {row['ideal_s']:7.1f} s, wall/ideal "
              f"{row['wall_over_ideal']:.3f}; CPU {row['cpu_s']:.0f} s here + {row['kernels_cpu_s']:.0f} s kernels "
              f"-> floor {row['cpu_floor_s']:.0f} s, wall/max(ideal, floor) {row['wall_over_bound']:.3f}; "
              f"peak {row['peak_pss_mb']:.0f} MB with "
              f"{row['live_kernels_at_peak']} kernels -> {row['per_live_session_mb']:.0f} MB per live session; "
              f"done {row['done']}, failed {row['failed']}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default="1,8,32,64")
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--variant", default="default-d")
    parser.add_argument("--budget", type=int, default=30, help="task-phase steps per side (30: full sessions)")
    args = parser.parse_args(argv)
    levels = [int(c) for c in args.concurrency.split(",")]
    rows = asyncio.run(run(levels, args.latency, args.variant, args.budget))
    top = rows[-1]
    # The level with the most live kernels: this process's own growth is spread the thinnest there.
    widest = max(rows, key=lambda r: r["live_kernels_at_peak"])
    per_session = widest["per_live_session_mb"]
    machine_mb = psutil.virtual_memory().total / 2**20
    cap = max(1, int(MEMORY_SHARE * machine_mb // per_session)) if per_session > 0 else None
    derived = machine_kernel_cap()
    within = per_session <= TYPICAL_SESSION_MB
    met = top["wall_over_ideal"] is not None and top["wall_over_ideal"] <= TARGET_RATIO
    print(f"wall/ideal at {top['concurrency']}: {top['wall_over_ideal']:.3f} (target <= {TARGET_RATIO} at 64"
          f"{'' if top['concurrency'] >= 64 else ', not run'}: {'met' if met else 'NOT met'} at {top['concurrency']}); memory per live session {per_session:.0f} MB -> kernel cap for "
          f"{MEMORY_SHARE:.0%} of {machine_mb / 1024:.1f} GB at the typical footprint: {cap}")
    print(f"runner's typical footprint {TYPICAL_SESSION_MB} MB per session: "
          f"{'covers' if within else 'BELOW'} the measured {per_session:.0f} MB; "
          f"runner's default kernel cap here: {derived.describe()}")
    bm.write_result("batch", {"command": " ".join(["benchmarks/batch.py", *sys.argv[1:]]), "latency_s": args.latency,
                              "variant": args.variant, "budget": args.budget, "target_ratio": TARGET_RATIO,
                              "met_at_top_level": met, "top_level": top["concurrency"],
                              "per_session_from_level": widest["concurrency"],
                              "per_live_session_mb": per_session, "memory_share": MEMORY_SHARE,
                              "kernel_cap_at_typical_footprint": cap,
                              "typical_session_mb_covers_measured": within,
                              "runner_default_kernel_cap": derived.model_dump(), "levels": rows})


if __name__ == "__main__":
    main()
