"""Generated mutants for the variant audit (issue 42 item 3): the audit judged by faults nobody chose.

A small AST mutator applies standard operators at sites of the engine, prompting, scheduler,
actions, gateway, caps and metrics modules (`MODULES`):

- `const`: an int constant n -> n + 1 (0 -> 1), a bool flipped, a non-empty string -> "" ;
- `compare`: a comparison operator swapped (< <=, > >=, == !=, in / not in, is / is not);
- `slice`: a slice bound moved by one (x[a:b] -> x[a+1:b] / x[a:b-1]);
- `drop-stmt`: a statement (a call, an assignment, an augmented assignment) not run;
- `swap-args`: a call's first two positional arguments swapped;
- `drop-item`: one item of a list or tuple literal left out.

Each mutant is **guarded** so it fires on one side of a twin pair only: the mutated expression
becomes `(MUTATED if guard() else ORIGINAL)` (a statement: `if not guard(): STATEMENT`), where
`guard()` is true while a variant with a structure is played (`structure`) or a team
(`team`, against the single agent). The mutated function's code object replaces the original's
(`__code__`) for the mutant's run and is restored after, so nothing is written to disk.

Per mutant, fixed scenarios (`SCENARIOS`) are played in their twin pairs through the audit's
player (in-process double, the in-memory notebook) and checked with the hunt's invariants (the
twin comparisons and the rules each run keeps on its own, `runner.audit.conduct`) and
`same-trace`. A mutant is **observable** when some run's whole trace (nothing projected out)
differs from the unmutated run of the same variant and scenario; it is **caught** when the
checks report a violation the unmutated engine does not (`caught`; `caught-dirty` when only in a
scenario the unmutated engine already fails, where any change to a twin's trace may change the
violation's text: counted in `score`, not in `strict_score`). Score = caught / observable; every
observable survivor is listed with its site.

    PYTHONPATH=. .venv/bin/python benchmarks/mutants.py --sample 40 --seed 1     # a sample
    PYTHONPATH=. .venv/bin/python benchmarks/mutants.py --sample 400 --seed 1    # the full run
    PYTHONPATH=. .venv/bin/python benchmarks/mutants.py --termination either_side --sample 200 --seed 5
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib
import inspect
import json
import random
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FunctionType
from typing import Any

MODULES = ("colabkit.session.engine", "colabkit.session.scheduler", "colabkit.session.actions",
           "colabkit.session.prompting.observation", "colabkit.session.prompting.views",
           "colabkit.session.totals", "colabkit.llm.gateway", "colabkit.llm.records",
           "colabkit.evaluation.metrics.initiative", "colabkit.evaluation.metrics.work")
GUARD = "__audit_mutant_guard__"
SIDES = ("structure", "team")


class Side:
    """Which run is in progress (set by `play_guarded`); read by the guard a mutant calls."""

    structure = False
    team = False
    wanted = "structure"

    @classmethod
    def fire(cls) -> bool:
        return cls.structure if cls.wanted == "structure" else cls.team


@dataclass(frozen=True)
class Mutant:
    module: str
    qualname: str  # Class.method or function
    line: int
    operator: str
    detail: str
    side: str
    index: int  # the site's index among this function's sites of the operator

    @property
    def name(self) -> str:
        return f"{self.module.rsplit('.', 1)[-1]}:{self.line} {self.qualname} {self.operator} ({self.detail}) [{self.side}]"


# --- finding sites -----------------------------------------------------------------------


def _guarded(new: ast.expr, old: ast.expr) -> ast.expr:
    return ast.IfExp(test=ast.Call(func=ast.Name(GUARD, ast.Load()), args=[], keywords=[]), body=new, orelse=old)


_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
         ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


def _sites(node: ast.AST) -> Iterator[tuple[str, ast.AST, str]]:
    """(operator, node, detail) for every mutable site under a function's body (not its defaults;
    not an f-string's literal parts, nor a type annotation)."""
    fixed = {id(c) for n in ast.walk(node) if isinstance(n, ast.JoinedStr) for c in n.values}
    fixed |= {id(c) for n in ast.walk(node) if isinstance(n, ast.AnnAssign) for c in ast.walk(n.annotation)}
    for child in ast.walk(node):
        if id(child) in fixed:
            continue
        if isinstance(child, ast.Constant) and not isinstance(child.value, bytes):
            value = child.value
            if isinstance(value, bool) or (isinstance(value, int) and value is not None):
                yield "const", child, repr(value)
            elif isinstance(value, str) and value and len(value) < 200:
                yield "const", child, repr(value[:30])
        elif isinstance(child, ast.Compare) and type(child.ops[0]) in _SWAP:
            yield "compare", child, type(child.ops[0]).__name__
        elif isinstance(child, ast.Slice) and (child.lower is not None or child.upper is not None):
            yield "slice", child, "bound"
        elif isinstance(child, ast.Call) and len(child.args) >= 2 and not any(isinstance(a, ast.Starred) for a in child.args[:2]):
            yield "swap-args", child, ast.unparse(child.func)[:30]
        elif isinstance(child, (ast.List, ast.Tuple)) and isinstance(child.ctx, ast.Load) and len(child.elts) >= 2 \
                and not any(isinstance(e, ast.Starred) for e in child.elts):
            yield "drop-item", child, f"{len(child.elts)} items"
    for child in ast.walk(node):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(child, field, None)
            for stmt in stmts if isinstance(stmts, list) else []:
                if isinstance(stmt, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)) and not (
                        isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
                    yield "drop-stmt", stmt, ast.unparse(stmt).splitlines()[0][:40]


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{node.name}.{item.name}", item


def _body_sites(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, ast.AST, str]]:
    wrapper = ast.Module(body=fn.body, type_ignores=[])
    return [s for s in _sites(wrapper) if not (s[0] == "const" and isinstance(s[1], ast.Constant)
                                               and isinstance(s[1].value, str) and _is_docstring(fn, s[1]))]


