"""The Makefile's conveniences: setup says what it builds and how long each step took (a
failing step still fails setup), `make lab` and `make docs` take `PORT=` and open no browser,
`make test` leaves the heavy tests out and CI runs every test.

Setup itself is not run here (it is `make test`'s first step); its progress wrapper
(tools/timed.sh) is, and `make -n` shows the recipes as make would run them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from helpers.schedule import LONGEST_FIRST, SHARED_UNITS, unit_of

REPO = Path(__file__).resolve().parents[1]
TIMED = REPO / "tools" / "timed.sh"


def timed(*args: str, every: str = "30") -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(TIMED), *args], capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin", "TIMED_EVERY": every})


def test_a_step_says_what_it_builds_while_it_runs_and_how_long_it_took():
    done = timed("the locked packages", "sleep", "2.5", every="1")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0] == "== the locked packages"
    assert any(line.startswith("   ... the locked packages: 0m0") for line in lines[1:-1])  # alive meanwhile
    assert lines[-1].startswith("   the locked packages: done in 0m0")


def test_a_failing_step_fails_with_its_own_status():
    done = timed("a broken step", "bash", "-c", "exit 3")
    assert done.returncode == 3 and "a broken step: FAILED (exit 3)" in done.stdout


def test_setup_wraps_every_install_step_and_states_time_and_size():
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = text[text.index("$(STAMP):"):text.index("\nlock:")]
    assert recipe.count("$(TIMED)") >= 5 and "--require-hashes" in recipe
    assert "GB" in recipe and "min" in recipe  # the measured time and size, said before it starts


def make_n(*args: str) -> str:
    done = subprocess.run(["make", "--no-print-directory", "-n", *args], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_lab_and_docs_take_a_port_and_open_no_browser():
    assert "--no-browser --port=8888" in make_n("lab")
    assert "--no-browser --port=8890" in make_n("lab", "PORT=8890")
    assert make_n("docs").endswith("mkdocs serve --no-strict -a 127.0.0.1:8000 --watch colabkit --watch notebooks")
    assert "-a 127.0.0.1:8001" in make_n("docs", "PORT=8001")


def test_make_test_leaves_the_heavy_tests_out_and_ci_runs_every_test():
    def pytest_line(target: str, *variables: str) -> str:
        env = {k: v for k, v in os.environ.items() if k != "CI"}  # the caller's CI must not decide the quick line
        done = subprocess.run(["make", "--no-print-directory", "-n", target, *variables], cwd=REPO,
                              capture_output=True, text=True, timeout=30, env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout[done.stdout.index("-m pytest"):].replace("\\\n", " ")

    quick, everything, in_ci = pytest_line("test"), pytest_line("test-all"), pytest_line("test", "CI=true")
    for line in (quick, everything, in_ci):  # a file at a time, in conftest's order
        assert "--dist loadfile --no-loadscope-reorder" in line and "--durations=30" in line
    assert '-m "not heavy"' in quick and '-m ""' in everything and '-m ""' in in_ci
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").split("\n")
    assert "set -euo pipefail" in ci and "export CI=true" in ci and "make test" in ci


def test_the_schedule_names_test_files_that_exist():
    files = {p.name for p in (REPO / "tests").glob("test_*.py")}
    assert set(SHARED_UNITS) <= files
    assert set(LONGEST_FIRST) <= {unit_of(name) for name in files}
