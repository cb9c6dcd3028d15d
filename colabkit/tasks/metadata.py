"""Parse one DiscoveryBench `metadata_<k>.json` into tasks, for both of its schemas.

DiscoveryBench has two metadata dialects and the suite must read every file of both:

- real: `datasets[].columns = {"raw": [...]}` and `queries` a list of lists;
- synth: `datasets[].columns = [...]` and `queries` a flat list; some synth files are cp1252.

The dialect is detected per field from the JSON itself, not from the folder, so a
hand-made folder in either dialect loads too. Anything malformed is reported as one line
naming the file and the field (e.g. `datasets[0].columns.raw[2].name`), because researchers
fix these files by hand.

Gold found inline (`true_hypothesis` in train/dev queries, the top-level `workflow`) is
returned separately from the `Task`, so it can only ever travel to `TaskSuite.gold`.

Where a file is odd but its meaning is clear, it loads and a warning says what was done:
upstream describes a Newick tree (`.txt`, not a table) with one "column" whose name is
empty; that entry describes the file's content, so its description joins the file's.
An empty column name for a *table* stays an error: which column it means is a guess.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from colabkit.errors import ColabkitError
from colabkit.hashing import sha256_bytes
from colabkit.tasks.layout import MetadataFile
from colabkit.tasks.model import Column, DatasetInfo, Task
from colabkit.tasks.table import is_table_name


class MetadataError(ColabkitError):
    """A metadata file that cannot be decoded, parsed, or has a field of the wrong shape."""


@dataclass(frozen=True)
class ParsedQuery:
    """One task read from a metadata file, with whatever gold the file itself carries."""

    task: Task
    inline_hypothesis: str | None
    workflow: str | None


def read_json(path: Path, raw: bytes | None = None) -> Any:
    """Decode a metadata file (or its bytes already read): UTF-8 first, cp1252 as upstream's
    synth files need."""
    raw = path.read_bytes() if raw is None else raw
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            text = raw.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    else:
        raise MetadataError(f"malformed metadata {path}: not UTF-8 or cp1252 text")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise MetadataError(
            f"malformed metadata {path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise MetadataError(f"malformed metadata {path}: JSON nested too deeply") from None


def parse_metadata(meta: MetadataFile) -> tuple[list[ParsedQuery], list[str]]:
    """All tasks of one metadata file (one per query) and its warnings (one line each), or
    MetadataError naming file and field."""
    raw = meta.path.read_bytes()
    doc = read_json(meta.path, raw)
    fields = _Fields(meta.path)
    if not isinstance(doc, dict):
        raise fields.bad("(top level)", "must be a JSON object")
    datasets = tuple(_dataset(fields, meta.path.parent, item, f"datasets[{i}]")
                     for i, item in enumerate(fields.nonempty_list(doc, "datasets")))
    knowledge = [fields.text(doc, "domain_knowledge", "domain_knowledge")]
    # Some upstream train files keep domain knowledge per dataset instead of at the top.
    for i, item in enumerate(doc["datasets"]):
        knowledge.append(fields.text(item, "domain_knowledge", f"datasets[{i}].domain_knowledge"))
    common = {
        "split": meta.split,
        "domain": fields.text(doc, "domain", "domain"),
        "datasets": datasets,
        "domain_knowledge": "\n".join(k for k in knowledge if k),
        "workflow_tags": _tags(fields, doc),
        "task_digest": sha256_bytes(raw),
    }
    workflow = fields.text(doc, "workflow", "workflow") or None
    parsed = []
    for position, (query, where) in enumerate(_queries(fields, doc)):
        qid = _qid(fields, query, where, position)
        task = Task(
            id=f"{meta.id_prefix}/{qid}",
            query=fields.required_text(query, "question", f"{where}.question"),
            question_type=fields.text(query, "question_type", f"{where}.question_type"),
            **common,
        )
        hypothesis = fields.text(query, "true_hypothesis", f"{where}.true_hypothesis") or None
        parsed.append(ParsedQuery(task, hypothesis, workflow))
    return parsed, fields.warnings


class _Fields:
    """Typed field access that turns every shape problem into a MetadataError naming the field."""

    def __init__(self, path: Path):
        self.path = path
        self.warnings: list[str] = []

    def bad(self, field: str, problem: str) -> MetadataError:
        return MetadataError(f"malformed metadata {self.path}: field {field} {problem}")

    def text(self, obj: dict, key: str, field: str) -> str:
        value = obj.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.bad(field, f"must be a string, not {type(value).__name__}")
        return value.strip()

    def required_text(self, obj: dict, key: str, field: str) -> str:
        value = self.text(obj, key, field)
        if not value:
            raise self.bad(field, "is missing or empty")
        return value

    def object(self, value: Any, field: str) -> dict:
        if not isinstance(value, dict):
            raise self.bad(field, f"must be an object, not {type(value).__name__}")
        return value

    def nonempty_list(self, obj: dict, key: str) -> list:
        value = obj.get(key)
        if not isinstance(value, list) or not value:
            raise self.bad(key, "must be a non-empty list")
        return value


def _dataset(fields: _Fields, folder: Path, item: Any, where: str) -> DatasetInfo:
    item = fields.object(item, where)
    name = fields.required_text(item, "name", f"{where}.name")
    try:
        path = (folder / name).resolve()
    except (ValueError, OSError):  # a NUL byte, a symlink loop
        raise fields.bad(f"{where}.name", f"is not a usable file name: {name!r}") from None
    if folder.resolve() not in path.parents:
        raise fields.bad(f"{where}.name", f"must name a file inside {folder}, not {name!r}")
    columns = item.get("columns")
    if isinstance(columns, dict):  # real schema
        col_where = f"{where}.columns.raw"
        columns = columns.get("raw", [])
    else:  # synth schema (or absent)
        col_where = f"{where}.columns"
        columns = [] if columns is None else columns
    if not isinstance(columns, list):
        raise fields.bad(col_where, f"must be a list, not {type(columns).__name__}")
    table = is_table_name(name)
    description = fields.text(item, "description", f"{where}.description")
    parsed = []
    for j, col in enumerate(columns):
        col = fields.object(col, f"{col_where}[{j}]")
        col_description = fields.text(col, "description", f"{col_where}[{j}].description")
        if not table and not fields.text(col, "name", f"{col_where}[{j}].name"):
            fields.warnings.append(
                f"metadata {fields.path}: field {col_where}[{j}].name is empty; {name} is not a "
                "table, so the entry is read as a description of the file")
            if col_description and col_description not in description:
                description = f"{description} {col_description}".strip()
            continue
        parsed.append(Column(
            name=fields.required_text(col, "name", f"{col_where}[{j}].name"),
            description=col_description,
        ))
    return DatasetInfo(name=name, path=path, description=description, columns=tuple(parsed),
                       kind="table" if table else "file")


def _tags(fields: _Fields, doc: dict) -> tuple[str, ...]:
    """Upstream writes tags as one comma-separated string; a list is accepted as well."""
    value = doc.get("workflow_tags")
    if value is None:
        return ()
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise fields.bad("workflow_tags", "must be a string or a list of strings")
    return tuple(v.strip() for v in value if v.strip())


def _queries(fields: _Fields, doc: dict) -> list[tuple[dict, str]]:
    """Flatten real (list of lists) and synth (flat list) query layouts, keeping field paths."""
    found: list[tuple[dict, str]] = []
    for i, item in enumerate(fields.nonempty_list(doc, "queries")):
        if isinstance(item, list):
            found.extend((fields.object(q, f"queries[{i}][{j}]"), f"queries[{i}][{j}]")
                         for j, q in enumerate(item))
        else:
            found.append((fields.object(item, f"queries[{i}]"), f"queries[{i}]"))
    if not found:
        raise fields.bad("queries", "holds no query")
    return found


def _qid(fields: _Fields, query: dict, where: str, position: int) -> int:
    """The query id the answer keys use; files without `qid` fall back to the query's position."""
    value = query.get("qid", position)
    if not isinstance(value, bool) and isinstance(value, (int, str)) and str(value).isdigit():
        try:
            return int(value)
        except ValueError:  # digits int() refuses: "²", or too many of them
            pass
    raise fields.bad(f"{where}.qid", f"must be a non-negative integer, not {value!r}")