def _is_docstring(fn: ast.AST, node: ast.AST) -> bool:
    body = getattr(fn, "body", [])
    return bool(body) and isinstance(body[0], ast.Expr) and body[0].value is node


def all_mutants() -> list[Mutant]:
    out = []
    for module in MODULES:
        tree = ast.parse(Path(importlib.import_module(module).__file__ or "").read_text())
        for qualname, fn in _functions(tree):
            counts: dict[str, int] = {}
            for operator, node, detail in _body_sites(fn):
                k = counts.get(operator, 0)
                counts[operator] = k + 1
                for side in SIDES:
                    out.append(Mutant(module, qualname, getattr(node, "lineno", fn.lineno), operator, detail, side, k))
    return out


# --- applying one --------------------------------------------------------------------------


class _Apply(ast.NodeTransformer):
    """Mutates the `index`-th site of `operator` in one function's body."""

    def __init__(self, target: ast.AST, operator: str) -> None:
        self.target, self.operator = target, operator

    def visit(self, node: ast.AST) -> Any:
        if node is self.target:
            return self.mutate(node)
        return super().visit(node)

    def mutate(self, node: Any) -> Any:
        op = self.operator
        if op == "const":
            value = node.value
            new: Any = (not value) if isinstance(value, bool) else (value + 1 if isinstance(value, int) else "")
            return _guarded(ast.Constant(new), node)
        if op == "compare":
            changed = copy.deepcopy(node)
            changed.ops = [_SWAP[type(changed.ops[0])](), *changed.ops[1:]]
            return _guarded(changed, node)
        if op == "slice":
            changed = copy.deepcopy(node)
            if node.upper is not None:
                changed.upper = ast.BinOp(node.upper, ast.Sub(), ast.Constant(1))
            else:
                changed.lower = ast.BinOp(node.lower, ast.Add(), ast.Constant(1))
            guard = ast.Call(func=ast.Name(GUARD, ast.Load()), args=[], keywords=[])
            for part in ("lower", "upper"):
                new_bound, old_bound = getattr(changed, part), getattr(node, part)
                if new_bound is not old_bound and old_bound is not None:
                    setattr(changed, part, ast.IfExp(test=guard, body=new_bound, orelse=old_bound))
            return changed
        if op == "swap-args":
            changed = copy.deepcopy(node)
            changed.args[0], changed.args[1] = changed.args[1], changed.args[0]
            return _guarded(changed, node)
        if op == "drop-item":
            changed = copy.deepcopy(node)
            changed.elts = changed.elts[1:]
            return _guarded(changed, node)
        if op == "drop-stmt":
            return ast.If(test=ast.UnaryOp(ast.Not(), ast.Call(func=ast.Name(GUARD, ast.Load()), args=[], keywords=[])),
                          body=[node], orelse=[])
        raise ValueError(op)


