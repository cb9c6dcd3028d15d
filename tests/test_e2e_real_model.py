"""End to end with the real embedded model (`local/smollm2-135m`): sessions of the three
headline variants, and `colabkit run` on a real DiscoveryBench task, write valid trajectories
(Scaffolded-DR's session in tests/test_e2e_real_model_scaffolded.py, so the test workers share
the model's minutes evenly).

The tiny model rarely solves anything; these tests check the whole pipe holds against its
actual answers: every line an Event, seq contiguous, a record that parses and agrees with the
log, tables that load. Budgets are low so each session takes about a minute or two.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.embedded_sessions import check_trajectory, embedded_session_is_valid
from helpers.env import shared_data

from colabkit.tasks import load_tasks

REPO = Path(__file__).resolve().parents[1]
ARCHAEOLOGY_TASK = "archaeology/3/0"

pytestmark = pytest.mark.slow


# Low budgets: the scaffolded build phase alone is up to seven model answers (three proposals,
# a consolidation, two ratifications, one amending); scaffolded-dr is
# tests/test_e2e_real_model_scaffolded.py's (the longest of the three: a file of its own).
@pytest.mark.parametrize(("name", "budget", "rounds"), [("single", 4, 4), ("default-dr", 3, 2)])
def test_a_session_with_the_embedded_model_writes_a_valid_trajectory(tmp_path_factory, tmp_path, name, budget, rounds):
    record = embedded_session_is_valid(tmp_path_factory, tmp_path, name, budget, rounds)
    assert record.spec.variant.name == name and record.spec.settings.action_budget == budget


def test_colabkit_run_on_a_real_archaeology_task(tmp_path):
    discoverybench = shared_data()
    cmd = [sys.executable, "-m", "colabkit", "run", "--task", ARCHAEOLOGY_TASK, "--variant", "single",
           "--seed", "0", "--data-root", str(discoverybench), "--out", str(tmp_path), "--action-budget", "3",
           "--max-rounds", "4"]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 4 and lines[0].startswith("session: ")
    assert lines[1].startswith("ended by: ") and lines[2].startswith("final hypothesis: ")
    assert lines[3].startswith("plumbing-grade: local/smollm2-135m")  # the embedded model: said last
    folder = Path(lines[0].removeprefix("session: "))
    _, record, snapshot = check_trajectory(folder)
    assert record.task_id == ARCHAEOLOGY_TASK and record.spec.settings.action_budget == 3
    task = load_tasks(discoverybench).get(ARCHAEOLOGY_TASK)
    assert sorted(Path(f).name for f in snapshot.data_files) == sorted(d.path.name for d in task.datasets)
