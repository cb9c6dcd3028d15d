"""Which batch notebooks a rerun skips: those whose inputs (notebook, parameters, config,
package version, the experiment folder's data) are what they were after their last success."""

from __future__ import annotations

import os
from pathlib import Path

from colabkit.runner.pipeline import NotebookJob
from colabkit.runner.stages import NotebookStamps, folder_state


def _job(tmp_path: Path, name: str = "score") -> NotebookJob:
    source = tmp_path / f"{name}.ipynb"
    source.write_text("{}")
    output = tmp_path / "exp" / "notebooks" / f"{name}.ipynb"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("{}")
    return NotebookJob(name=name, source=source, output=output, parameters={"experiment": "x.yaml"})


def test_a_notebook_is_skipped_only_while_its_inputs_are_unchanged(tmp_path):
    exp = tmp_path / "exp"
    (exp / "s1" / "scores").mkdir(parents=True)
    (exp / "s1" / "session.json").write_text("{}")
    config = tmp_path / "experiment.yaml"
    config.write_text("a: 1")
    job = _job(tmp_path)
    stamps = NotebookStamps(exp / "notebooks", config)
    state = folder_state(exp, skip=["notebooks"])
    assert not stamps.unchanged(job, state)  # never ran
    stamps.record([job], state)
    reread = NotebookStamps(exp / "notebooks", config)
    assert reread.unchanged(job, state)

    # Not inputs: caches, journals, temporaries, the executed notebooks themselves.
    for name in ("llm-cache/x", "judge-cache/y", "runs.jsonl", ".s1.lock", "notebooks/other.log"):
        (exp / name).parent.mkdir(parents=True, exist_ok=True)
        (exp / name).write_text("noise")
    assert reread.unchanged(job, folder_state(exp, skip=["notebooks"]))

    (exp / "s1" / "scores" / "m.json").write_text("{}")  # a new score: the folder changed
    assert not reread.unchanged(job, folder_state(exp, skip=["notebooks"]))
    assert not NotebookStamps(exp / "notebooks", config).unchanged(
        NotebookJob(job.name, job.source, job.output, {"experiment": "y.yaml"}), state)  # other parameters
    config.write_text("a: 2")
    assert not NotebookStamps(exp / "notebooks", config).unchanged(job, state)  # another config
    job.output.unlink()
    assert not reread.unchanged(job, state)  # its executed copy is gone: it runs again
    os.utime(exp / "s1" / "session.json", (1, 1))
    assert folder_state(exp, skip=["notebooks"]) != state  # a rewritten session counts
