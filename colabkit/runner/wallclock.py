"""How long a batch will take: the dry run's wall-clock estimate, and its warning.

A session's steps are model calls one after the other (the engine asks one participant at
a time), so a session lasts about its calls times the time one call takes, plus its
workspace's start (`SESSION_START_S`). The time per call comes from, in order: what a batch
measured for the same settings (`estimate.Measured.seconds_per_call`), the calls this
experiment's finished sessions logged (`latency_s` of up to `SAMPLE` sessions; answers
replayed from the cache do not count), else an assumption (`REMOTE_CALL_S` for a provider,
`LOCAL_CALL_S` for the embedded model), printed as such. Sessions run
min(`concurrency.sessions`, the kernel cap) at once; the embedded model computes on this
machine's cores, so its sessions gain nothing past one at a time per core
(`local_parallel`). The batch then takes about sessions x session time / sessions at once.

A config may ask for more sessions at once than this machine holds (its derived kernel cap:
memory and cores, `executors.capacity`): the plan says so, with what the machine holds,
instead of planning 16 sessions on 2 cores without a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from colabkit.llm.providers import LOCAL_PROVIDER
from colabkit.runner.executors.capacity import KernelCap, machine_kernel_cap, usable_cpus
from colabkit.session import Event, SessionSpec
from colabkit.store import EVENTS_FILE, session_dir

REMOTE_CALL_S = 6.0
"""Assumed seconds per call of a provider's model (a step's prompt of a few thousand tokens
and a short answer), where nothing was measured."""
LOCAL_CALL_S = 15.0
"""Assumed seconds per call of the embedded model on one core, where nothing was measured."""
SESSION_START_S = 5.0
"""A session's workspace start (sandbox, data copy, kernel) and its record."""
SAMPLE = 20
"""Finished sessions whose logged call latencies are read."""


class WallClock(BaseModel):
    """The wall-clock estimate of a plan, with what it rests on."""

    seconds_per_call: float
    basis: str
    calls_per_session: float
    at_once: int
    """Sessions that run at once: min(concurrency.sessions, kernel cap), past one per core
    for the embedded model."""
    asked: int
    """Sessions at once the config asks for: min(concurrency.sessions, its kernel cap)."""
    machine: KernelCap
    """What this machine holds (the derived cap)."""

    @property
    def session_s(self) -> float:
        return self.calls_per_session * self.seconds_per_call + SESSION_START_S

    def total_s(self, sessions: int) -> float:
        return sessions * self.session_s / max(self.at_once, 1)

    def render(self, sessions: int) -> list[str]:
        lines = [f"  wall clock: about {duration(self.total_s(sessions))} for {sessions} session(s) "
                 f"({duration(self.session_s)} each, {self.at_once} at once)",
                 f"    basis: {self.basis}"]
        if self.asked > self.machine.kernels:
            lines.append(f"  WARNING: the config asks for {self.asked} sessions at once; this machine holds "
                         f"{self.machine.describe()}. Expect them to slow each other down (kernels and cells "
                         "on too few cores, memory past its share; the wall clock above assumes they do not): "
                         "lower concurrency.sessions / concurrency.kernels, or run on a larger machine")
        return lines


def duration(seconds: float) -> str:
    """`2 h 05 min`, `14 min`, `40 s`."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def logged_latency(folder: Path, specs: Sequence[SessionSpec]) -> tuple[float, int] | None:
    """(mean seconds per call, calls) over the paid calls of up to `SAMPLE` finished sessions
    of `specs` in `folder`; None when they logged none."""
    total, calls, read = 0.0, 0, 0
    for spec in specs:
        path = session_dir(spec, folder) / EVENTS_FILE
        if read >= SAMPLE or not path.is_file():
            continue
        read += 1
        for line in path.read_bytes().splitlines():
            for call in Event.model_validate_json(line).llm_calls if line else ():
                if not call.suite_replay and call.latency_s > 0:
                    total, calls = total + call.latency_s, calls + 1
    return (total / calls, calls) if calls else None


def local_parallel(specs: Sequence[SessionSpec]) -> bool:
    """Whether some participant of `specs` runs on the embedded model (computed on this machine)."""
    return any(spec.model_for(role).provider == LOCAL_PROVIDER for spec in specs for role in spec.participants)


def wall_clock(folder: Path, specs: Sequence[SessionSpec], *, calls_per_session: float, sessions_at_once: int,
               kernel_cap: KernelCap, measured_seconds: float | None = None) -> WallClock:
    """The estimate for `specs` (the sessions still to run, else all) of an experiment in `folder`."""
    local = local_parallel(specs)
    machine = machine_kernel_cap(specs[0].settings.limits) if specs else machine_kernel_cap()
    asked = min(sessions_at_once, kernel_cap.kernels)
    at_once = min(asked, usable_cpus()) if local else asked
    logged = logged_latency(folder, specs)
    if measured_seconds:
        seconds, basis = measured_seconds, f"{measured_seconds:.1f} s per call, measured by a batch of these settings"
    elif logged is not None:
        seconds, basis = logged[0], f"{logged[0]:.1f} s per call, the mean of {logged[1]} calls this experiment's " \
                                    "finished sessions logged"
    else:
        seconds = LOCAL_CALL_S if local else REMOTE_CALL_S
        basis = (f"{seconds:g} s per call assumed ({'the embedded model on one core' if local else 'a provider'}; "
                 "nothing measured yet: a batch's sessions replace it)")
    basis += (f"; {calls_per_session:.1f} calls per session one after the other, +{SESSION_START_S:g} s start; "
              f"{at_once} at once (min of concurrency.sessions {sessions_at_once} and the kernel cap "
              f"{kernel_cap.kernels}" + (f", at most one per core ({usable_cpus()}) for the embedded model)" if local
                                         else ")"))
    return WallClock(seconds_per_call=seconds, basis=basis, calls_per_session=calls_per_session, at_once=at_once,
                     asked=asked, machine=machine)
