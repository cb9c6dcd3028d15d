"""The Dask executor: the same experiment on a LocalCluster of worker processes produces the
same session ids and records as the local executor (scripted model, real kernels)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from helpers.scripted import use_scripted
from helpers.scripted_plugin import subprocess_env

from colabkit.runner import load_experiment, read_journal, run_experiment
from colabkit.session import Event, comparable
from colabkit.store import SessionRecord

CODE = {"thought": "look", "action": "execute_code", "content": "print(6 * 7)"}
VOLATILE = {"started", "finished", "isolation"}  # wall clock, and the sandbox's random uid


def write(tmp_path: Path, name: str, **fields) -> Path:
    data = {"name": "dask", "tasks": {"ids": ["demo_archaeology/0/0", "demo_archaeology/1/0"]},
            "variants": ["single", "default-dr"], "seeds": [0], "models": {"default": "scripted/everyone"},
            "settings": {"action_budget": 2, "max_rounds": 2}, "results": str(tmp_path / name), **fields}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def stored(folder: Path) -> tuple[dict, list[dict]]:
    record = SessionRecord.model_validate_json((folder / "session.json").read_bytes())
    events = [Event.model_validate_json(line) for line in (folder / "events.jsonl").read_bytes().splitlines()]
    return record.model_dump(mode="json", exclude=VOLATILE), comparable(events)


def test_dask_on_a_local_cluster_produces_the_local_executors_sessions(tmp_path, monkeypatch):
    from distributed import LocalCluster

    for key, value in subprocess_env(default=CODE).items():  # the workers' scripted model
        monkeypatch.setenv(key, value)
    use_scripted({}, default=CODE)
    local = run_experiment(write(tmp_path, "local"), progress=False)

    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None) as cluster:
        path = write(tmp_path, "dask", executor={"kind": "dask", "scheduler": cluster.scheduler_address})
        exp = load_experiment(path)
        distributed = run_experiment(path, progress=False)
        again = run_experiment(path, progress=False)

    assert [o.session_id for o in distributed.outcomes] == [o.session_id for o in local.outcomes]
    assert [o.status for o in distributed.outcomes] == ["done"] * 4
    assert [o.status for o in again.outcomes] == ["cached"] * 4
    local_out = load_experiment(write(tmp_path, "local")).folder()
    assert exp.experiment_id == local_out.name  # the executor is not part of the experiment
    for outcome in local.outcomes:
        assert stored(exp.folder() / outcome.session_id) == stored(local_out / outcome.session_id)
    journal = read_journal(exp.folder())
    assert len(journal) == 4 and os.getpid() not in set(journal.pid)  # run by the workers, not here


def test_a_dask_experiment_without_a_scheduler_is_a_config_error(tmp_path):
    from colabkit.errors import ColabkitError

    with pytest.raises(ColabkitError, match="executor: executor 'dask' needs a scheduler address"):
        load_experiment(write(tmp_path, "x", executor={"kind": "dask"}))
