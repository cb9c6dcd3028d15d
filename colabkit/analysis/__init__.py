"""Analysis: the study's statistics, tables and figures from the tidy score tables.

pandas in, tables and matplotlib figures out, and no file writes: notebooks and the batch
save what this layer returns (`artefacts` renders it to bytes for an atomic write).

- `study_table` / `format_study_table`: per variant, mean ± SE over sessions and the
  task-clustered SE of H_init,norm, S_hyp, Performance, HMS, W_total, W_human, delivery.
- `contrasts`: paired differences and a task-random-intercept mixed model per composition,
  Scaffolded - Default by default, the diagnostic `DECOMPOSITION` on request, corrected for
  multiple comparisons; `power_table`: sessions needed to detect a 0.05 difference.
- `gate_summary`, `decision_counts`, `rubber_stamp_rate`: the gated-event annotations.
- `memory_dynamics`, `memory_versions`: how a living memory (Dynamic variants) moved.
- `ablation_figure`, `contrast_figure`, `gate_figure`: seaborn figures.
- `termination_contrast`, `by_termination`: the two session-end rules side by side.
- `trajectory` and `explorer`: one stored session as HTML, and an ipywidgets stepper over it.
"""

from colabkit.analysis.contrasts import (
    DECOMPOSITION,
    DYNAMIC_CONTRASTS,
    contrasts,
    correct,
    mixed_model_contrast,
    paired_contrast,
    paired_differences,
    pooled_sd,
    power_table,
)
from colabkit.analysis.figures import (
    QUALITY_METRICS,
    WORK_METRICS,
    ablation_figure,
    artefacts,
    contrast_figure,
    figure_bytes,
    gate_figure,
)
from colabkit.analysis.gates import check_gates, decision_counts, gate_summary, rubber_stamp_rate
from colabkit.analysis.memory_dynamics import MEMORY_DYNAMICS_COLUMNS, memory_dynamics, memory_versions
from colabkit.analysis.scores import (
    RATE_METRICS,
    STUDY_METRICS,
    check_scores,
    load_score_table,
    read_score_table,
    variant_order,
)
from colabkit.analysis.stats import clustered_standard_error, format_study_table, standard_error, study_table
from colabkit.analysis.termination import by_termination, termination_contrast, termination_rules

__all__ = [
    "DECOMPOSITION",
    "DYNAMIC_CONTRASTS",
    "MEMORY_DYNAMICS_COLUMNS",
    "QUALITY_METRICS",
    "RATE_METRICS",
    "STUDY_METRICS",
    "WORK_METRICS",
    "ablation_figure",
    "artefacts",
    "by_termination",
    "check_gates",
    "check_scores",
    "clustered_standard_error",
    "contrast_figure",
    "contrasts",
    "correct",
    "decision_counts",
    "figure_bytes",
    "format_study_table",
    "gate_figure",
    "gate_summary",
    "load_score_table",
    "memory_dynamics",
    "memory_versions",
    "mixed_model_contrast",
    "paired_contrast",
    "paired_differences",
    "pooled_sd",
    "power_table",
    "read_score_table",
    "rubber_stamp_rate",
    "standard_error",
    "study_table",
    "termination_contrast",
    "termination_rules",
    "variant_order",
]
