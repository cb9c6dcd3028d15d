"""What "data-changing code" means: one operational rule, the engine's and the member's.

A gate scoped `data_changing` holds only code that changes the team's data. The rule is stated
to every member of a gated variant (`DATA_CHANGING_RULE`, in the gate rules) and decided by
`data_changes`, which the engine applies to a proposed cell and a member can apply to a cell
before proposing it: the same function, so a member can always tell whether a cell will be held.

A cell is data-changing when, at the top level of the cell (not inside a function or class it
defines), it

1. assigns to a name that existed before the cell (`df = df.dropna()`, `df = pd.read_csv(...)`
   again, `n += 1`, `(df := ...)`): "existed" means some cell that has run bound it, at its top
   level, by any statement (an assignment, an import, a loop, a `def`);
2. changes an object such a name holds: an item or attribute assignment or deletion
   (`df['x'] = ...`, `df.loc[i, 'x'] = ...`, `df.columns = [...]`, `del df['x']`, `del df`), a
   call with `inplace=True` (`df.dropna(inplace=True)`), or a mutating method (`append`,
   `extend`, `insert`, `pop`, `popitem`, `remove`, `clear`, `update`, `sort`, `reverse`,
   `setdefault`, `add`, `discard`) called on it;
3. writes, moves or deletes a file (`.to_csv(...)` and the other pandas writers, `open(...)` in
   a write or append mode, `np.save`, `Path.write_text`, `os.remove`, `shutil`).

Everything else is not: new names (`merged = df.merge(other)`, even `merged['x'] = 1` in the
cell that made `merged`), prints, plots, imports, loops and their variables, function
definitions. A cell that does not parse cannot run, so it changes nothing. Aliases are not
followed (`x = df` then `x['a'] = 1` in a later cell changes `x`, a name that existed: held;
in the same cell: not).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator

DATA_CHANGING_RULE = (
    "Data-changing code is a cell that assigns to a name that existed before it (df = ..., df += ...), changes "
    "what such a name holds (df['x'] = ..., df.columns = ..., del df[...], inplace=True, .append/.pop/.update/"
    ".sort and other mutating methods), or writes, moves or deletes a file (.to_csv, open(..., 'w'), os.remove). "
    "New names, prints, plots, imports and loops are not.")
"""The rule as every member of a variant with a data-changing gate reads it (`data_changes` decides it)."""

MUTATING_METHODS = frozenset({"append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "sort",
                              "reverse", "setdefault", "add", "discard"})
_WRITES = re.compile(
    r"""\.to_(csv|excel|parquet|json|pickle|feather|hdf|sql|stata|orc)\s*\("""
    r"""|\bopen\s*\([^)]*['"][rbt]*[wax+][rbt+]*['"]"""
    r"""|\.write_(text|bytes)\s*\(|\bnp\.save(txt|z)?\s*\("""
    r"""|\bos\.(remove|unlink|rename|replace|rmdir)\s*\(|\bshutil\.|\.unlink\s*\("""
)


def _top_level(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node of the cell's top level: not inside a function, class, lambda or comprehension."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp,
                             ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _root(node: ast.AST) -> str | None:
    """The name an attribute or item chain starts from (`df` of `df.loc[0, 'x']`)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _parse(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


def _assigned(node: ast.AST) -> Iterator[ast.AST]:
    """The targets an assignment statement (or a walrus, or a `del`) writes to, unpacked."""
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.NamedExpr)) or (isinstance(node, ast.AnnAssign) and node.value):
        targets = [node.target]
    elif isinstance(node, ast.Delete):
        targets = list(node.targets)
    while targets:
        target = targets.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            targets.extend(target.elts)
        elif isinstance(target, ast.Starred):
            targets.append(target.value)
        else:
            yield target


def data_changes(code: str, existing: Iterable[str]) -> tuple[str, ...]:
    """Why `code` is data-changing given the names that existed before it (empty: it is not).

    The one rule (module docstring) that the engine holds cells by and a member can check a cell
    against before proposing it; each reason names what it changes, e.g. "assigns to df".
    """
    reasons: list[str] = []
    if _WRITES.search(code):
        reasons.append("writes a file")
    tree = _parse(code)
    if tree is None:
        return tuple(reasons)
    names = set(existing)
    for node in _top_level(tree):
        for target in _assigned(node):
            root = _root(target)
            if root in names:
                verb = "deletes" if isinstance(node, ast.Delete) and isinstance(target, ast.Name) else \
                    "assigns to" if isinstance(target, ast.Name) else "changes"
                reasons.append(f"{verb} {root}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _root(node.func) in names:
            inplace = any(k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
                          for k in node.keywords)
            if inplace or node.func.attr in MUTATING_METHODS:
                reasons.append(f"changes {_root(node.func)} ({'inplace=True' if inplace else node.func.attr})")
    return tuple(dict.fromkeys(reasons))


def bound_names(code: str) -> frozenset[str]:
    """The names a cell binds at its top level, by any statement: what exists after it has run."""
    tree = _parse(code)
    if tree is None:
        return frozenset()
    names: set[str] = set()
    for node in _top_level(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names if alias.name != "*")
    return frozenset(names)


def names_defined(cells: Iterable[str]) -> tuple[str, ...]:
    """The names the cells that have run bound (sorted): what a later cell's rule counts as existing."""
    return tuple(sorted(set().union(*(bound_names(code) for code in cells))))
