"""C_wf: how much of the task's reference workflow the team's successful cells implemented.

The reference graphs are data files in `colabkit/evaluation/metrics/workflows/` (one per
DiscoveryBench workflow-tag family; how they were written is in the README there). They
are validated when loaded: a broken file is a `ColabkitError` naming it, never a silently
smaller graph.

    C_wf = #nodes implemented by a successful cell / #nodes

A node is implemented when some cell that ran without an error (before the submission,
which is every cell of the snapshot) does what the node describes. Mechanical nodes are
decided by a rule on the cells (loading the task's files, drawing a figure); the others by
a judge that names the implementing cell. A judge answer naming a cell that did not succeed
is garbage and counts as missing. A task whose tags match no family is N/A and flagged; a
session without a single successful cell implemented nothing (0, no judge asked).

The content hash of the graph files (`graphs_hash`) is part of the scorer's id, so editing a
graph (its nodes, its tags, its `version`) scores C_wf anew instead of reusing stale scores.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from colabkit.errors import ColabkitError
from colabkit.evaluation.judge import JudgePrompt
from colabkit.evaluation.metrics.process import (
    ask_each,
    clip,
    missing,
    missing_flag,
    render_cell,
    successful_cells,
    transient,
    values_of,
    verdict_flags,
)
from colabkit.evaluation.records import Judgement, ScoreResult
from colabkit.evaluation.scorer import Scorer, SessionContext, register_scorer
from colabkit.hashing import sha256_hex
from colabkit.workspace import CellResult

METRIC = "c_wf"
WORKFLOW_SCHEMA_VERSION = 1
Check = Literal["rule:reads_data", "rule:plots", "judged"]
_ID = r"^[a-z][a-z0-9_]*$"
_READS = re.compile(r"\b(read_csv|read_table|read_excel|read_parquet|read_json|loadtxt|genfromtxt|open)\s*\(")
_PLOTS = re.compile(r"\b(plt\.|pyplot|seaborn|sns\.|plotly)|\.plot\s*\(|\.(hist|scatter|boxplot|bar)\s*\(")
CELL_CHARS = 700


class WorkflowNode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=_ID)
    description: str = Field(min_length=10)
    check: Check
    after: tuple[str, ...] = ()


class WorkflowGraph(BaseModel):
    """One family's reference workflow: its tag set and its nodes in a DAG."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int
    family: str = Field(pattern=_ID)
    version: int = Field(ge=1)
    title: str
    tags: tuple[str, ...] = Field(min_length=1)
    nodes: tuple[WorkflowNode, ...] = Field(min_length=1)

    @field_validator("schema_version")
    @classmethod
    def _known_schema(cls, value: int) -> int:
        if value != WORKFLOW_SCHEMA_VERSION:
            raise ValueError(f"schema_version {value} is not {WORKFLOW_SCHEMA_VERSION}")
        return value

    @field_validator("tags")
    @classmethod
    def _normal_tags(cls, tags: tuple[str, ...]) -> tuple[str, ...]:
        normal = tuple(normalise_tag(t) for t in tags)
        if len(set(normal)) != len(normal) or not all(normal):
            raise ValueError(f"tags must be distinct and non-empty: {tags}")
        return normal

    @model_validator(mode="after")
    def _dag(self) -> WorkflowGraph:
        ids = [n.id for n in self.nodes]
        if len(set(ids)) != len(ids):
            raise ValueError(f"node ids repeat: {ids}")
        for node in self.nodes:
            unknown = [a for a in node.after if a not in ids]
            if unknown:
                raise ValueError(f"node {node.id!r} comes after unknown node(s) {unknown}")
        placed: set[str] = set()
        pending = list(self.nodes)
        while pending:  # Kahn's algorithm: a cycle leaves nodes that can never be placed
            ready = [n for n in pending if set(n.after) <= placed]
            if not ready:
                raise ValueError(f"the edges form a cycle among {[n.id for n in pending]}")
            placed |= {n.id for n in ready}
            pending = [n for n in pending if n.id not in placed]
        return self

    @property
    def tag_set(self) -> frozenset[str]:
        return frozenset(self.tags)


