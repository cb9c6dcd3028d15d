"""The rendered prompt of every model call: hashed always, kept only when asked.

Each `CallRecord` carries `prompt_hash`, the sha256 of the exact messages sent (after the
gateway added schema instructions or a repair turn), so two calls can be compared and a log
can be checked against a stored prompt without storing prompts by default (they are large:
every observation, every step). `logging_prompts()` additionally keeps each distinct prompt
for the code running inside it, for the `--log-prompts` option of `colabkit run`.

A context variable (not a gateway attribute) holds the log, because one gateway may serve
several sessions at once in a batch: each session's asyncio task sees only its own log.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from colabkit.hashing import sha256_hex

_ACTIVE: ContextVar[PromptLog | None] = ContextVar("colabkit_prompt_log", default=None)


class PromptLog:
    """Distinct rendered prompts by hash, in the order they were first sent."""

    def __init__(self) -> None:
        self.prompts: dict[str, list[dict[str, Any]]] = {}

    def add(self, digest: str, messages: list[dict[str, Any]]) -> None:
        if digest not in self.prompts:
            self.prompts[digest] = copy.deepcopy(messages)

    def jsonl(self) -> str:
        """One JSON object per prompt: `{"prompt_hash": ..., "messages": [...]}`."""
        return "".join(json.dumps({"prompt_hash": digest, "messages": messages}, ensure_ascii=False) + "\n"
                       for digest, messages in self.prompts.items())


def prompt_hash(messages: list[dict[str, Any]]) -> str:
    """The hash of a rendered prompt; also keeps the prompt if a `logging_prompts` is active."""
    digest = sha256_hex(messages)
    active = _ACTIVE.get()
    if active is not None:
        active.add(digest, messages)
    return digest


@contextmanager
def logging_prompts() -> Iterator[PromptLog]:
    """Keep every prompt sent by code running inside this block (and its asyncio tasks)."""
    log = PromptLog()
    token = _ACTIVE.set(log)
    try:
        yield log
    finally:
        _ACTIVE.reset(token)
