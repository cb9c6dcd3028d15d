"""The scorers shipped with colabkit, and the lookups that need every one of them loaded.

Each scorer module registers its scorers into `evaluation.scorer`'s registry when imported
(the registry sits below them, so nothing imports upwards); this module imports them all
once and answers "which metrics exist" and "give me these scorers". Add a line here for each
new module of scorers.
"""

from colabkit.errors import ColabkitError
from colabkit.evaluation.metrics import (
    gates,  # noqa: F401  (n_gated, approval/rejection rates, gate annotations)
    hypothesis,  # noqa: F401  (performance, hms)
    initiative,  # noqa: F401  (h_init_norm, h_init_zero_rule, ca_plus, ca_minus; h_init_events)
    profile,  # noqa: F401  (a_profile)
    simfailure,  # noqa: F401  (sim_failure, sim_failure_kind, sim_failure_events; opt-in)
    support,  # noqa: F401  (s_hyp, s_hyp_all)
    work,  # noqa: F401  (w_total, w_human)
    workflow,  # noqa: F401  (c_wf)
)
from colabkit.evaluation.scorer import Scorer, registered


def available_metrics(*, opt_in: bool = False) -> tuple[str, ...]:
    """The metrics scored by default; with `opt_in`, every metric that may be named."""
    return tuple(sorted(n for n, factory in registered().items() if opt_in or not factory().opt_in))


def scorers_for(metrics: list[str] | None = None) -> list[Scorer]:
    """Fresh scorer instances for `metrics` (the default ones when None), in that order."""
    known = registered()
    names = list(available_metrics()) if metrics is None else list(dict.fromkeys(metrics))
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ColabkitError(f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return [known[n]() for n in names]
