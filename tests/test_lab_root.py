"""`make lab` works as root: its recipe reads the project's own Jupyter config (`jupyter/`,
`allow_root`), not the user's, and a JupyterLab started by that recipe's command as root serves.

The command is taken from the Makefile itself (so a recipe that loses the config fails
here), with `$(VENV)/bin/jupyter` as this venv's and the project's config dir; no
`--allow-root` is passed. Without the project config the same start is refused (the check
that this test can fail).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from helpers.lab import PROJECT_CONFIG, REPO, start_lab

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the root case needs root")


def lab_recipe() -> list[str]:
    text = (REPO / "Makefile").read_text()
    recipe = re.search(r"^lab:.*\n\t(.+)$", text, re.MULTILINE)
    assert recipe is not None, "the Makefile has no lab recipe"
    words = recipe.group(1).split()
    assert words[0] == "JUPYTER_CONFIG_PATH=$(CURDIR)/jupyter", words  # the project's config, first
    assert "--allow-root" not in words
    jupyter = str(Path(sys.executable).parent / "jupyter")
    assert "--no-browser" in words and "--port=$(PORT)" in words  # `make lab PORT=...`, no browser to open
    return [w.replace("$(VENV)/bin/jupyter", jupyter) for w in words[1:]
            if not w.startswith(("--notebook-dir", "--port=$(PORT)"))]  # start_lab picks a free port


def test_make_lab_starts_as_root_with_the_projects_jupyter_config(tmp_path):
    assert (PROJECT_CONFIG / "jupyter_server_config.json").is_file()
    with start_lab(tmp_path, tmp_path / "lab.log", command=lab_recipe()) as (base, token), \
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=10) as answer:
        assert answer.status == 200


def test_without_the_project_config_jupyterlab_refuses_root(tmp_path):
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "user"), "JUPYTER_CONFIG_PATH": str(tmp_path / "none")}
    done = subprocess.run([*lab_recipe(), "--no-browser", "--port=0"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Running as root is not recommended" in done.stderr
