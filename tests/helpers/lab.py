"""A JupyterLab server over a folder, for the browser tests (explorer and seat).

Started with the test's environment (e.g. the scripted provider plugin, so the notebook's
kernel answers `scripted/...` models), on a free local port with a random token; stopped
(and killed if it hangs) when the `with` block ends. Like `make lab`, it reads the project's
own Jupyter config (`jupyter/`, which allows root) and not the user's: no `--allow-root`.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PROJECT_CONFIG = REPO / "jupyter"


def project_config_env(env: dict[str, str] | None, user_dir: Path) -> dict[str, str]:
    """`env` with the project's Jupyter config searched first and an empty user config dir."""
    user_dir.mkdir(parents=True, exist_ok=True)
    return {**(env or os.environ), "JUPYTER_CONFIG_PATH": str(PROJECT_CONFIG), "JUPYTER_CONFIG_DIR": str(user_dir)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def start_lab(workdir: Path, log_path: Path, env: dict[str, str] | None = None,
              command: list[str] | None = None) -> Iterator[tuple[str, str]]:
    """(base url, token) of a JupyterLab serving `workdir`; its output goes to `log_path`.
    `command` replaces `python -m jupyter lab` (e.g. `make lab`'s own)."""
    port, token = free_port(), secrets.token_hex(16)
    log = log_path.open("wb")
    server = subprocess.Popen(
        [*(command or [sys.executable, "-m", "jupyter", "lab"]), "--no-browser", f"--port={port}", "--ip=127.0.0.1",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={workdir}",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=workdir, stdout=log, stderr=subprocess.STDOUT,
        env=project_config_env(env, log_path.parent / "jupyter-user-config"))
    base = f"http://127.0.0.1:{port}"
    try:
        wait_serving(f"{base}/api/status?token={token}", server, log_path)
        yield base, token
    finally:
        stop(server)
        log.close()


def wait_serving(url: str, server: subprocess.Popen, log_path: Path, timeout_s: float = 120) -> None:
    """Return once `url` answers (any HTTP status); fail with the log's tail if the server died."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(log_path.read_text(errors="replace")[-3000:]) from None
            time.sleep(0.5)


def stop(server: subprocess.Popen) -> None:
    """Terminate a server this test started, and kill it if it hangs."""
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()


def run_all_cells(page: Any, url: str) -> None:
    """Open the notebook at `url` in JupyterLab on a playwright `page` and run all its cells."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    page.goto(url, timeout=120_000)
    page.locator(".jp-Notebook").wait_for(timeout=120_000)
    select = page.get_by_role("button", name="Select Kernel", exact=True)
    try:  # Lab may ask which kernel to start; the notebook's own (python3) is preselected
        select.wait_for(timeout=15_000)
        select.click()
    except PlaywrightTimeout:
        pass
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_be_attached(timeout=120_000)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_text("Run All Cells", exact=True).click()