def _owner(module: Any, qualname: str) -> tuple[Any, str, FunctionType]:
    parts = qualname.split(".")
    owner = module if len(parts) == 1 else getattr(module, parts[0])
    raw = inspect.getattr_static(owner, parts[-1])
    fn = getattr(raw, "__func__", None) or getattr(raw, "fget", None) or raw
    return owner, parts[-1], fn


def compiled(m: Mutant) -> tuple[FunctionType, Any]:
    """The function `m` mutates and its mutated code (ValueError when it cannot be made)."""
    module = importlib.import_module(m.module)
    tree = ast.parse(Path(module.__file__ or "").read_text())
    fn_node = dict(_functions(tree))[m.qualname]
    target = [node for op, node, _ in _body_sites(fn_node) if op == m.operator][m.index]
    fn_node = _Apply(target, m.operator).visit(fn_node)
    fn_node.decorator_list = []
    holder = ast.Module(body=[fn_node], type_ignores=[])
    if "." in m.qualname:  # a method: compiled inside its class, so `__class__` and private names resolve alike
        holder = ast.Module(body=[ast.ClassDef(name=m.qualname.split(".")[0], bases=[], keywords=[], body=[fn_node],
                                               decorator_list=[], type_params=[])], type_ignores=[])
    ast.fix_missing_locations(holder)
    try:
        code = compile(holder, module.__file__ or m.module, "exec")
    except (SyntaxError, TypeError) as exc:
        raise ValueError(f"does not compile: {exc}") from exc
    scratch: dict[str, Any] = {}
    exec(code, {**vars(module), GUARD: Side.fire}, scratch)
    made = scratch[m.qualname.split(".")[0]]
    new_fn = inspect.getattr_static(made, m.qualname.split(".")[-1]) if "." in m.qualname else made
    new_fn = getattr(new_fn, "__func__", None) or getattr(new_fn, "fget", None) or new_fn
    _, _, original = _owner(module, m.qualname)
    if new_fn.__code__.co_freevars != original.__code__.co_freevars:
        raise ValueError("closure differs")
    setattr(module, GUARD, Side.fire)
    return original, new_fn.__code__.replace(co_name=original.__code__.co_name)


@contextmanager
def applied(original: FunctionType, code: Any) -> Iterator[None]:
    """`code` in place of `original`'s for the block."""
    saved = original.__code__
    original.__code__ = code
    try:
        yield
    finally:
        original.__code__ = saved


# --- playing and judging -------------------------------------------------------------------


