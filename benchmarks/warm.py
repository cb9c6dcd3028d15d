"""Cold vs warm kernels side by side in one run: kernel start CPU, and whole batches over HTTP.

Part 1, kernel start: `--starts` workspaces per kind, cold and warm interleaved, each opened
and given one pandas cell (`import pandas; read_csv`). For each: the CPU seconds of the
kernel's process tree (bubblewrap, the sandbox's init, the kernel) when it first answers,
and what the first pandas cell adds; for warm, once per process, the template's own start
(its imports). Cold is today's start; warm forks from the template (`colabkit.workspace.warm`).

Part 2, batches: the provider benchmark's grid (`provider.py`: default-dr sessions whose
every role is `deepseek/deepseek-chat` over real HTTP to the local server, lognormal latency,
2% faults), one wave of N sessions at N = each `--concurrency`, cold then warm at each level.
Per level and kind it reports the wall time over the best bound no scheduler can beat,
max(total latency / concurrency, CPU floor = suite + kernel CPU / cores, the slowest
session's own serial latency), the suite's CPU per session, and when the first and the last
session's first request went out.

    PYTHONPATH=. nice .venv/bin/python benchmarks/warm.py [--starts 4] [--concurrency 8,32,64]
        [--budget 4] [--latency 2.0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import benchmodel as bm
import provider
import psutil

from colabkit.workspace import Workspace, warm

GRID = 1482
CSV = "x,y\n" + "".join(f"{i},{i * i}\n" for i in range(5000))
CELL = "import pandas as pd\ndf = pd.read_csv('data/bench.csv')\nprint(df.shape)"


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process and its live descendants."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


async def one_start(kind: str, data: Path) -> dict[str, float]:
    t0 = time.perf_counter()
    async with await Workspace.open([data], kernel_start=kind) as ws:  # type: ignore[arg-type]
        ready = time.perf_counter() - t0
        proc = ws._kernel._proc
        assert proc is not None and ws.isolation.kernel_start == kind, ws.isolation
        start_cpu = tree_cpu(proc.pid)
        cell = await ws.execute(CELL, author="bench")
        assert cell.status == "ok", cell.error
        cell_cpu = tree_cpu(proc.pid) - start_cpu
    return {"ready_s": ready, "start_cpu_s": start_cpu, "pandas_cell_cpu_s": cell_cpu}


async def starts(n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "bench.csv"
        data.write_text(CSV)
        t0 = time.perf_counter()
        template = await asyncio.to_thread(warm.template, warm.choose("auto")[0])
        rows: dict[str, list[dict[str, float]]] = {"cold": [], "warm": []}
        for _ in range(n):
            for kind in ("cold", "warm"):
                rows[kind].append(await one_start(kind, data))
    out: dict[str, Any] = {"template": {"ready_s": time.perf_counter() - t0, "import_cpu_s": template.import_cpu_s,
                                        "address_space_mb": template.memory_mb, "preloaded": template.preloaded}}
    for kind, runs in rows.items():
        out[kind] = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    out["start_cpu_ratio"] = out["warm"]["start_cpu_s"] / out["cold"]["start_cpu_s"]
    out["start_and_cell_ratio"] = (out["warm"]["start_cpu_s"] + out["warm"]["pandas_cell_cpu_s"]) / \
        (out["cold"]["start_cpu_s"] + out["cold"]["pandas_cell_cpu_s"])
    for kind in ("cold", "warm"):
        r = out[kind]
        print(f"{kind}: ready in {r['ready_s']:.2f} s, kernel start {r['start_cpu_s']:.3f} CPU-s, "
              f"first pandas cell {r['pandas_cell_cpu_s']:.3f} CPU-s (medians of {n})", flush=True)
    t = out["template"]
    print(f"template (once per process): {t['import_cpu_s']:.2f} CPU-s of imports, ready after "
          f"{t['ready_s']:.1f} s, {t['address_space_mb']} MB address space; warm/cold kernel start CPU "
          f"{out['start_cpu_ratio']:.2f}, start + first pandas cell {out['start_and_cell_ratio']:.2f}", flush=True)
    return out


def bound(row: dict[str, Any], cores: int) -> dict[str, float]:
    floor = (row["cpu_s"] + row["kernels_cpu_s"]) / cores
    best = max(row["ideal_s"], floor, row["slowest_session_model_s"])
    sent = row["first_request_breakdown"]["steps"].get("sent", {})
    return {"cpu_floor_s": floor, "bound_s": best, "wall_over_bound": row["wall_s"] / best,
            "first_request_first_s": sent.get("first", float("nan")),
            "first_request_last_s": sent.get("last", float("nan"))}


async def batches(args: argparse.Namespace) -> list[dict[str, Any]]:
    cores = len(os.sched_getaffinity(0))
    server = subprocess.Popen([sys.executable, str(provider.HERE / "provider_server.py"), "--latency",
                               str(args.latency), "--fault-rate", str(args.fault_rate), "--max-seconds", "3600"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(provider.HERE)})
    assert server.stdout is not None and server.stdin is not None
    base = f"http://127.0.0.1:{json.loads(server.stdout.readline())['port']}"
    os.environ["DEEPSEEK_API_BASE"], os.environ["DEEPSEEK_API_KEY"] = base, "sk-bench"
    rows = []
    # The template starts once per process (part 1 started it, or here): a batch pays it once,
    # not per level. Its CPU still counts in every warm level's kernel CPU (it is sampled
    # with the other descendants), so the warm CPU floor errs high.
    await asyncio.to_thread(warm.template, warm.choose("auto")[0])
    try:
        seed = 0
        for concurrency in args.levels:
            for kind in ("cold", "warm"):
                os.environ[warm.MODE_ENV] = kind
                print(f"\n== {kind}, {concurrency} sessions", flush=True)
                with tempfile.TemporaryDirectory(prefix="colabkit-warm-") as tmp:
                    row = await provider.one_level(concurrency, concurrency, args, base, Path(tmp), seed)
                seed += concurrency  # fresh sessions (no cache hits): the same grid shape, new seeds
                row.update(kind=kind, **bound(row, cores))
                rows.append(row)
                print(f"   {kind} at {concurrency}: wall {row['wall_s']:.1f} s over max(latency/concurrency "
                      f"{row['ideal_s']:.1f}, CPU floor {row['cpu_floor_s']:.1f}, slowest session "
                      f"{row['slowest_session_model_s']:.1f}) = {row['wall_over_bound']:.2f}; CPU/session "
                      f"{row['cpu_per_session_s']:.2f} s; first request {row['first_request_first_s']:.1f} s, "
                      f"last session's {row['first_request_last_s']:.1f} s", flush=True)
    finally:
        os.environ.pop(warm.MODE_ENV, None)
        server.stdin.close()
        server.wait(30)
    return rows


def projections(rows: list[dict[str, Any]], cores: int) -> dict[str, Any]:
    """Hours for the paper grid and ten times it, per kind, from the top level's figures:
    at the measured throughput on this machine, and on a Dask cluster of `machines` such
    machines (each one a copy of this measurement; no scheduler overhead counted)."""
    top = max(r["concurrency"] for r in rows)
    out: dict[str, Any] = {}
    for row in (r for r in rows if r["concurrency"] == top):
        per_session_s = row["wall_s"] / row["sessions"]
        out[row["kind"]] = {
            "grid_h_one_machine": GRID * per_session_s / 3600,
            "grid_cpu_bound_h": GRID * row["cpu_per_session_s"] / cores / 3600,
            "ten_grids_h_on_10_machines": 10 * GRID * per_session_s / 10 / 3600,
            "ten_grids_h_on_1_machine": 10 * GRID * per_session_s / 3600}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=4, help="workspaces per kind in part 1")
    parser.add_argument("--concurrency", default="8,32,64", help="'' skips part 2")
    parser.add_argument("--latency", type=float, default=2.0)
    parser.add_argument("--fault-rate", type=float, default=0.02)
    parser.add_argument("--variant", default="default-dr")
    parser.add_argument("--budget", type=int, default=4, help="task-phase actions per side")
    parser.add_argument("--name", default="warm", help="results/<name>.json (several runs keep apart)")
    args = parser.parse_args(argv)
    args.levels = [int(c) for c in args.concurrency.split(",") if c]
    cores = len(os.sched_getaffinity(0))
    load0 = os.getloadavg()
    started = time.strftime("%H:%M", time.gmtime())
    result: dict[str, Any] = {"starts": asyncio.run(starts(args.starts)) if args.starts else None}
    rows = asyncio.run(batches(args)) if args.levels else []
    result.update(levels=rows, projection=projections(rows, cores) if rows else None)
    print(f"\nrun {started}-{time.strftime('%H:%M', time.gmtime())} UTC, load {load0[0]:.1f} -> "
          f"{os.getloadavg()[0]:.1f} on {cores} cores")
    print("| sessions | kernels | wall | latency / concurrency | CPU floor | slowest session | wall / bound "
          "| CPU per session | first request: first / last session |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['concurrency']} | {r['kind']} | {r['wall_s']:.1f} s | {r['ideal_s']:.1f} s | "
              f"{r['cpu_floor_s']:.1f} s | {r['slowest_session_model_s']:.1f} s | **{r['wall_over_bound']:.2f}** | "
              f"{r['cpu_per_session_s']:.2f} s | {r['first_request_first_s']:.1f} / {r['first_request_last_s']:.1f} s |")
    if result["projection"]:
        for kind, p in result["projection"].items():
            print(f"{kind}: grid of {GRID} {p['grid_h_one_machine']:.2f} h on this machine (CPU bound "
                  f"{p['grid_cpu_bound_h']:.2f} h); ten grids {p['ten_grids_h_on_1_machine']:.1f} h here, "
                  f"{p['ten_grids_h_on_10_machines']:.2f} h on 10 such machines")
    result.update(command=" ".join(["benchmarks/warm.py", *sys.argv[1:]]), load_before=load0,
                  load_after=os.getloadavg(), budget=args.budget, latency_s=args.latency, variant=args.variant)
    bm.write_result(args.name, result)


if __name__ == "__main__":
    main()
