"""Canonical JSON and its sha256: the one hashing rule for every team-layer value.

Configs and frozen records are identified by the hash of their canonical JSON (sorted keys,
no whitespace, UTF-8) so that equal content gives equal ids across processes and machines.
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel


def canonical_json(model: BaseModel) -> str:
    """The model's JSON dump with sorted keys and no insignificant whitespace."""
    return json.dumps(model.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_digest(model: BaseModel) -> str:
    """sha256 hex of `canonical_json(model)`."""
    return hashlib.sha256(canonical_json(model).encode("utf-8")).hexdigest()