def scenarios(task_id: str) -> list[tuple[Any, tuple[str, ...]]]:
    from colabkit.runner.audit import Policy, Scenario

    return [
        (Scenario(task_id, "d", budget=5, gates="none", policies={
            "ai": Policy(("code:0", "msg:1", "slip", "edit:1", "code:2")), "D": Policy(("code:3", "msg:1", "edit:0"))}),
         ("single", "default-d", "memory-d")),
        (Scenario(task_id, "r", budget=4, gates="edits", profile="full", policies={
            "ai": Policy(("edit:0", "code:0", "edit:1", "finish")), "R": Policy(("msg:0", "code:1"), "approve-oldest")}),
         ("single", "default-r", "scaffolded-r", "preassigned-r")),
        (Scenario(task_id, "dr", budget=6, gates="none", cost_cap=9_000, policies={
            "ai": Policy(("code:0", "edit:0", "msg:0") * 2), "D": Policy(("msg:1", "dm:0", "code:0")),
            "R": Policy(("code:2", "wait", "dm:1", "msg:0"))}),
         ("single", "default-dr", "memory-dr")),
    ]


TERMINATION = {"rule": "ai_budget"}
"""The termination rule every scenario is played under (`--termination`; the study's by default)."""


def play_guarded(spec: Any, task: Any, scenario: Any) -> Any:
    from colabkit.runner.audit.player import play, scenario_spec

    if spec.settings.termination != TERMINATION["rule"]:
        spec = spec.model_copy(update={"settings": spec.settings.model_copy(update={"termination": TERMINATION["rule"]})})
    Side.structure, Side.team = bool(_structures(spec.variant)), bool(spec.variant.humans)
    try:
        return play(scenario_spec(spec, scenario), task, scenario)
    finally:
        Side.structure = Side.team = False


def _structures(variant: Any) -> tuple[Any, ...]:
    from colabkit.session.structure.registry import structures_for

    return structures_for(variant)


def observe(task: Any, plays: list[tuple[Any, tuple[str, ...]]]) -> tuple[dict[str, list[str]], set[str]]:
    """Every run's whole trace (nothing projected) by scenario and variant, and the checks'
    violations (each prefixed by its scenario's index: "k: VIOLATION ...")."""
    from colabkit.runner import build_spec
    from colabkit.runner.audit.invariants import check_all
    from colabkit.runner.audit.trace import Declared, same_trace, trace_of

    traces: dict[str, list[str]] = {}
    found: set[str] = set()
    for k, (scenario, names) in enumerate(plays):
        runs = [play_guarded(build_spec(task.id, n, 0), task, scenario) for n in names]
        for run in runs:
            t = trace_of(run, Declared())
            traces[f"{k}/{run.variant}"] = [f"{c}: {line}" for c, lines in sorted(t.channels.items()) for line in lines]
        found |= {f"{k}: {v.render()}" for v in check_all(scenario, runs, runs[0].spec.settings.termination)
                  + same_trace(runs)}
    return traces, found


def executed_lines(task: Any, plays: list[Any]) -> set[tuple[str, int]]:
    """The (module file, line) pairs of `MODULES` the unmutated scenarios run (a site never run
    cannot be observed: the sample is drawn from the sites that run)."""
    files = {importlib.import_module(m).__file__ for m in MODULES}
    seen: set[tuple[str, int]] = set()

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename not in files:
            return None
        seen.add((frame.f_code.co_filename, frame.f_lineno))

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                seen.add((frame.f_code.co_filename, frame.f_lineno))
            return local
        return local

    import threading

    sys.settrace(tracer)
    threading.settrace(tracer)
    try:
        observe(task, plays)
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
    return seen


def declared_only(task: Any, plays: list[Any], m: Mutant, base_projected: dict[str, list[str]]) -> bool:
    """Whether the mutant's runs, each projected by its own variant's declared parts, equal the
    unmutated ones (it changed only what a structure declares: equivalent for noninterference)."""
    original, code = compiled(m)
    with applied(original, code):
        return projected(task, plays) == base_projected


def projected(task: Any, plays: list[Any]) -> dict[str, list[str]]:
    from colabkit.runner import build_spec
    from colabkit.runner.audit.trace import declared, trace_of

    out = {}
    for k, (scenario, names) in enumerate(plays):
        for n in names:
            run = play_guarded(build_spec(task.id, n, 0), task, scenario)
            t = trace_of(run, declared(run.spec.variant))
            out[f"{k}/{n}"] = [f"{c}: {line}" for c, lines in sorted(t.channels.items()) for line in lines]
    return out


