"""The runner layer: sessions from names, into the store, one at a time or by the grid.

- `build_session` / `build_spec`: names (task id, variant, models per role) to a spec.
- `record_session` / `arecord_session`: run one session into a results folder unless it is
  finished; locked per session across processes; workspace in `<results>/.work/`.
- `Experiment` / `load_experiment`: the YAML config of a study (`experiments/*.yaml`).
- `run_experiment` / `arun_sessions`: many sessions at once (asyncio, bounded), resumable,
  with progress; or as tasks on a Dask cluster (`executor: dask`).
- `colabkit.runner.pipeline`: `colabkit batch`, the papermill notebooks over an experiment.
- `colabkit.runner.audit`: `colabkit audit`, proof that an experiment's variants differ only
  in personas and structure (no model calls).
"""

from colabkit.runner.batch import arun_sessions, run_experiment, run_sync
from colabkit.runner.build import build_session, build_spec
from colabkit.runner.experiment import METRICS, Experiment, load_experiment
from colabkit.runner.progress import BatchSummary, SessionOutcome, read_journal
from colabkit.runner.recorder import RETRYABLE_ENDINGS, arecord_session, record_session

__all__ = [
    "METRICS",
    "RETRYABLE_ENDINGS",
    "BatchSummary",
    "Experiment",
    "SessionOutcome",
    "arecord_session",
    "arun_sessions",
    "build_session",
    "build_spec",
    "load_experiment",
    "read_journal",
    "record_session",
    "run_experiment",
    "run_sync",
]
