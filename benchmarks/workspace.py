"""Workspace kernel costs: isolation trial, kernel start latency, per-cell overhead, recovery.

Run on demand (not part of the tests):  .venv/bin/python benchmarks/workspace.py [--cells 50]

Start latency is what every session pays once; per-cell overhead (a `pass` cell's round
trip) is what every code action pays on top of the code itself; recovery is the cost of a
kernel death (restart plus replay of the earlier cells).  Each isolation level available
on this machine is measured, so the price of the sandbox is visible.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from colabkit.workspace import Limits, Workspace
from colabkit.workspace.isolation import choose


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


async def measure(level: str, data: Path, *, starts: int, cells: int) -> dict[str, float]:
    opened = []
    for _ in range(starts):
        t0 = time.perf_counter()
        ws = await Workspace.open([data], isolation=level, limits=Limits(cell_timeout_s=60))
        opened.append(time.perf_counter() - t0)
        await ws.close()
    async with await Workspace.open([data], isolation=level) as ws:
        await ws.execute("pass", author="bench")  # warm-up
        laps = []
        for _ in range(cells):
            t0 = time.perf_counter()
            await ws.execute("pass", author="bench")
            laps.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await ws.execute("import pandas as pd\ndf = pd.read_csv('data/bench.csv')", author="bench")
        pandas_cell = time.perf_counter() - t0
        t0 = time.perf_counter()
        died = await ws.execute("import ctypes; ctypes.string_at(0)", author="bench")
        recovery = time.perf_counter() - t0
        assert died.restarted
    laps.sort()
    return {"start median": statistics.median(opened), "start max": max(opened),
            "cell median": statistics.median(laps), "cell p95": laps[int(0.95 * (len(laps) - 1))],
            "pandas import+read": pandas_cell, f"segfault recovery ({cells + 2} cells)": recovery}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=50, help="trivial cells to time")
    parser.add_argument("--starts", type=int, default=3, help="kernel starts to time")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    best, notes = choose("auto")
    print(f"isolation trial (once per process): {_ms(time.perf_counter() - t0)}  -> {best.level}")
    for note in notes:
        print(f"  note: {note}")
    levels = [best.level] + (["rlimits-only"] if best.level != "rlimits-only" else [])
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "bench.csv"
        data.write_text("x,y\n" + "".join(f"{i},{i * i}\n" for i in range(10_000)))
        for level in levels:
            print(f"\n{level}")
            for name, value in asyncio.run(measure(level, data, starts=args.starts, cells=args.cells)).items():
                print(f"  {name:<32}{_ms(value)}")


if __name__ == "__main__":
    main()
