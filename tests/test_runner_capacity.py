"""The default kernel cap: derived from the machine's memory and cores and the sandbox
limits (a pure function of those figures), shown in the plan, never part of the identity."""

from __future__ import annotations

from pathlib import Path

import yaml

from colabkit.runner import load_experiment
from colabkit.runner.executors.capacity import (
    KERNELS_PER_CPU,
    MEMORY_SHARE,
    TYPICAL_SESSION_MB,
    default_kernel_cap,
    physical_memory_bytes,
)
from colabkit.runner.plan import make_plan
from colabkit.workspace import Limits

GIB = 2**30
BASE = {"name": "t", "tasks": {"ids": ["demo_archaeology/0/0"]}, "variants": ["single"], "seeds": [0],
        "models": {"default": "scripted/x"}, "settings": {"action_budget": 3}}


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_each_kernel_reserves_its_worst_case_under_the_sandbox_limits():
    limits = Limits(memory_mb=2048, tmp_mb=512)  # 2.5 GiB worst case per kernel
    cap = default_kernel_cap(24 * GIB, limits, cpus=64)
    assert cap.reserved_mb == 2560
    assert cap.kernels == int(MEMORY_SHARE * 24 * 1024 // 2560) == 4
    assert cap.typical_would_allow == int(MEMORY_SHARE * 24 * 1024 // TYPICAL_SESSION_MB) > cap.kernels
    # Twice the memory holds twice the kernels; a tighter sandbox holds more.
    assert default_kernel_cap(48 * GIB, limits, cpus=64).kernels == 9
    assert default_kernel_cap(24 * GIB, Limits(memory_mb=1024, tmp_mb=256), cpus=64).kernels == 9


def test_the_typical_footprint_is_the_floor_per_kernel():
    cap = default_kernel_cap(24 * GIB, Limits(memory_mb=16, tmp_mb=16), cpus=1000)
    assert cap.reserved_mb == TYPICAL_SESSION_MB
    assert cap.kernels == cap.typical_would_allow


def test_cores_bound_the_cap_and_a_small_machine_still_runs_one():
    assert default_kernel_cap(1024 * GIB, Limits(), cpus=2).kernels == 2 * KERNELS_PER_CPU
    assert default_kernel_cap(1 * GIB, Limits(), cpus=8).kernels == 1
    unknown = default_kernel_cap(None, Limits(), cpus=3)
    assert unknown.kernels == 3 * KERNELS_PER_CPU and unknown.physical_mb is None


def test_this_machine_reports_its_memory():
    """Checked against the kernel's own figure (/proc/meminfo's MemTotal), where there is one:
    a function that always answered None would fail here."""
    found = physical_memory_bytes()
    meminfo = Path("/proc/meminfo")
    if not meminfo.is_file():  # not Linux: None is the documented answer where sysconf cannot tell
        assert found is None or found > 64 * 2**20
        return
    total_kb = next(int(line.split()[1]) for line in meminfo.read_text().splitlines() if line.startswith("MemTotal:"))
    assert found is not None
    assert 0.9 * total_kb * 1024 <= found <= 1.1 * total_kb * 1024


def test_the_config_overrides_the_cap_and_neither_changes_the_identity(tmp_path):
    derived = load_experiment(write(tmp_path, BASE))
    assert derived.concurrency.kernels is None and derived.kernel_cap().source == "derived"
    assert derived.kernel_cap().kernels >= 1
    fixed = load_experiment(write(tmp_path, {**BASE, "concurrency": {"kernels": 7}}))
    assert fixed.kernel_cap().kernels == 7 and fixed.kernel_cap().source == "config"
    assert fixed.identity() == derived.identity()


def test_the_dry_run_plan_shows_the_cap_and_where_it_came_from(tmp_path):
    exp = load_experiment(write(tmp_path, {**BASE, "results": str(tmp_path / "r")}))
    text = make_plan(exp).render()
    cap = exp.kernel_cap()
    assert f"live kernels {cap.kernels} (derived:" in text
    assert f"sessions at once: {min(4, cap.kernels)}" in text
    fixed = load_experiment(write(tmp_path, {**BASE, "results": str(tmp_path / "r"),
                                             "concurrency": {"kernels": 3, "sessions": 8}}))
    assert "sessions at once: 3 (concurrency.sessions 8; live kernels 3 (set in the config))" in \
        make_plan(fixed).render()
