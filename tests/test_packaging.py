"""One environment, three descriptions that must agree: requirements.lock (what `make setup`
installs), pyproject.toml (the ranges the suite supports) and environment.yml (conda's view,
pinned to the lock); and the running environment must be exactly the lock (a long-lived
`.venv` hides drift). Names are compared after normalisation; conda's `pysoundfile` is pip's
`soundfile`."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from colabkit.environment import EnvironmentStamp, drift, environment_stamp, lock_path, parse_lock

REPO = Path(__file__).resolve().parents[1]
CONDA_TO_PIP = {"pysoundfile": "soundfile"}
NOT_PACKAGES = {"python", "pip"}


def normalise(spec: str) -> str:
    name = re.split(r"[\s<>=!~\[;]", spec.strip(), maxsplit=1)[0]
    name = re.sub(r"[-_.]+", "-", name.lower())
    return CONDA_TO_PIP.get(name, name)


def pyproject_packages() -> set[str]:
    with (REPO / "pyproject.toml").open("rb") as handle:
        return {normalise(spec) for spec in tomllib.load(handle)["project"]["dependencies"]}


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


def pyproject_requirements() -> list[Requirement]:
    with (REPO / "pyproject.toml").open("rb") as handle:
        project = tomllib.load(handle)
    extras = project["project"]["optional-dependencies"]
    specs = [*project["project"]["dependencies"], *(s for extra in extras.values() for s in extra)]
    return [Requirement(s) for s in specs if not s.startswith("colabkit")]


def environment_pins(text: str) -> dict[str, str]:
    """`name==version` items of environment.yml, by pip name."""
    pins = {}
    for line in text.splitlines():
        match = re.match(r"^\s*- ([A-Za-z][A-Za-z0-9._-]*)==(\S+)", line.split("#", 1)[0])
        if match:
            pins[normalise(match.group(1))] = match.group(2)
    return pins


def test_the_lock_pins_every_requirement_within_pyproject_ranges():
    pins = parse_lock(lock_path().read_text(encoding="utf-8"))
    assert len(pins) > 100, "the lock must hold the whole environment, dependencies of dependencies included"
    for requirement in pyproject_requirements():
        name = normalise(requirement.name)
        assert name in pins, f"{name} is required by pyproject.toml but not in requirements.lock (run make lock)"
        assert requirement.specifier.contains(pins[name], prereleases=True), \
            f"requirements.lock pins {name}=={pins[name]}, outside pyproject.toml's {requirement}"
    with (REPO / "pyproject.toml").open("rb") as handle:
        build = [Requirement(s) for s in tomllib.load(handle)["build-system"]["requires"]]
    assert all(normalise(r.name) in pins for r in build), "the editable install's build tools are locked too"
    assert all("--hash=sha256:" in block for block in lock_path().read_text().split("\n\n") if "==" in block)


def test_environment_yml_pins_the_locked_versions():
    pins = parse_lock(lock_path().read_text(encoding="utf-8"))
    conda = environment_pins((REPO / "environment.yml").read_text(encoding="utf-8"))
    assert set(conda) == pyproject_packages(), "environment.yml pins exactly pyproject.toml's packages"
    wrong = {name: (version, pins.get(name)) for name, version in conda.items() if pins.get(name) != version}
    assert not wrong, f"environment.yml differs from requirements.lock (run make lock): {wrong}"


def test_drift_names_missing_changed_and_unlocked_packages():
    pins = {"numpy": "2.4.6", "pandas": "3.1.1", "scipy": "1.17.1"}
    have = {"numpy": "2.4.6", "pandas": "3.0.0", "colabkit": "0.1.0", "pip": "26.3", "rich": "14.0"}
    assert drift(pins, have) == ("scipy missing (locked 1.17.1)", "pandas 3.0.0 (locked 3.1.1)",
                                 "rich 14.0 (not in the lock)")
    assert drift(pins, {**pins, "pip": "1"}) == ()
    assert EnvironmentStamp(lock="ab", drift=()).exact and not EnvironmentStamp(lock=None).exact
    assert "1 difference(s): rich" in EnvironmentStamp(lock="ab", drift=("rich 14.0 (not in the lock)",)).describe()


def test_this_environment_is_exactly_the_lock():
    """What `make setup` installed is what the lock says, nothing more or less (pip freeze
    compared with the lock), so a fresh clone tests what a user gets."""
    stamp = environment_stamp()
    assert stamp.lock is not None
    assert stamp.exact, f"the environment differs from requirements.lock (run make setup): {stamp.drift}"
    freeze = subprocess.run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"], capture_output=True,
                            text=True, check=True).stdout
    frozen = {normalise(n): v for n, v in (line.split("==", 1) for line in freeze.splitlines() if "==" in line)}
    locked = parse_lock(lock_path().read_text(encoding="utf-8"))
    assert {n: v for n, v in frozen.items() if n not in ("pip", "setuptools", "wheel")} == \
        {n: v for n, v in locked.items() if n not in ("pip", "setuptools", "wheel")}


def test_version_names_the_lock():
    done = subprocess.run([sys.executable, "-m", "colabkit", "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("colabkit ") and f"lock {environment_stamp().lock}" in done.stdout