def normalise_tag(tag: str) -> str:
    return " ".join(tag.lower().split())


def parse_workflow(text: str, source: str) -> WorkflowGraph:
    """Validate one graph file's text; a problem is one `ColabkitError` line naming `source`."""
    try:
        return WorkflowGraph.model_validate(json.loads(text))
    except (ValueError, ValidationError) as exc:
        detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()) \
            if isinstance(exc, ValidationError) else str(exc)
        raise ColabkitError(f"{source}: invalid workflow graph: {' '.join(detail.split())}") from None


def _graph_files() -> list[Any]:
    folder = resources.files("colabkit.evaluation.metrics.workflows")
    return sorted((f for f in folder.iterdir() if f.name.endswith(".json")), key=lambda f: f.name)


@cache
def graphs_hash() -> str:
    """sha256 over the shipped graph files' names and bytes: what C_wf's results depend on."""
    return sha256_hex([[f.name, f.read_text(encoding="utf-8")] for f in _graph_files()])


@cache
def load_workflows() -> tuple[WorkflowGraph, ...]:
    """The shipped reference graphs, validated, with distinct families and tag sets."""
    graphs = [parse_workflow(f.read_text(encoding="utf-8"), f"colabkit/evaluation/metrics/workflows/{f.name}")
              for f in _graph_files()]
    for i, graph in enumerate(graphs):
        for other in graphs[:i]:
            if graph.family == other.family or graph.tag_set == other.tag_set:
                raise ColabkitError(f"colabkit/evaluation/metrics/workflows: families {other.family!r} and "
                                    f"{graph.family!r} share a name or a tag set")
    return tuple(graphs)


def workflow_for(tags: Sequence[str], graphs: Sequence[WorkflowGraph] | None = None) -> WorkflowGraph | None:
    """The graph whose tag set equals `tags` (a task's workflow tags), or None."""
    wanted = frozenset(normalise_tag(t) for t in tags)
    return next((g for g in (load_workflows() if graphs is None else graphs) if g.tag_set == wanted), None)


def _reads_data(cell: CellResult, data_files: Sequence[str]) -> bool:
    names = [f.rsplit("/", 1)[-1] for f in data_files]
    return bool(_READS.search(cell.code)) and (any(n in cell.code for n in names) or "data/" in cell.code)


def _plots(cell: CellResult, data_files: Sequence[str]) -> bool:
    return bool(cell.images) or bool(_PLOTS.search(cell.code))


RULES: dict[str, Callable[[CellResult, Sequence[str]], bool]] = {
    "rule:reads_data": _reads_data,
    "rule:plots": _plots,
}


def rule_hits(graph: WorkflowGraph, cells: Sequence[CellResult], data_files: Sequence[str]) -> dict[str, int | None]:
    """For each rule-checked node, the first successful cell implementing it (None: none)."""
    return {node.id: next((c.index for c in cells if RULES[node.check](c, data_files)), None)
            for node in graph.nodes if node.check != "judged"}


class NodeVerdict(BaseModel):
    """The judge's answer for one node: does a listed cell implement it, and which."""

    reason: str = Field(max_length=200, description="one short sentence")
    implemented: bool
    cell: int | None = Field(description="the number of the implementing cell, or null")


class WorkflowResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    c_wf: float | None
    family: str | None
    matched: dict[str, int | None] | None
    """Per node, the implementing cell's number, or None when no cell implements it."""
    flags: tuple[str, ...] = ()


