"""JSON schemas a small model can always finish, and lenient parsing of what comes back.

Grammar-constrained decoding always yields syntactically valid JSON unless the answer is cut
off at `max_tokens` (measured: 6/9 valid without bounds, all failures truncations; 12/12 with
`maxLength` bounds). So every string and array in the schema sent to the model gets a bound
(the pydantic model's own `Field(max_length=...)`, else a default), and `max_tokens` is sized
from those bounds: one token per character is the worst case seen (degenerate "1.0, 1.0").
"""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

DEFAULT_MAX_STRING = 600
DEFAULT_MAX_ITEMS = 8
# Room for whitespace and punctuation the grammar allows beyond the counted content.
SLACK_TOKENS = 60
_PER_FIELD_TOKENS = 6
_NUMBER_TOKENS = 24
T = TypeVar("T", bound=BaseModel)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.DOTALL)


def bounded_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with every string and array length bounded (a fresh copy)."""
    return copy.deepcopy(shared_bounded_schema(model))


@lru_cache(maxsize=256)
def shared_bounded_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`bounded_schema`, computed once per model class; callers must not change it.

    Generating a pydantic model's JSON schema costs milliseconds of CPU (15 ms a call on a
    busy machine was the gateway's largest own cost per request), and every structured
    request needs it, for the same few classes.
    """
    schema = copy.deepcopy(model.model_json_schema())
    _bound(schema)
    return schema


class AnswerBounds(NamedTuple):
    """Tighter bounds on what a model may write than its schema's own (`capped_schema`)."""

    text_chars: int
    """Each free-text string at most this long."""
    list_items: int
    """Each list at most this long."""


@lru_cache(maxsize=256)
def capped_schema(model: type[BaseModel], bounds: AnswerBounds) -> dict[str, Any]:
    """`shared_bounded_schema` with every string and list within `bounds` (shared).

    What a caller asks of a model that needs less room (the embedded judge's answers, sized
    by its profile); validation stays with the model class, which a shorter answer passes.
    """
    schema = copy.deepcopy(shared_bounded_schema(model))
    _cap(schema, bounds)
    return schema


def _cap(node: Any, bounds: AnswerBounds) -> None:
    if isinstance(node, list):
        for item in node:
            _cap(item, bounds)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "string" and "maxLength" in node:
        node["maxLength"] = min(int(node["maxLength"]), bounds.text_chars)
    if node.get("type") == "array" and "maxItems" in node:
        node["maxItems"] = min(int(node["maxItems"]), bounds.list_items)
    for value in node.values():
        _cap(value, bounds)


def _bound(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _bound(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "string" and "enum" not in node and "const" not in node:
        node.setdefault("maxLength", DEFAULT_MAX_STRING)
    if node.get("type") == "array":
        node.setdefault("maxItems", DEFAULT_MAX_ITEMS)
    for value in node.values():
        _bound(value)


def token_bound(schema: dict[str, Any]) -> int:
    """Enough completion tokens for the longest answer the bounded schema allows."""
    defs = schema.get("$defs", {})
    return _size(schema, defs, depth=0) + SLACK_TOKENS


def _size(node: dict[str, Any], defs: dict[str, Any], depth: int) -> int:
    if depth > 20:  # recursive models: the bound stays finite, the depth is what the model uses
        return _PER_FIELD_TOKENS
    ref = node.get("$ref")
    if isinstance(ref, str):
        return _size(defs.get(ref.rsplit("/", 1)[-1], {}), defs, depth + 1)
    options = node.get("anyOf") or node.get("oneOf")
    if options:
        return max(_size(option, defs, depth + 1) for option in options)
    if "enum" in node or "const" in node:
        values = node.get("enum", [node.get("const")])
        return max(len(json.dumps(v)) for v in values) + 2
    kind = node.get("type")
    if kind == "string":
        return int(node.get("maxLength", DEFAULT_MAX_STRING)) + 2
    if kind == "object":
        props = node.get("properties", {})
        return 2 + sum(len(key) + _PER_FIELD_TOKENS + _size(sub, defs, depth + 1)
                       for key, sub in props.items())
    if kind == "array":
        items = node.get("items", {})
        count = int(node.get("maxItems", DEFAULT_MAX_ITEMS))
        return 2 + count * (_size(items, defs, depth + 1) + 2)
    return _NUMBER_TOKENS


def schema_instructions(schema: dict[str, Any]) -> str:
    """Text telling a model without native schema support what to answer."""
    return ("Answer with a single JSON object and nothing else (no prose, no code fences). "
            "It must match this JSON schema:\n" + json.dumps(schema, separators=(",", ":")))


def extract_json(text: str) -> str:
    """The JSON object inside a reply that may wrap it in prose or a code fence."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    start, end = stripped.find("{"), stripped.rfind("}")
    if start >= 0 and end > start:
        return stripped[start:end + 1]
    return stripped


def parse_as(schema: type[T], text: str) -> T:
    """Validate a reply against the schema; raises `ValueError` with a readable reason.

    llama.cpp's JSON grammar lets raw control characters (newlines in code) into strings,
    which strict JSON forbids; the reply is read leniently and re-encoded before pydantic
    validates it in JSON mode.
    """
    try:
        return schema.model_validate_json(_reencoded(extract_json(text)))
    except ValidationError as exc:
        raise ValueError(_describe(exc)) from None


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "<root>"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _reencoded(text: str) -> str:
    """`text` as strict JSON when it parses leniently; as it is otherwise, for pydantic to word the error."""
    try:
        return json.dumps(json.loads(text, strict=False))
    except (ValueError, RecursionError):  # deep nesting: pydantic reports it as invalid
        return text
