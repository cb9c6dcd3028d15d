"""Evaluation: score stored sessions after the fact, with a judge whose reliability is measured.

Sessions are the expensive part and judges change during a study, so nothing here runs a
session: scorers read what the store wrote (`<results>/<session id>/`), a `Judge` asks a
model versioned questions through the gateway (cached, temperature 0, failing closed), and
results go to `<session>/scores/<scorer id>.json` and tidy parquet tables. This is the only
layer (with `colabkit tasks show --with-gold`) that may read gold answers.

    from colabkit.evaluation import ScoringConfig, judge_config, load_scores, score_results
    score_results("results/runs", ScoringConfig(judge=judge_config("openai/gpt-4o"), repeats=3))
    load_scores("results/runs")
"""

from colabkit.evaluation.builtin import available_metrics, metric_columns, scorers_for
from colabkit.evaluation.config import ScoringConfig
from colabkit.evaluation.judge import Judge, JudgePrompt, Verdict, grade_of, judge_config
from colabkit.evaluation.metrics.hms import (
    HmsScore,
    PairFacts,
    VariableCounts,
    greedy_pairs,
    hms_from_facts,
    pair_accuracy,
    performance,
    variable_f1,
)
from colabkit.evaluation.records import GateAnnotation, Judgement, ScoreFile, ScoreResult
from colabkit.evaluation.reliability import (
    SanityCheck,
    fleiss_kappa,
    judgement_agreement,
    pooled_agreement,
    table_agreement,
)
from colabkit.evaluation.runner import ScoringReport, ascore_results, score_results
from colabkit.evaluation.scorer import Scorer, SessionContext, register_scorer
from colabkit.evaluation.storage import load_context, read_score, scorer_id, stored_scores
from colabkit.evaluation.tables import (
    export_tables,
    load_gate_annotations,
    load_judgements,
    load_scores,
)

__all__ = [
    "GateAnnotation",
    "HmsScore",
    "Judge",
    "JudgePrompt",
    "Judgement",
    "PairFacts",
    "SanityCheck",
    "ScoreFile",
    "ScoreResult",
    "Scorer",
    "ScoringConfig",
    "ScoringReport",
    "SessionContext",
    "VariableCounts",
    "Verdict",
    "ascore_results",
    "available_metrics",
    "export_tables",
    "fleiss_kappa",
    "grade_of",
    "greedy_pairs",
    "hms_from_facts",
    "judge_config",
    "judgement_agreement",
    "load_context",
    "load_gate_annotations",
    "load_judgements",
    "load_scores",
    "metric_columns",
    "pair_accuracy",
    "performance",
    "pooled_agreement",
    "read_score",
    "register_scorer",
    "score_results",
    "scorer_id",
    "scorers_for",
    "stored_scores",
    "table_agreement",
    "variable_f1",
]
