"""Kernels start under CPU load: the machine busy with more spinning processes than it has
cores, several workspaces start their kernels at once (warm and cold), and each serves its
first cell without needing its second attempt. Bounded: the load runs only while the kernels
start, and is killed however the test ends."""

from __future__ import annotations

import asyncio
import multiprocessing
import os

import pytest

from colabkit.workspace import Workspace

CSV = "year,capital\n2000,1.5\n2001,2.5\n"
WORKSPACES = 3
SPINNERS_PER_CORE = 3
BOUND_S = 120.0  # far above a start under this load (seconds), far below a hang


def _spin() -> None:
    while True:
        pass


@pytest.fixture
def cpu_load():
    """More busy processes than cores (`SPINNERS_PER_CORE` each), killed at the end."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    spinners = [multiprocessing.get_context("fork").Process(target=_spin, daemon=True)
                for _ in range(SPINNERS_PER_CORE * cores)]
    for proc in spinners:
        proc.start()
    try:
        yield len(spinners)
    finally:
        for proc in spinners:
            proc.kill()
        for proc in spinners:
            proc.join(5)


@pytest.mark.parametrize("start", ["auto", "cold"])
def test_kernels_started_together_under_cpu_load_each_serve_their_first_cell(tmp_path, cpu_load, start):
    data = tmp_path / "capital.csv"
    data.write_text(CSV)

    async def one(i: int) -> tuple[str, str, list[str]]:
        ws = await Workspace.open([data], root=tmp_path / str(i), start_kernel="background", kernel_start=start)
        try:
            cell = await ws.execute("import pandas as pd; print(pd.read_csv('data/capital.csv').shape)", author="ai")
        finally:
            await ws.close()
        return cell.status, cell.output, [e.kind for e in ws.events]

    async def all_of_them() -> list[tuple[str, str, list[str]]]:
        return await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(WORKSPACES))), BOUND_S)

    results = asyncio.run(all_of_them())
    assert [(status, output) for status, output, _ in results] == [("ok", "(2, 2)\n")] * WORKSPACES
    assert all(kinds == ["kernel_started"] for _, _, kinds in results), results  # no second attempt needed
