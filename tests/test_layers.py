"""The library's layers import one way only: a lower layer never imports a higher one.

Layer order (lowest first) is the design card's; `errors` is shared by all, `cli` sits on top.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "colabkit"
ORDER = ["errors", "hashing", "environment", "tasks", "llm", "workspace", "team", "session", "store", "evaluation",
         "export", "analysis", "runner", "seat", "cli"]
# `llm` is a base utility beside `tasks`; `analysis` and `runner` both sit on evaluation:
# neither of a pair needs the other. `seat` (a person at a seat: its widgets and entry points) sits
# beside the notebooks, above the runner it stores sessions through. `export` (other tools' formats)
# reads the store and the evaluation layer's scores; nothing below it needs it.
INDEPENDENT = {("tasks", "llm"), ("llm", "tasks"), ("analysis", "runner"), ("runner", "analysis")}


def imported_layers(path: Path) -> set[str]:
    layers = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
        layers |= {n.split(".")[1] for n in names if n.startswith("colabkit.")}
    return layers


@pytest.mark.parametrize("layer", ORDER[:-1])
def test_layer_imports_only_lower_layers(layer):
    rank = ORDER.index(layer)
    paths = [PACKAGE / f"{layer}.py"] if (PACKAGE / f"{layer}.py").exists() else sorted((PACKAGE / layer).rglob("*.py"))
    assert paths, f"layer {layer} not found"
    for path in paths:
        for other in imported_layers(path) - {layer}:
            assert other in ORDER, f"{path} imports unknown layer colabkit.{other}"
            assert ORDER.index(other) < rank and (layer, other) not in INDEPENDENT, \
                f"{path.relative_to(PACKAGE.parent)} imports higher layer colabkit.{other}"


# Gold answers reach only scoring: the evaluation layer, and `tasks show --with-gold` (where a
# researcher asks for them explicitly). Any other caller could leak them into a prompt.
SHOW_COMMAND = (PACKAGE / "cli" / "tasks_cmd.py", "_show")


def gold_callers(path: Path) -> list[tuple[str, int]]:
    """(innermost enclosing function or "<module>", line) of every `.gold_for` reference."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "gold_for":
            inside = [f for f in functions if f.lineno <= node.lineno <= (f.end_lineno or f.lineno)]
            found.append((max(inside, key=lambda f: f.lineno).name if inside else "<module>", node.lineno))
    return found


def test_gold_is_read_only_by_the_evaluation_layer():
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{line} in {func}"
                 for path in sorted(PACKAGE.rglob("*.py")) if (PACKAGE / "evaluation") not in path.parents
                 for func, line in gold_callers(path) if (path, func) != SHOW_COMMAND]
    assert not offenders, f"gold_for used outside colabkit/evaluation and `tasks show`: {offenders}"
    assert [f for f, _ in gold_callers(SHOW_COMMAND[0])] == ["_show"], "the check must see the allowed caller"
    assert any(gold_callers(p) for p in (PACKAGE / "evaluation").rglob("*.py"))


def module_graph() -> dict[str, set[str]]:
    """colabkit's modules and the colabkit modules each imports, in-function imports and
    `TYPE_CHECKING` blocks included (a lazy import is still a dependency)."""
    files = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.with_suffix("").relative_to(PACKAGE.parent).parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {resolve(a.name) for a in node.names if a.name.startswith("colabkit")}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                if base.startswith("colabkit"):
                    targets |= {resolve(f"{base}.{a.name}") for a in node.names}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles_even_inside_a_layer():
    graph = module_graph()
    assert graph["colabkit.evaluation.builtin"] >= {"colabkit.evaluation.metrics.support"}, "the graph must see imports"
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]], "the check must find a cycle"
    assert cycles(graph) == [], "import cycles (a piece in the wrong room: move it, see docs/layers.md)"


# The engine holds no structure-specific branch (issue 36 item 2): the loop, the effects and
# the scheduler reach a coordination structure only through the `Structure` hooks of the
# variant's `Composition`. Checked on the syntax tree of engine.py and scheduler.py: no
# identifier, attribute, keyword, argument or import names a structure's own part (the
# memory, a living memory, memory updates, a gate source, a preassigned table, the build of
# the memory), and no string names a structure's own request ids (`upd-`).
ENGINE_FILES = (PACKAGE / "session" / "engine.py", PACKAGE / "session" / "scheduler.py")
STRUCTURE_WORDS = ("memory", "living", "update", "gate_source", "gate_table", "gate_rules", "preassigned", "scaffold",
                   "dynamic")
STRUCTURE_STRINGS = ("upd-",)


def structure_names(source: str) -> list[tuple[str, int]]:
    """(name, line) of every name in `source`'s code (not its docstrings or comments) that names
    a structure's own part (`STRUCTURE_WORDS`), and of every string holding `STRUCTURE_STRINGS`."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.keyword | ast.arg) and node.arg:
            names = [node.arg]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or "", *(a.name for a in node.names), *(a.asname or "" for a in node.names)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found += [(node.value, getattr(node, "lineno", 0)) for s in STRUCTURE_STRINGS if s in node.value]
        found += [(n, getattr(node, "lineno", 0)) for n in names if any(w in n.lower() for w in STRUCTURE_WORDS)]
    return found


def test_the_engine_holds_no_structure_specific_branch():
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{line} {name}"
                 for path in ENGINE_FILES for name, line in structure_names(path.read_text(encoding="utf-8"))]
    assert not offenders, f"the engine names a structure's own part (call a Structure hook instead): {offenders}"
    probe = ('"""upd-1 in a docstring is fine."""\nif variant.memory:\n    x = f(memory_updates=1)\ny = "upd-2"\n'
             'from colabkit.session.structure.build_phase import build_memory\nif s.variant.gate_source == "self": pass\n')
    assert sorted(n for n, _ in structure_names(probe)) == [  # the check must see what it forbids
        "build_memory", "gate_source", "memory", "memory_updates", "upd-2"]
