"""The workspace's disk quota: a cell that tries to write 3 GB in many files ends with
`DiskQuotaExceeded`, the host's disk never grows past the quota plus one file-size cap
(sampled throughout the cell), the cell's files are removed and the next cell runs.

The quota here is 50 MB (the cell still tries to write 3 GB, in 3,000 files of 1 MB, and
keeps trying after each refusal), so the test takes seconds; the mechanism does not
depend on the size. Both enforcement paths are tested: the size-capped file system (root)
and the polling check every other machine gets.
"""

import asyncio
import os
import textwrap
from pathlib import Path

import pytest
from helpers.env import require

from colabkit.workspace import Limits, Workspace, quota
from colabkit.workspace.quota import MIB

QUOTA_MB, FILE_CAP_MB = 50, 20
LIMITS = Limits(cell_timeout_s=60, interrupt_grace_s=2, disk_mb=QUOTA_MB, file_size_mb=FILE_CAP_MB)
WRITE_3_GB = """
    import os, time
    written = refused = 0
    for i in range(3000):  # 3,000 files of 1 MB: 3 GB in all
        try:
            with open(f"junk{i}.bin", "wb") as f:
                f.write(b"x" * 2**20)
            written += 1
        except OSError:
            refused += 1
        time.sleep(PAUSE)
    print("written", written, "refused", refused)
"""


@pytest.fixture
def task(tmp_path):
    path = tmp_path / "capital.csv"
    path.write_text("year,capital\n2000,1.5\n2001,2.5\n")
    return path


def allocated(folder: Path) -> int:
    """Bytes the host's disk holds for everything under `folder`: a mounted image counts by
    its own allocated blocks, so the walk does not descend into mount points."""
    total = 0
    for top, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not os.path.ismount(os.path.join(top, d))]
        for name in names:
            try:
                total += os.lstat(os.path.join(top, name)).st_blocks * 512
            except OSError:
                continue
    return total


def write_3_gb(task: Path, tmp_path: Path, pause: float):
    """Run the attack; sample the host's usage every 20 ms while it runs."""
    async def scenario():
        async with await Workspace.open([task], root=tmp_path / "ws", limits=LIMITS) as ws:
            base = ws.workdir.parent
            baseline = allocated(base)
            peak = 0

            async def sample():
                nonlocal peak
                while True:
                    peak = max(peak, allocated(base) - baseline)
                    await asyncio.sleep(0.02)

            sampler = asyncio.create_task(sample())
            hit = await ws.execute(textwrap.dedent(WRITE_3_GB).replace("PAUSE", repr(pause)), author="ai")
            sampler.cancel()
            after = allocated(base) - baseline
            follow = await ws.execute("print(sum(1 for n in __import__('os').listdir('.') if n.startswith('junk')))",
                                      author="ai")
            return ws, hit, follow, peak, after

    return asyncio.run(scenario())


def test_writing_3_gb_in_many_files_stops_at_the_quota(task, tmp_path):
    require(os.geteuid() == 0, "the size-capped file system needs root; the polling check is tested below")
    ws, hit, follow, peak, after = write_3_gb(task, tmp_path, pause=0)
    assert ws.isolation.disk_quota_enforced_by == "filesystem", ws.isolation.notes
    assert ws.isolation.disk_quota_mb == QUOTA_MB
    assert any(n.startswith(f"disk quota {QUOTA_MB} MB enforced by the file system") for n in ws.isolation.notes)
    assert hit.status == "error" and hit.error.startswith(
        f"DiskQuotaExceeded: the workspace may write at most {QUOTA_MB} MB in total")
    written, refused = (int(n) for n in hit.output.split()[1::2])
    assert written + refused == 3000 and QUOTA_MB - 5 <= written <= QUOTA_MB + 10 and refused > 2900
    assert peak <= (QUOTA_MB + FILE_CAP_MB) * MIB, peak  # the host never held more
    assert after < MIB  # the cell's files were removed
    assert (follow.status, follow.output) == ("ok", "0\n")
    assert "disk_quota" in [e.kind for e in ws.events]


@pytest.mark.slow
def test_without_a_mount_usage_is_polled_and_the_cell_stopped(task, tmp_path, monkeypatch):
    monkeypatch.setattr(quota, "_mount_image", lambda *a: "disabled for this test")
    # 1 MB per 10 ms (100 MB/s): the poll every 0.5 s sees the quota passed within ~50 MB.
    ws, hit, follow, peak, after = write_3_gb(task, tmp_path, pause=0.01)
    assert ws.isolation.disk_quota_enforced_by == "checked"
    assert any("checked every 0.5 s" in n and "disabled for this test" in n for n in ws.isolation.notes)
    assert hit.error.startswith(f"DiskQuotaExceeded: the workspace may write at most {QUOTA_MB} MB")
    assert "KeyboardInterrupt" in hit.error and hit.output == ""  # stopped long before 3,000 files
    assert peak <= (QUOTA_MB + FILE_CAP_MB + 60) * MIB, peak  # quota + file cap + one poll's writes
    assert after < MIB and (follow.status, follow.output) == ("ok", "0\n")
