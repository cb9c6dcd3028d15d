"""Persistent response cache: a rerun replays exactly and a resumed batch never pays twice.

litellm 1.110 dropped its disk cache, and its in-memory cache's hit path needs extra
packages, so this is a thin layer of our own in front of `litellm.acompletion`: the key is
the sha256 of the model config (minus timeout), the exact messages, the response format
and the sample index; the value is the raw answer text with its usage (provider cache hits included) and cost. Raw text
(not the validated object) is stored so a replay goes through the same parsing and the
same repair calls as the original run.

With a directory the cache is a `diskcache` store there (SQLite, safe across processes;
the experiment passes its results folder). Without one it is a per-gateway dict, so
repeated identical requests in one process are still answered once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from colabkit.hashing import sha256_hex
from colabkit.llm.config import ModelConfig

_KEY_VERSION = 1
_log = logging.getLogger(__name__)
# SQLite reads and writes of every session's requests, off the event loop they share (one
# thread: diskcache keeps a connection per thread, and each step is a millisecond or two).
_DISK = ThreadPoolExecutor(max_workers=1, thread_name_prefix="colabkit-cache")
# One diskcache store per folder in this process, shared by the caches open on it: a batch
# opens one gateway per session, and each store's set-up writes diskcache's settings in SQLite
# transactions, so 64 sessions starting together queued on the database's lock (and retried)
# before their first requests. folder -> (store, its database file's identity, users)
_SHARED: dict[str, tuple[Any, tuple[int, int] | None, int]] = {}
_SHARED_LOCK = threading.Lock()


class CachedAnswer(BaseModel, frozen=True):
    text: str
    prompt_tokens: int
    completion_tokens: int
    cost: float
    finish_reason: str | None = None
    provider_cached_tokens: int = 0
    """Prompt tokens the provider served from its prefix cache when the answer was paid."""


def cache_key(config: ModelConfig, messages: list[dict[str, Any]],
              response_format: dict[str, Any] | None, sample: int) -> str:
    return sha256_hex({"v": _KEY_VERSION, "config": config.output_identity(),
                       "messages": messages, "format": response_format, "sample": sample})


class ResponseCache:
    """Answers by key, on disk when `directory` is given, else in memory."""

    def __init__(self, directory: Path | str | None = None):
        self.directory = Path(directory) if directory is not None else None
        self._store: Any = {} if self.directory is None else _open_store(self.directory)

    def get(self, key: str) -> CachedAnswer | None:
        """The stored answer, or None; an unreadable entry counts as a miss, not a crash."""
        try:
            raw = self._store.get(key)
            return CachedAnswer.model_validate_json(raw) if raw is not None else None
        except Exception as exc:  # a damaged cache must not stop a batch
            _log.warning("response cache %s: unreadable entry %s (%s)", self.directory, key, exc)
            return None

    def put(self, key: str, answer: CachedAnswer) -> None:
        """Store an answer; failing to store (disk full, locked) only loses the replay."""
        try:
            self._store[key] = answer.model_dump_json()
        except Exception as exc:
            _log.warning("response cache %s: could not store %s (%s)", self.directory, key, exc)

    def on_disk(self) -> bool:
        """Whether `get` and `put` do file I/O (then `aget` and `aput` run them in a thread)."""
        return self.directory is not None

    async def aget(self, key: str) -> CachedAnswer | None:
        """`get`, in the cache's own thread when it reads the disk."""
        if not self.on_disk():
            return self.get(key)
        return await asyncio.get_running_loop().run_in_executor(_DISK, self.get, key)

    async def aput(self, key: str, answer: CachedAnswer) -> None:
        """`put`, in the cache's own thread when it writes the disk."""
        if not self.on_disk():
            return self.put(key, answer)
        return await asyncio.get_running_loop().run_in_executor(_DISK, self.put, key, answer)

    def __len__(self) -> int:
        return len(self._store)

    def close(self) -> None:
        if self.directory is not None:
            _close_store(self.directory, self._store)


def _database(directory: Path) -> tuple[int, int] | None:
    """The identity (device, inode) of a store's database file; None if there is none. While
    a store is open its file cannot be replaced by another with the same identity."""
    try:
        found = os.stat(directory / "cache.db")
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _open_store(directory: Path) -> Any:
    """This process's store over `directory`, opened once and shared; a new one where the
    folder's database is no longer the file the shared store has open (it was deleted)."""
    import diskcache  # imported here: only persistent caches need it

    key = str(directory.resolve())
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        if found is not None and found[1] is not None and _database(directory) == found[1]:
            _SHARED[key] = (found[0], found[1], found[2] + 1)
            return found[0]
        store = diskcache.Cache(str(directory))  # a replaced store stays with (and is closed by) its users
        _SHARED[key] = (store, _database(directory), 1)
        return store


def _close_store(directory: Path, store: Any) -> None:
    """One user fewer; the last one closes the store."""
    key = str(directory.resolve())
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        if found is not None and found[0] is store:
            if found[2] > 1:
                _SHARED[key] = (store, found[1], found[2] - 1)
                return
            del _SHARED[key]
    store.close()
