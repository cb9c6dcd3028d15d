"""How many session kernels one machine holds at once: the default `concurrency.kernels`.

A live session holds one sandboxed kernel for its whole life, so the kernel cap is what
bounds a batch's memory. The cap is derived from the machine (physical memory and usable
cores, via `os`; no dependency) and from the sessions' own sandbox limits, instead of a
constant:

- **Memory.** `benchmarks/batch.py` measured 79-86 MB PSS per live session, kernel
  included (8-64 concurrent sessions of pandas cells on the demo task), so a *typical*
  session costs `TYPICAL_SESSION_MB` (86 MB rounded up). But a kernel runs untrusted
  model-written code, and the sandbox lets each one use up to `Limits.memory_mb` (per
  process) plus its in-memory /tmp (`Limits.tmp_mb`). A cap from the typical footprint (about
  120 kernels on a 24 GB machine) would oversubscribe memory as soon as a few cells load a
  large frame, and the kernel OOM killer may then take the suite process that holds every
  live session. So the default reserves each kernel's worst case,
  `max(TYPICAL_SESSION_MB, memory_mb + tmp_mb)`, within `MEMORY_SHARE` of physical memory
  (the rest is for the suite process, the OS and anything else on the machine). It never
  oversubscribes a machine the suite has to itself, short of a kernel that forks
  (the memory limit is per process). A researcher who knows the cells stay small sets
  `concurrency.kernels` explicitly; the dry-run plan shows what the typical figure would allow.
- **CPU.** With 1 s of model latency per call, 8 sessions on 2 busy cores kept wall time
  within 1.1x of ideal and 32 did not (kernel starts and pandas cells): `KERNELS_PER_CPU`
  bounds the cap by the usable cores.

The cap is how the sessions are run, never what they are: it is not part of the
experiment's identity, so a rerun on another machine finds the same sessions.
"""

from __future__ import annotations

import os
from typing import Final

from pydantic import BaseModel, ConfigDict

from colabkit.workspace import Limits

MEMORY_SHARE: Final = 0.5
TYPICAL_SESSION_MB: Final = 100
KERNELS_PER_CPU: Final = 4
_MIB: Final = 2**20


class KernelCap(BaseModel):
    """A kernel cap and where it came from (shown by `colabkit batch --dry-run`)."""

    model_config = ConfigDict(frozen=True)

    kernels: int
    source: str
    """"config" (set in the experiment) or "derived" (from this machine)."""
    physical_mb: int | None = None
    cpus: int | None = None
    reserved_mb: int | None = None
    """Memory reserved per kernel: its worst case under the sandbox limits."""
    typical_would_allow: int | None = None
    """The cap the typical measured footprint alone would give (not used: it can oversubscribe)."""

    def describe(self) -> str:
        if self.source == "config":
            return f"{self.kernels} (set in the config)"
        return (f"{self.kernels} (derived: {MEMORY_SHARE:.0%} of {self.physical_mb:,} MB at {self.reserved_mb:,} MB "
                f"per kernel worst case (sandbox memory + /tmp limits), at most {KERNELS_PER_CPU} per CPU x "
                f"{self.cpus}; the typical {TYPICAL_SESSION_MB} MB per session would allow "
                f"{self.typical_would_allow}: set concurrency.kernels to use it)")


def physical_memory_bytes() -> int | None:
    """This machine's physical memory, or None where `os.sysconf` cannot tell."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * size if pages > 0 and size > 0 else None


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_kernel_cap(physical_bytes: int | None, limits: Limits = Limits(), cpus: int = 1) -> KernelCap:
    """The derived cap (see the module docstring): a pure function of the machine's figures.

    Without a memory figure, the CPU bound alone decides.
    """
    by_cpu = max(1, KERNELS_PER_CPU * cpus)
    if physical_bytes is None:
        return KernelCap(kernels=by_cpu, source="derived", cpus=cpus)
    budget_mb = MEMORY_SHARE * physical_bytes / _MIB
    reserved = max(TYPICAL_SESSION_MB, limits.memory_mb + limits.tmp_mb)
    by_memory = max(1, int(budget_mb // reserved))
    return KernelCap(kernels=min(by_memory, by_cpu), source="derived", physical_mb=physical_bytes // _MIB,
                     cpus=cpus, reserved_mb=reserved,
                     typical_would_allow=max(1, int(budget_mb // TYPICAL_SESSION_MB)))


def machine_kernel_cap(limits: Limits = Limits()) -> KernelCap:
    """The derived cap on this machine."""
    return default_kernel_cap(physical_memory_bytes(), limits, usable_cpus())