def judge(m: Mutant, task: Any, plays: list[Any], base: tuple[dict[str, list[str]], set[str]]) -> dict[str, Any]:
    Side.wanted = m.side
    started = time.monotonic()
    try:
        original, code = compiled(m)
    except ValueError as exc:
        return {"mutant": m.name, "status": "not-applied", "why": str(exc)}
    try:
        with applied(original, code):
            traces, found = observe(task, plays)
    except Exception as exc:  # the mutant crashed the run outside the session: the audit's run fails loudly
        return {"mutant": m.name, "status": "caught", "why": f"crash: {type(exc).__name__}: {str(exc)[:120]}",
                "seconds": round(time.monotonic() - started, 2)}
    changed = sorted(key for key in set(traces) | set(base[0]) if traces.get(key) != base[0].get(key))
    new = sorted(found - base[1])
    dirty = {v.partition(":")[0] for v in base[1]}  # scenarios the unmutated engine already fails
    clean = [v for v in new if v.partition(":")[0] not in dirty]
    status = "caught" if clean else "caught-dirty" if new else "survived" if changed else "unobservable"
    return {"mutant": m.name, "status": status, "changed": changed[:4], "why": (clean or new or [""])[0][:300],
            "seconds": round(time.monotonic() - started, 2), **{"site": asdict(m)}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sample", type=int, default=40, help="mutants drawn at random from every site (default 40)")
    parser.add_argument("--seed", type=int, default=1, help="which sample (default 1)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/mutants.json"))
    parser.add_argument("--termination", default="ai_budget", choices=("ai_budget", "either_side", "all_sides"),
                        help="the rule every scenario is played under (default: the study's, ai_budget)")
    args = parser.parse_args(argv)
    TERMINATION["rule"] = args.termination

    import logging

    logging.disable(logging.WARNING)
    from colabkit.tasks import load_tasks

    task = load_tasks().get("demo_archaeology/0/0")
    plays = scenarios(task.id)
    start = time.monotonic()
    run_lines = executed_lines(task, plays)
    every = all_mutants()
    files = {m: importlib.import_module(m).__file__ for m in MODULES}
    reached = [m for m in every if (files[m.module], m.line) in run_lines]
    chosen = random.Random(args.seed).sample(reached, min(args.sample, len(reached)))
    base = observe(task, plays)
    base_projected = projected(task, plays)
    again = observe(task, plays)
    if again != base:
        raise SystemExit("the unmutated runs differ between two plays: the traces are not deterministic")
    results = []
    for i, m in enumerate(chosen, 1):
        r = judge(m, task, plays, base)
        if r["status"] == "survived" and declared_only(task, plays, m, base_projected):
            r["status"], r["why"] = "declared-only", "changes only what the structure declares (projected out)"
        results.append(r)
        print(f"[{i}/{len(chosen)}] {r['status']:12} {m.name}", file=sys.stderr, flush=True)
    counts = {s: sum(r["status"] == s for r in results)
              for s in ("caught", "caught-dirty", "survived", "declared-only", "unobservable", "not-applied")}
    observable = counts["caught"] + counts["caught-dirty"] + counts["survived"]
    summary = {"sites": len(every), "sites_run": len(reached), "sampled": len(chosen), "seed": args.seed,
               "termination": args.termination, **counts,
               "score": round((counts["caught"] + counts["caught-dirty"]) / observable, 3) if observable else None,
               "strict_score": round(counts["caught"] / observable, 3) if observable else None,
               "seconds": round(time.monotonic() - start, 1),
               "baseline_violations": sorted(base[1])}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "results": results}, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "baseline_violations"}))
    for r in results:
        if r["status"] == "survived":
            print(textwrap.shorten(f"SURVIVED {r['mutant']}: trace changed in {', '.join(r['changed'])}", 300))
    return 0


if __name__ == "__main__":
    sys.exit(main())
