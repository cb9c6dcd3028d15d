"""Analysis: the study's statistics, tables and figures from the tidy score tables.

pandas in, tables and matplotlib figures out, and no file writes: notebooks and the batch
save what this layer returns (`artefacts` renders it to bytes for an atomic write).

- `analysis_plan` / `read_plan` / `plan_for`: the analysis plan fixed before the data (the
  paper's claims as hypotheses, one graph spending alpha over them, tests, power); every
  table carries its `plan_hash` and `plan_status` (version, written before the data, or "no plan").
- `hypothesis_table`: each claim with its procedure-adjusted p and decision;
  `replication_table` / `claims_table` (`claim_verdicts`): the seed paper's published numbers
  beside this run's, and one row per claim with its planned test, decision, a verdict from the
  decisions only, and its missing sessions.
- `study_table` / `format_study_table`: per variant, mean ± task-clustered SE (n sessions,
  n tasks) of H_init,norm, S_hyp, Performance, HMS, W_total, W_human, delivery,
  each cell with its own n, and the judge's grade and reliability.
- `comparisons` / `own_contrasts`: a study's own comparisons (declared in its experiment, else
  each own variant against its Default twin), estimated like the paper's, decided where the plan
  names them; `glossary_table`: every metric name in one sentence (docs/glossary.md).
- `contrasts`: per composition, the paired difference with a task-clustered test (t on
  tasks - 1 df, decided by the plan's one graphical procedure) and a mixed model with a random
  treatment slope by task fitted with several optimisers; Scaffolded - Default by default, the
  diagnostic `DECOMPOSITION` on request. `power_table`: tasks x seeds needed to detect a 0.05
  difference, from the between-task and within-task variance of the difference.
- `scores_warning` / `judge_warning`: the banner line when the judge is plumbing-grade or
  failed its sanity check.
- `gate_summary`, `decision_counts`, `rubber_stamp_rate`: the gated-event annotations.
- `memory_dynamics`, `memory_versions`: how a living memory (Dynamic variants) moved.
- `ablation_figure`, `contrast_figure`, `gate_figure`: seaborn figures.
- `termination_contrast`, `by_termination`: the session-end rules side by side.
- `missing_score_bounds`: each variant's means with its missing scores filled in worst- and
  best-case (does a result depend on the sessions that have no score?); `missing_sessions`:
  per variant, how many sessions are missing and why (crash, provider refusal, context overflow).
- `trajectory` and `explorer`: one stored session as HTML, and an ipywidgets stepper over it
  (its "Private notes" tab: `private_notes`).
- `pooling_table` / `pooling_figure` / `pooling_items`: where the simulated humans' private
  knowledge went, per variant and per item (docs/pooling.md).
- `fit_skills` / `skill_frame`: AI models and human seats ranked on one scale, with what the
  design cannot separate said so (docs/skill-model.md).
- `contributions` (each member's counterfactual contribution from paired replays) and `synergy`
  (each team against its members alone: strong, weak synergy, process loss), from their modules.
"""

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
from colabkit.analysis.glossary import glossary_table
from colabkit.analysis.inference.decisions.contrasts import (
    SHOWN_COLUMNS,
    contrasts,
    hypothesis_table,
    mixed_model_contrast,
    paired_differences,
    task_contrast,
)
from colabkit.analysis.inference.decisions.termination import (
    by_termination,
    termination_contrast,
    termination_interaction,
    termination_rules,
)
from colabkit.analysis.inference.estimation.missing import missing_score_bounds, missing_sessions
from colabkit.analysis.inference.estimation.signflip import sign_flip_p
from colabkit.analysis.inference.estimation.stats import clustered_standard_error, format_study_table, study_table
from colabkit.analysis.inference.planning.families import DECOMPOSITION, DYNAMIC_CONTRASTS, FAMILIES, holm
from colabkit.analysis.inference.planning.hypotheses import PAPER_HYPOTHESES, Hypothesis
from colabkit.analysis.inference.planning.plan import AnalysisPlan, analysis_plan, plan_summary, planned_tests
from colabkit.analysis.inference.planning.plan_file import plan_for, read_plan
from colabkit.analysis.inference.power_analysis.power import (
    power_of,
    power_table,
    seeds_needed,
    tasks_needed,
    variance_components,
)
from colabkit.analysis.judging import banner_html, judge_status, judge_warning, scores_warning
from colabkit.analysis.memory_dynamics import MEMORY_DYNAMICS_COLUMNS, memory_dynamics, memory_versions
from colabkit.analysis.own_contrasts import comparisons, own_contrasts
from colabkit.analysis.pooling import pooling_figure, pooling_items, pooling_table
from colabkit.analysis.replication import claim_verdicts, claims_table, replication_table
from colabkit.analysis.scores import (
    RATE_METRICS,
    STUDY_METRICS,
    check_scores,
    load_score_table,
    read_score_table,
    variant_order,
)
from colabkit.analysis.skill import SkillFit, fit_skills, skill_frame

__all__ = [
    "DECOMPOSITION",
    "DYNAMIC_CONTRASTS",
    "FAMILIES",
    "MEMORY_DYNAMICS_COLUMNS",
    "PAPER_HYPOTHESES",
    "QUALITY_METRICS",
    "RATE_METRICS",
    "SHOWN_COLUMNS",
    "STUDY_METRICS",
    "WORK_METRICS",
    "AnalysisPlan",
    "Hypothesis",
    "SkillFit",
    "ablation_figure",
    "analysis_plan",
    "artefacts",
    "banner_html",
    "by_termination",
    "check_gates",
    "check_scores",
    "claim_verdicts",
    "claims_table",
    "clustered_standard_error",
    "comparisons",
    "contrast_figure",
    "contrasts",
    "decision_counts",
    "figure_bytes",
    "fit_skills",
    "format_study_table",
    "gate_figure",
    "gate_summary",
    "glossary_table",
    "holm",
    "hypothesis_table",
    "judge_status",
    "judge_warning",
    "load_score_table",
    "memory_dynamics",
    "memory_versions",
    "missing_score_bounds",
    "missing_sessions",
    "mixed_model_contrast",
    "own_contrasts",
    "paired_differences",
    "plan_for",
    "plan_summary",
    "planned_tests",
    "pooling_figure",
    "pooling_items",
    "pooling_table",
    "power_of",
    "power_table",
    "read_plan",
    "read_score_table",
    "replication_table",
    "rubber_stamp_rate",
    "scores_warning",
    "seeds_needed",
    "sign_flip_p",
    "skill_frame",
    "study_table",
    "task_contrast",
    "tasks_needed",
    "termination_contrast",
    "termination_interaction",
    "termination_rules",
    "variance_components",
    "variant_order",
]
