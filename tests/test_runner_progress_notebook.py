"""A progress bar rendered by papermill ends at its final state, not its first.

tqdm's notebook widget keeps, as the text a rendered notebook shows, what the bar said when
it was first displayed ("0%"); the batch's bar is displayed under a display id and sent once
more when it closes. The bar runs in a worker thread, as `run_sync` runs sessions in Jupyter.
"""

from __future__ import annotations

import nbformat
import pytest

CELL = """\
import threading
from colabkit.runner.progress import Progress, SessionOutcome

def work():
    bar = Progress(2, desc="sessions")
    for i in range(2):
        bar.finished(SessionOutcome(session_id=str(i), task_id="t", variant="v", seed=0, status="done",
                                    ran_here=True))
    bar.close()

worker = threading.Thread(target=work)
worker.start()
worker.join()
"""


@pytest.mark.slow  # a notebook kernel
def test_a_rendered_progress_bar_shows_its_final_state(tmp_path):
    import papermill

    source, executed = tmp_path / "bar.ipynb", tmp_path / "out.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(CELL)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, source)
    papermill.execute_notebook(str(source), str(executed), kernel_name="python3", progress_bar=False)
    outputs = nbformat.read(executed, as_version=4).cells[0].outputs
    shown = [o["data"]["text/plain"] for o in outputs if o.get("output_type") == "display_data"]
    assert len(shown) == 1 and "sessions: 100%" in shown[0] and "2/2" in shown[0] and "done 2" in shown[0]
