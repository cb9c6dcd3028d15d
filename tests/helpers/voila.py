"""Participant pages served by Voilà as `colabkit seat` prints them, for the browser seat tests.

`voila_pages(tmp_path)` yields `serve(parameters, scripts, cull_s)`, which writes a participant's
notebook copy (`colabkit.seat.participant_notebook`) and serves it with `voila_command`, and
`start(command, cwd, scripts)`, which serves a command as printed (by `colabkit seat` itself);
each returns the page's URL. The servers run with the scripted provider plugin, so the page's
kernel and the session host it starts answer `scripted/...` models; every server started is
stopped, and the session hosts serving the results folder too, when the block ends.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from helpers import seat_scenario as sc
from helpers.lab import free_port, stop, wait_serving
from helpers.scripted_plugin import subprocess_env


@contextmanager
def voila_pages(tmp_path: Path) -> Iterator[tuple[Any, Any, Path, list[tuple[subprocess.Popen, Any]]]]:
    """(serve, start, results folder, servers) for one test's participant pages."""
    from colabkit.seat import participant_notebook, voila_command
    from colabkit.seat.pages import KERNEL_CULL_S

    servers: list[tuple[subprocess.Popen, Any]] = []
    results = tmp_path / "results"

    def start(command: str, cwd: Path, scripts: dict) -> str:
        port = next(int(arg.split("=", 1)[1]) for arg in shlex.split(command) if arg.startswith("--port="))
        log = (tmp_path / f"voila-{port}.log").open("wb")
        server = subprocess.Popen(shlex.split(command), cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                  env=subprocess_env(default=sc.DEFAULT, scripts=scripts))
        servers.append((server, log))
        # any answer means it is serving (the page itself would join the session: not asked here)
        wait_serving(f"http://127.0.0.1:{port}/voila/static/", server, Path(log.name))
        return f"http://127.0.0.1:{port}/"

    def serve(parameters: dict, scripts: dict, cull_s: int = KERNEL_CULL_S) -> str:
        notebook = participant_notebook(tmp_path / "pages", {**parameters, "out": str(results)})
        return start(voila_command(notebook, free_port(), cull_s=cull_s), notebook.parent, scripts)

    try:
        yield serve, start, results, servers
    finally:
        for server, log in servers:
            stop(server)
            log.close()
        sc.stop_hosts(results)
