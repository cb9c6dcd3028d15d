"""What an experiment's folder says about itself, so later commands need not be told again.

`colabkit batch` (with `--sessions-only` too) copies the experiment config into its folder as `experiment.yaml` (absolute
paths: `pipeline.write_config`). `colabkit score`, `export` and `fork` and the notebooks read
the data root, and for scoring the judge, metrics and repeats, from that copy when they are
given a path inside an experiment folder and no `--data-root`: a session of a real
DiscoveryBench task then never falls back to the demo tasks (empty targets, missing gold)
just because a flag was forgotten. A path outside any experiment folder (`colabkit run
--out results/runs`) finds nothing and keeps the old default, the demo tasks.
"""

from __future__ import annotations

from pathlib import Path

from colabkit.errors import ColabkitError
from colabkit.runner.experiment import Experiment, load_experiment
from colabkit.runner.pipeline import CONFIG_COPY

_LEVELS = 3
"""How far up to look: the experiment folder, a session in it, a fork under `<folder>/forks/`."""


def experiment_folder(path: Path | str) -> Path | None:
    """The experiment folder holding `path` (itself, or up to two levels above), else None."""
    path = Path(path).resolve()
    for folder in (path, *path.parents)[:_LEVELS]:
        if (folder / CONFIG_COPY).is_file():
            return folder
    return None


def recorded_experiment(path: Path | str) -> Experiment | None:
    """The experiment whose folder holds `path`, read from its stored config (None outside one).

    The results root is taken as the folder's parent, so a folder moved with its results
    still names itself (`Experiment.folder()`)."""
    folder = experiment_folder(path)
    if folder is None:
        return None
    return load_experiment(folder / CONFIG_COPY, results=folder.parent)


def data_root_for(path: Path | str, given: Path | None) -> tuple[Path | None, Experiment | None]:
    """(the data root to use, the experiment it came from): `given` when set, else the
    recorded experiment's (None: the demo tasks). A stored config that no longer reads (an
    older colabkit wrote it) is an error only when it was needed: with `given`, it is skipped."""
    try:
        exp = recorded_experiment(path)
    except ColabkitError as exc:
        if given is not None:
            return given, None
        raise ColabkitError(f"{exc} (pass --data-root DIR to go without it)") from None
    if given is not None:
        return given, exp
    return (exp.tasks.data_root if exp is not None else None), exp


def open_experiment(experiment: Path | str | None, results: Path | str | None = None) -> Experiment:
    """A notebook's `experiment` and `results` parameters as one experiment: the config file
    when given (`results` a root overriding its own), else the experiment folder `results`
    (or a path inside it) read from its stored config."""
    if experiment:
        return load_experiment(experiment, results=results or None)
    if not results:
        raise ColabkitError("give an experiment config, or an experiment's results folder as `results`")
    exp = recorded_experiment(results)
    if exp is None:
        raise ColabkitError(f"{results}: not an experiment folder (no {CONFIG_COPY}; colabkit batch writes it): "
                            "give the experiment config")
    return exp
