"""The scorers shipped with colabkit: importing a module registers its scorers by name.

Add a line here for each module of scorers (the registry imports this module lazily, so
`colabkit score --metrics` knows every metric without importing judges at start-up).
"""

from colabkit.evaluation.metrics import (
    gates,  # noqa: F401  (n_gated, approval/rejection rates, gate annotations)
    hypothesis,  # noqa: F401  (performance, hms)
    initiative,  # noqa: F401  (h_init_norm, h_init_zero_rule, ca_plus, ca_minus)
    profile,  # noqa: F401  (a_profile)
    simfailure,  # noqa: F401  (sim_failure, sim_failure_kind, sim_failure_events; opt-in)
    support,  # noqa: F401  (s_hyp, s_hyp_all)
    work,  # noqa: F401  (w_total, w_human)
    workflow,  # noqa: F401  (c_wf)
)
