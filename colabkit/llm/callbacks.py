"""litellm's logging callbacks, settled before an event loop closes.

litellm runs its success and failure callbacks on a worker task of the loop that made the call
(`litellm_core_utils.logging_worker.GLOBAL_LOGGING_WORKER`). A loop closed with that task still
waiting prints "Event loop is closed" tracebacks at exit; every loop the suite owns therefore
stops the worker before it closes (`settled`: the batch runner's, the judges', a worker's). The next loop's first call
starts it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


async def settle_callbacks(timeout: float = 2.0) -> None:
    """Let litellm's logging worker finish its callbacks on the running loop, then stop it; a
    callback still running after `timeout` seconds is dropped (they only log)."""
    try:
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

        try:
            await asyncio.wait_for(GLOBAL_LOGGING_WORKER.flush(), timeout)
            await GLOBAL_LOGGING_WORKER.stop(timeout=timeout)
        except TimeoutError:
            await GLOBAL_LOGGING_WORKER.stop(discard_pending=True, timeout=timeout)
    except Exception as exc:  # a litellm without the worker, or one that changed it: the warning stays
        log.debug("litellm's logging worker not stopped: %s", exc)


async def settled(coroutine: Awaitable[T]) -> T:
    """`coroutine`'s result, litellm's callbacks settled after it (`settle_callbacks`): what a
    loop the suite owns runs, so closing it prints nothing."""
    try:
        return await coroutine
    finally:
        await settle_callbacks()
