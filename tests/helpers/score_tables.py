"""Constructed score and gated-event tables in the evaluation layer's format, for analysis tests.

The values are drawn from a seeded generator with a task effect and a per-structure shift, so
the statistics have something to find; they are test inputs, never results.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

STRUCTURE_SHIFT = {"single": 0.05, "default": 0.0, "scaffolded": 0.08, "memory": 0.03, "preassigned": 0.05}


def all_variants() -> list[tuple[str, str, str]]:
    """(variant, structure, composition) for the 13 variants."""
    grid = [("single", "single", "none")]
    return grid + [(f"{s}-{c}", s, c) for s in ("default", "scaffolded", "memory", "preassigned")
                   for c in ("d", "r", "dr")]


def score_table(n_tasks: int = 6, seeds: int = 3, rng_seed: int = 0) -> pd.DataFrame:
    """One row per session of the full grid, with every column of the evaluation interface."""
    rng = np.random.default_rng(rng_seed)
    task_effect = rng.normal(0, 0.12, n_tasks)
    rows = []
    for variant, structure, composition in all_variants():
        for t in range(n_tasks):
            for seed in range(seeds):
                perf = float(np.clip(0.6 + task_effect[t] + STRUCTURE_SHIFT[structure] + rng.normal(0, 0.1), 0, 1))
                w_total = int(rng.integers(4, 12))
                rows.append({
                    "session_id": f"{variant}-t{t}-s{seed}", "task_id": f"archaeology/{t}/0", "variant": variant,
                    "structure": structure, "composition": composition, "seed": seed, "delivered": bool(rng.random() > 0.1),
                    "performance": perf, "hms": float(np.clip(perf + rng.normal(0, 0.05), 0, 1)),
                    "h_init_norm": np.nan if structure == "single" else float(rng.uniform(0.2, 0.9)),
                    "h_init_zero_rule": "", "ca_plus": float(rng.uniform()), "ca_minus": float(rng.uniform()),
                    "a_profile": float(rng.uniform()), "c_wf": float(rng.uniform()), "s_hyp": float(rng.uniform(0, 0.5)),
                    "s_hyp_all": bool(rng.random() > 0.8), "w_total": float(w_total),
                    "w_human": np.nan if structure == "single" else float(rng.integers(0, w_total + 1)),
                    "approval_rate": np.nan, "rejection_rate": np.nan, "n_gated": 0.0,
                    "judge_model": "scripted/judge", "judge_grade": "plumbing", "judge_reliable": False, "flags": "",
                })
    return pd.DataFrame(rows)


def gate_table() -> pd.DataFrame:
    """Gated events of two sessions, with judge labels (None where the judge could not answer)."""
    rows = [
        ("s1", "scaffolded-dr", "req-1", "edit_result", "ai", "R", "approved", 2, 1, True, True, True, False),
        ("s1", "scaffolded-dr", "req-2", "edit_result", "ai", "R", "approved", 1, 1, True, False, False, False),
        ("s1", "scaffolded-dr", "req-3", "finish", "ai", "R", "rejected", 3, 2, True, True, True, True),
        ("s2", "preassigned-dr", "req-1", "execute_code", "ai", "D", "approved", 1, 0, False, False, None, False),
        ("s2", "preassigned-dr", "req-2", "edit_result", "ai", "R", "approved", 2, 1, None, None, None, None),
        ("s2", "preassigned-dr", "req-3", "finish", "ai", "R", "expired", 4, 3, None, None, None, None),
    ]
    columns = ["session_id", "variant", "request_id", "action", "proposer", "signatory", "decision",
               "latency_events", "latency_rounds", "expertise_fit", "grounded", "correct_in_hindsight",
               "changed_course"]
    return pd.DataFrame(rows, columns=columns).assign(flags="")
