"""Kernel start slots: how many kernels one event loop starts at once, and in which order.

A batch opens all its sessions' workspaces together, and each starts its kernel in the
background while its first model requests are out (`Workspace.open(start_kernel=
"background")`). Starting them all at once starved the event loop that sends those
requests, so starts queue for a slot: one cold start per usable core (a cold start is about
a CPU-second), four warm ones (a warm start is a fraction of that).

The queue serves **the sessions waiting for their kernel first**: a workspace whose first
cell comes while its start is still queued is moved ahead (`hurry`) of those whose sessions
are still waiting on the model. In arrival order alone, at 64 sessions on 2 cores a session
whose first answer came back early waited at its first cell behind the starts of sessions
that did not need their kernel yet. Nothing about a session depends on the order: only when
its kernel is ready.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from typing import Literal

_CORES = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
STARTS_AT_ONCE = _CORES
"""Cold kernel starts one event loop lets run at once: one per usable core."""
WARM_STARTS_AT_ONCE = 4 * _CORES
"""Warm starts at once: four per core (one costs a fifth of a cold start's CPU)."""

Kind = Literal["warm", "cold"]


class NeedFirstSlots:
    """A counting semaphore that serves hurried waiters first, then the others in arrival order."""

    def __init__(self, slots: int) -> None:
        self.free = slots
        self._waiting: dict[Hashable, asyncio.Future[None]] = {}  # in arrival order
        self._hurried: dict[Hashable, None] = {}  # in the order they were hurried

    async def acquire(self, ticket: Hashable, hurried: bool = False) -> None:
        if self.free > 0 and not self._waiting:
            self.free -= 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[ticket] = granted
        if hurried:
            self._hurried[ticket] = None
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self.release()  # granted just as it was cancelled: the slot goes on
            raise
        finally:
            self._waiting.pop(ticket, None)
            self._hurried.pop(ticket, None)

    def release(self) -> None:
        while self._waiting:
            ticket = next((t for t in self._hurried if t in self._waiting), next(iter(self._waiting)))
            granted = self._waiting.pop(ticket)
            self._hurried.pop(ticket, None)
            if not granted.done():
                granted.set_result(None)
                return
        self.free += 1

    def hurry(self, ticket: Hashable) -> None:
        """Serve `ticket` before those not hurried (no-op unless it is waiting)."""
        if ticket in self._waiting:
            self._hurried.setdefault(ticket, None)


_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Kind, NeedFirstSlots]] = \
    weakref.WeakKeyDictionary()


def _slots() -> dict[Kind, NeedFirstSlots]:
    loop = asyncio.get_running_loop()
    found = _SLOTS.get(loop)
    if found is None:
        found = _SLOTS[loop] = {"cold": NeedFirstSlots(STARTS_AT_ONCE), "warm": NeedFirstSlots(WARM_STARTS_AT_ONCE)}
    return found


@asynccontextmanager
async def start_slot(kind: Kind = "cold", ticket: Hashable | None = None,
                     hurried: bool = False) -> AsyncIterator[None]:
    """Hold one of this event loop's `kind` start slots for the block; `ticket` names the
    start for `hurry` (without one it is served in arrival order only); `hurried`: it is
    needed already (its first cell came while its workspace was still being filled)."""
    slots = _slots()[kind]
    await slots.acquire(ticket if ticket is not None else object(), hurried)
    try:
        yield
    finally:
        slots.release()


def hurry(ticket: Hashable) -> None:
    """The start named `ticket` is needed now (its first cell is waiting): serve it next."""
    for slots in _slots().values():
        slots.hurry(ticket)
