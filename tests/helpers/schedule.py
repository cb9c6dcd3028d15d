"""How `make test` hands the test files to its workers (pytest-xdist, `--dist loadfile`), read by
tests/conftest.py.

A file's tests run on one worker, so its module fixtures are built once. Files that share work
(helpers.shared_sessions) form one unit, so one worker runs them one after the other and the
second finds the first's sessions built instead of waiting for them. The units start in the
order below (`--no-loadscope-reorder` keeps it: xdist's default starts the files with the most
tests first, which handed out the one-test real-model files last, so one worker ran the
longest while the other idled): the longest first, then the other files with slow tests, then
the rest, so the workers end together.
"""

from __future__ import annotations

SHARED_UNITS = {"test_e2e_real_model.py": "embedded-default-dr", "test_eval_real_model.py": "embedded-default-dr"}
# Longest first: the real-model and batch-process units, by the durations in docs/getting-started.md
# and issue 45 (the heavy ones run under make test-all): Single, Default-DR, colabkit run and the
# embedded judge's scoring; the batch processes; the fork with three seeds; ...
LONGEST_FIRST = ("embedded-default-dr", "test_runner_processes.py", "test_fork_real_model.py",
                 "test_runner_processes_kill.py", "test_e2e_real_model_scaffolded.py", "test_e2e_dynamic.py",
                 "test_runner_simulators.py")


def unit_of(file_name: str) -> str:
    """The unit of work a test file belongs to: its own name unless it shares work."""
    return SHARED_UNITS.get(file_name, file_name)
