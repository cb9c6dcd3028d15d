"""pyproject.toml and environment.yml must install the same packages (pip and conda users
otherwise get different suites). Names are compared after normalisation; conda's
`pysoundfile` is pip's `soundfile`."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONDA_TO_PIP = {"pysoundfile": "soundfile"}
NOT_PACKAGES = {"python", "pip"}


def normalise(spec: str) -> str:
    name = re.split(r"[\s<>=!~\[;]", spec.strip(), maxsplit=1)[0]
    name = re.sub(r"[-_.]+", "-", name.lower())
    return CONDA_TO_PIP.get(name, name)


# Optional extras a conda user gets too (environment.yml lists them with the dependencies).
CONDA_EXTRAS = ("inspect",)


def pyproject_packages() -> set[str]:
    with (REPO / "pyproject.toml").open("rb") as handle:
        project = tomllib.load(handle)["project"]
    extras = project["optional-dependencies"]
    return {normalise(spec) for spec in [*project["dependencies"], *(s for e in CONDA_EXTRAS for s in extras[e])]}


def test_the_test_extra_includes_every_optional_extra():
    """CI installs `.[test]`: an optional extra missing from it would turn its tests into skips."""
    with (REPO / "pyproject.toml").open("rb") as handle:
        extras = tomllib.load(handle)["project"]["optional-dependencies"]
    for name, specs in extras.items():
        assert name == "test" or set(specs) <= set(extras["test"]), f"extra {name!r} is not in the test extra"


def environment_packages(text: str) -> set[str]:
    """List items under `dependencies:` (conda's and the nested pip list), minus `-e .`."""
    found, inside = set(), False
    for line in text.splitlines():
        stripped = line.split("#", 1)[0].strip()
        if not line.startswith((" ", "-")) and stripped:
            inside = stripped == "dependencies:"
            continue
        if not inside or not stripped.startswith("- "):
            continue
        item = stripped[2:].strip()
        if item.endswith(":") or item.startswith("-e "):
            continue
        found.add(normalise(item))
    return found - NOT_PACKAGES


def test_normalise():
    assert normalise("jupyter_client>=8.6") == "jupyter-client"
    assert normalise("pydantic>=2.7,<3") == "pydantic"
    assert normalise("python=3.11") == "python"
    assert normalise("pysoundfile>=0.12") == "soundfile"
    assert normalise("Llama.CPP_python >=0.3") == "llama-cpp-python"


def test_environment_parser_reads_conda_and_pip_lists():
    text = ("name: x\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.11\n  - pip\n"
            "  - pandas>=2.2  # comment\n  - pip:\n      - litellm>=1.80\n      - -e .\n")
    assert environment_packages(text) == {"pandas", "litellm"}


def test_pyproject_and_environment_name_the_same_packages():
    pip = pyproject_packages()
    conda = environment_packages((REPO / "environment.yml").read_text(encoding="utf-8"))
    assert pip == conda, f"only in pyproject.toml: {sorted(pip - conda)}; only in environment.yml: {sorted(conda - pip)}"
    assert {"pandas", "litellm", "llama-cpp-python", "pydantic", "soundfile", "orjson"} <= pip
