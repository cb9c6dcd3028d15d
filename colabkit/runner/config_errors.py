"""A config's validation errors as one line a person can act on.

pydantic reports the first problem and "(and N more)"; a config with two typos then needs two
runs to find them, and an unknown key says nothing of the key that was meant. Here every
unknown key is listed with the closest known key at its place (difflib), and every other
problem follows, `where: what`. The location is the config's own path: a union's member tag
(`models.ai.ModelConfig.tempreature`) is left out, and so is the error of the union's other
member when the member that was meant has its own (`models.ai.str: Input should be a valid
string` beside a typo in the model's fields).
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError


def config_error(exc: ValidationError, model: type[BaseModel]) -> str:
    """Every problem of `exc` (raised validating `model`) in one line, unknown keys first."""
    errors = exc.errors()
    tagged = {tuple(e["loc"][:-1]) for e in errors if len(e["loc"]) > 1}
    unknown, other = [], []
    for err in errors:
        loc = tuple(err["loc"])
        path, known = _walk(model, loc[:-1]) if loc else ([], [])
        if err["type"] == "extra_forbidden":
            key = str(loc[-1])
            near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            unknown.append(".".join([*path, key]) + (f" (did you mean {near[0]}?)" if near else ""))
            continue
        if loc and _is_member_tag(model, loc) and any(t != loc[:-1] and t[:len(loc) - 1] == loc[:-1] for t in tagged):
            continue  # the other member of a union whose meant member has its own error
        where, message = ".".join(_walk(model, loc)[0]), err["msg"].removeprefix("Value error, ")
        other.append(f"{where}: {message}" if where else message)  # a check of the whole config
    parts = ([f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}"] if unknown else []) + other
    return "; ".join(parts)


def _walk(model: type[BaseModel], loc: tuple) -> tuple[list[str], list[str]]:
    """(the path of `loc` without union member tags, the known keys of the model it ends in)."""
    annotation: Any = model
    path: list[str] = []
    for part in loc:
        members = _members(annotation)
        named = [m for m in members if getattr(m, "__name__", None) == part]
        if named and len(members) > 1:  # a union's member tag: not part of the config's path
            annotation = named[0]
            continue
        path.append(str(part))
        annotation = _step(annotation, part)
    found = next((m for m in _members(annotation) if _is_model(m)), None)
    return path, list(found.model_fields) if found is not None else []


def _step(annotation: Any, part: Any) -> Any:
    for member in _members(annotation):
        if _is_model(member) and isinstance(part, str) and part in member.model_fields:
            return member.model_fields[part].annotation
        origin, args = typing.get_origin(member), typing.get_args(member)
        if origin in (tuple, list) and args and isinstance(part, int):
            return args[0]
        if origin is dict and len(args) == 2:
            return args[1]
    return None


def _members(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [a for a in typing.get_args(annotation) if a is not type(None)]
    return [] if annotation is None else [annotation]


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _is_member_tag(model: type[BaseModel], loc: tuple) -> bool:
    """Whether `loc` ends in a union member's tag (e.g. `models.ai.str`)."""
    annotation: Any = model
    for part in loc[:-1]:
        members = _members(annotation)
        named = [m for m in members if getattr(m, "__name__", None) == part]
        annotation = named[0] if named and len(members) > 1 else _step(annotation, part)
    members = _members(annotation)
    return len(members) > 1 and any(getattr(m, "__name__", None) == loc[-1] for m in members)
