"""The one hashing rule for everything colabkit identifies by content.

Configs, specs, frozen memories, rendered prompts and task metadata files are identified by
a sha256 hex digest, so equal content gives equal ids across processes and machines. Values
are hashed as canonical JSON (sorted keys, no whitespace, UTF-8, non-ASCII kept as is);
files are hashed as their raw bytes. Every layer imports from here (like `colabkit.errors`),
so there is exactly one definition of "the same content".
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace, so equal values always hash equally.

    A pydantic model is dumped in JSON mode first; anything JSON cannot encode natively
    (a datetime, a path) is encoded as its `str`.
    """
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_hex(value: Any) -> str:
    """sha256 hex of `canonical_json(value)`."""
    return sha256_bytes(canonical_json(value).encode("utf-8"))


def sha256_bytes(data: bytes) -> str:
    """sha256 hex of raw bytes (a file's content as read)."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path | str) -> str:
    """sha256 hex of a file's bytes, read in chunks (data files can be large)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
