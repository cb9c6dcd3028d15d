"""The scorers shipped with colabkit, and the lookups that need every one of them loaded.

Each scorer module registers its scorers into `evaluation.scorer`'s registry when imported
(the registry sits below them, so nothing imports upwards); this module imports them all
once and answers "which metrics exist" and "give me these scorers". Add a line here for each
new module of scorers. A researcher's own metrics come as plugins (`evaluation.plugins`):
an entry point in `colabkit.metrics`, or an import path. Plugins are opt-in: installing one
never changes what a study scores by default; it is scored when named.
"""

from colabkit.errors import ColabkitError
from colabkit.evaluation.metrics import (
    gates,  # noqa: F401  (n_gated, approval/rejection rates, gate annotations)
    hypothesis,  # noqa: F401  (performance, hms)
    initiative,  # noqa: F401  (h_init_norm, h_init_zero_rule, ca_plus, ca_minus; h_init_events)
    pooling,  # noqa: F401  (pooling, pooling_lex and their channel columns; opt-in)
    profile,  # noqa: F401  (a_profile)
    simfailure,  # noqa: F401  (sim_failure, sim_failure_kind, sim_failure_events; opt-in)
    support,  # noqa: F401  (s_hyp, s_hyp_all)
    work,  # noqa: F401  (w_total, w_human)
    workflow,  # noqa: F401  (c_wf)
)
from colabkit.evaluation.plugins import entry_point_metric, entry_point_names, import_path_metric, is_import_path
from colabkit.evaluation.scorer import Scorer, registered


def available_metrics(*, opt_in: bool = False) -> tuple[str, ...]:
    """The metrics scored by default; with `opt_in`, every metric that may be named (the
    installed `colabkit.metrics` plugins included, by name, without loading them)."""
    known = registered()
    names = {n for n, factory in known.items() if opt_in or not factory().opt_in}
    return tuple(sorted(names | (set(entry_point_names()) if opt_in else set())))


def metric_columns() -> tuple[str, ...]:
    """Every score-table column a metric fills: the built-in scorers' and the installed
    plugins' (a plugin that does not load is left out; asking to score it says why)."""
    known = registered()
    columns = {c for factory in known.values() for c in factory().columns}
    for name in entry_point_names():
        try:
            columns.update(entry_point_metric(name, known)().columns)
        except ColabkitError:
            continue
    return tuple(sorted(columns))


def scorers_for(metrics: list[str] | None = None) -> list[Scorer]:
    """Fresh scorer instances for `metrics` (the default ones when None), in that order.

    A name is a registered scorer's, else an import path (`module:Class`, `file.py:Class`),
    else a `colabkit.metrics` entry point's; anything else is one line listing the known names.
    """
    known = registered()
    names = list(available_metrics()) if metrics is None else list(dict.fromkeys(metrics))
    plugins = set(entry_point_names())
    unknown = [n for n in names if n not in known and n not in plugins and not is_import_path(n)]
    if unknown:
        raise ColabkitError(f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(available_metrics(opt_in=True))}")
    factories = [known[n] if n in known else import_path_metric(n, known) if is_import_path(n)
                 else entry_point_metric(n, known) for n in names]
    return [factory() for factory in factories]
