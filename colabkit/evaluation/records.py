"""What scoring produces, as typed values: per session, per judged item, per gated event.

A `ScoreResult` is what one scorer says about one session (for one repeat, or combined over
repeats). It is stored inside a `ScoreFile` (`<session>/scores/<scorer id>.json`) with the
identity of what produced it, so a table row can always be traced back to the scorer
version, the prompts and the judge model behind it. Missing is None (NaN in tables), never 0.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from colabkit.evaluation.judge import JudgeGrade, Verdict
from colabkit.llm import CallRecord, ModelConfig

SCORE_SCHEMA_VERSION = 1
Value = float | int | bool | str | None


class Judgement(BaseModel):
    """One judged item of one repeat, as the judgements table shows it."""

    model_config = ConfigDict(frozen=True)

    metric: str
    """The column the item feeds (e.g. 'hms', 'performance', 'h_init_norm')."""
    item: str
    """Stable id of what was judged within the session ('context:p0:g1', 'message:12', ...),
    the same across repeats, so agreement can pair the repeats' answers."""
    repeat: int
    label: str | None = None
    """A categorical answer ('A', 'match', 'own', ...) or None when missing."""
    score: float | None = None
    """A numeric answer (a variable F1, a count) or None when missing or not numeric."""
    flag: str | None = None
    raw: str | None = None
    answer: dict[str, Any] | None = None
    prompt_id: str
    prompt_version: int
    model: str
    calls: list[CallRecord] = []

    @classmethod
    def of(cls, verdict: Verdict[Any], *, metric: str, item: str, label: str | None = None,
           score: float | None = None) -> Judgement:
        """The stored form of `verdict` (label and score as the scorer read them)."""
        return cls(metric=metric, item=item, repeat=verdict.repeat, label=label, score=score,
                   flag=verdict.flag, raw=verdict.raw,
                   answer=verdict.value.model_dump(mode="json") if verdict.value is not None else None,
                   prompt_id=verdict.prompt_id, prompt_version=verdict.prompt_version,
                   model=verdict.model, calls=verdict.calls)


class GateAnnotation(BaseModel):
    """One gated request of a session with its facts and the judge's labels (None = missing)."""

    model_config = ConfigDict(frozen=True)

    request_id: str
    action: str
    proposer: str
    signatory: str | None
    decision: Literal["approved", "rejected"] | None
    """None when the request was never decided (expired, session ended)."""
    latency_events: int | None
    latency_rounds: int | None
    expertise_fit: bool | None = None
    grounded: bool | None = None
    correct_in_hindsight: bool | None = None
    changed_course: bool | None = None
    flags: list[str] = []


class ScoreResult(BaseModel):
    """What one scorer says about one session."""

    values: dict[str, Value] = {}
    """Columns for the scores table (e.g. {'performance': 0.5, 'delivered': True}); a
    column the scorer could not compute is present with None, never left out silently."""
    flags: list[str] = []
    """Why values are missing or doubtful ('judge_invalid: ...', 'no_gold', ...)."""
    judgements: list[Judgement] = []
    gate_annotations: list[GateAnnotation] = []
    details: dict[str, Any] = {}
    """Scorer-specific intermediate facts (decompositions, matches), for inspection."""
    complete: bool = True
    """False when something transient (a judge or scorer error) is missing: a rerun of the
    job re-scores this session (cached verdicts make the redo cheap), a complete one it skips."""


class ScoreFile(BaseModel):
    """`<session>/scores/<scorer id>.json`: a ScoreResult and everything that identifies it."""

    schema_version: int = SCORE_SCHEMA_VERSION
    scorer_id: str
    scorer: str
    version: str
    prompt_version: str
    judge: ModelConfig | None
    judge_grade: JudgeGrade | None
    judge_reliable: bool | None
    """The sanity check's verdict on this judge (None: no judge, or check not run)."""
    repeats: int = Field(ge=1)
    session_id: str
    result: ScoreResult
    agreement: dict[str, float | None] = {}
    """Per judged question: Fleiss' kappa for labels ('kappa:<metric>/<kind>'), the mean spread
    (max - min over repeats) for scores ('spread:<metric>/<kind>'); per numeric value its
    spread ('spread:<value>'). See `colabkit.evaluation.reliability`."""
    scored_at: datetime
    package_version: str
