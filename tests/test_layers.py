"""The library's layers import one way only: a lower layer never imports a higher one.

Layer order (lowest first) is the design card's; `errors` is shared by all, `cli` sits on top.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "colabkit"
ORDER = ["errors", "hashing", "tasks", "llm", "workspace", "team", "session", "store", "cli"]
# `llm` is a base utility beside `tasks`: neither needs the other.
INDEPENDENT = {("tasks", "llm"), ("llm", "tasks")}


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