def coverage(
    graph: WorkflowGraph | None, rules: Mapping[str, int | None], verdicts: Mapping[str, NodeVerdict | None],
    cells: Sequence[CellResult],
) -> WorkflowResult:
    """C_wf from the rule results and the judge's node verdicts over the successful cells."""
    if graph is None:
        return WorkflowResult(c_wf=None, family=None, matched=None, flags=(f"{METRIC}:no_workflow_family",))
    judged = [n.id for n in graph.nodes if n.check == "judged"]
    if not cells:  # nothing ran successfully: nothing can implement a node, judge or not
        return WorkflowResult(c_wf=0.0, family=graph.family, matched=dict.fromkeys(n.id for n in graph.nodes))
    ok = {c.index for c in cells}
    flags: list[str] = []
    absent = missing(verdicts, judged)
    garbage = [n for n in judged if (v := verdicts.get(n)) is not None and v.implemented and v.cell not in ok]
    if absent or garbage:
        if absent:
            flags.append(missing_flag(METRIC, absent))
        if garbage:
            flags.append(f"{METRIC}:judge_named_no_successful_cell({len(garbage)})")
        return WorkflowResult(c_wf=None, family=graph.family, matched=None, flags=tuple(flags))
    matched: dict[str, int | None] = {}
    for node in graph.nodes:
        verdict = verdicts.get(node.id)
        if node.check != "judged":
            matched[node.id] = rules.get(node.id)
        else:
            matched[node.id] = verdict.cell if verdict is not None and verdict.implemented else None
    done = sum(1 for cell in matched.values() if cell is not None)
    return WorkflowResult(c_wf=done / len(graph.nodes), family=graph.family, matched=matched)


WORKFLOW_PROMPT = JudgePrompt(id="workflow_node", version=1, instructions="""\
You check one step of a data analysis against what a team actually ran. The input is JSON:
the team's question ("query"), one analysis step ("step") and the code cells that ran without
an error, each with its number, code and output ("cells"). Decide whether one of these cells
implements the step: its code does what the step describes (a cell may do several steps).
If so, give that cell's number; if no cell does, answer implemented=false and cell=null.
Answer in JSON.""")


def workflow_fields(query: str, node: WorkflowNode, cells: Sequence[CellResult]) -> dict[str, Any]:
    """What the workflow judge sees about one node."""
    return {"query": query, "step": node.description,
            "cells": [clip(render_cell(c, CELL_CHARS), CELL_CHARS + 100) for c in cells]}


@register_scorer
class WorkflowScorer(Scorer):
    """C_wf against the task family's reference graph (rules first, the judge for the rest)."""

    name = "c_wf"
    version = "1"
    prompts = (WORKFLOW_PROMPT,)
    columns = ("c_wf",)

    @property
    def data_identity(self) -> str:
        return graphs_hash()

    async def score(self, ctx: SessionContext) -> ScoreResult:
        if ctx.task is None:
            return ScoreResult(values={"c_wf": None}, flags=[f"{METRIC}:task_unknown({ctx.record.task_id})"])
        graph = workflow_for(ctx.task.workflow_tags)
        cells = successful_cells(ctx.snapshot)
        rules = rule_hits(graph, cells, [d.name for d in ctx.task.datasets]) if graph is not None else {}
        judged = [n for n in graph.nodes if n.check == "judged"] if graph is not None and cells else []
        asked = await ask_each(ctx, WORKFLOW_PROMPT,
                               {n.id: workflow_fields(ctx.task.query, n, cells) for n in judged}, NodeVerdict)
        result = coverage(graph, rules, values_of(asked), cells)
        flags = [*result.flags, *verdict_flags(asked)]
        judgements = [Judgement.of(v, metric="c_wf", item=f"node:{node}",
                                   label=None if v.value is None else str(v.value.implemented).lower())
                      for node, v in asked.items()]
        return ScoreResult(values={"c_wf": result.c_wf}, flags=flags, judgements=judgements,
                           complete=not transient(flags),
                           details={"family": result.family, "graph_version": graph.version if graph else None,
                                    "matched": result.matched, "rules": rules})
