"""The finished-session record (`session.json`): what a session was and how it ended.

It holds everything of `SessionResult` except the workspace snapshot (large, and only needed
when reading one session closely; it lives beside it in `snapshot.json`), plus what analysis
joins on without re-deriving it: the task id, the variant's hash, the model each participant
actually used, the package version and wall-clock start and end. Its presence on disk is the
store's definition of "finished", so it is always written last and atomically.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, model_validator

import colabkit
from colabkit.environment import EnvironmentStamp, environment_stamp
from colabkit.llm import ModelConfig
from colabkit.session import SessionResult, SessionSpec
from colabkit.session.events import EndedBy
from colabkit.session.fork import ForkRecord
from colabkit.session.totals import Totals
from colabkit.team import MemoryRecord
from colabkit.workspace import IsolationReport

RECORD_SCHEMA_VERSION: Final = 7
"""Version 2 added schema_version, task_digest, briefings and persona_versions; its `totals`
carry each side's budget and use, and its `spec` the observation profile. Version 3's
totals say what was paid apart from the suite's replays and count the provider's cached
prompt tokens (`Totals`; version 2 totals are read into those fields); it also has
`budget_side` (which side's budget ended the session) and `fork` (None for every session that
is not a fork continuation), both optional so older records read. Version 4 adds `environment`:
the lock the session's process was installed from and any drift from it (None in older records).
Version 5's totals count the closing pass's decisions, decisions past a spent budget and the
expired requests by action (0 when read from an older record), and its sessions' settings may
hold the `ai_budget` termination rule (the new default). Version 6's totals add `ai_turns` (the
AI's steps, waits included) and the closing pass's calls and cost (0 when read from older
records); its spec has `engine_rules` (2: issue 33's rules; read as 1 from older records); it
adds `analysis_plan`, the hash of the experiment's analysis plan in force when the session ran
(None without one, and in older records); its `isolation` says how the kernel started
(`kernel_start`: warm or cold, and `kernel_start_note`: why a kernel that could have been warm
was not; None and "" when read from an older record). Version 7's totals (issue 42) count the
task's decisions apart (machinery, off budget: no side's actions), the requests voided by a
finish, and the calls, tokens and cost of the machinery and of the build phase (0 when read
from older records); its spec's settings may hold `build_budget` (absent when None), and its
spec runs under `engine_rules` 3 (issue 42's rules)."""


PLAN_LEDGER: Final = "plan_ledger.jsonl"
"""Every session start of an experiment's folder, in order, one JSON line each: its id, the
hash of the analysis plan in force then (null without one) and the time. Appended, never
rewritten: the plan lock (`colabkit.analysis.inference.planning.plan_file`) reads it, so a plan
is bound from the first session *started*, and a plan file replaced or deleted afterwards no
longer matches what the sessions recorded."""


def record_plan_at_start(out: Path, session_id: str) -> str | None:
    """Append this session's start to the ledger (`PLAN_LEDGER`); the plan hash recorded.

    One `write` of one short line on a file opened for appending: concurrent sessions' lines
    never interleave."""
    plan = plan_in_force(out)
    line = json.dumps({"session_id": session_id, "plan_hash": plan,
                       "started": datetime.now(UTC).isoformat(timespec="seconds")}) + "\n"
    with open(out / PLAN_LEDGER, "a", encoding="utf-8") as ledger:
        ledger.write(line)
    return plan


def plan_at_start(out: Path, session_id: str) -> str | None:
    """The plan hash the ledger recorded when `session_id` last started (the plan in force
    now when the ledger has no line for it)."""
    path, found = out / PLAN_LEDGER, False
    recorded: str | None = None
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("session_id") == session_id:
                found, recorded = True, entry.get("plan_hash")
    return recorded if found else plan_in_force(out)


def plan_in_force(out: Path) -> str | None:
    """The `plan_hash` of the newest analysis plan version in `out` (`analysis_plan.json`,
    `analysis_plan.v2.json`, ...), read as plain JSON (the plan itself is the analysis layer's);
    None without one or when it cannot be read."""
    versions = {}
    for path in out.glob("analysis_plan*.json"):
        match = re.fullmatch(r"analysis_plan(?:\.v(\d+))?\.json", path.name)
        if match:
            versions[int(match.group(1) or 1)] = path
    if not versions:
        return None
    try:
        value = json.loads(versions[max(versions)].read_text()).get("plan_hash")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def resolved_models(spec: SessionSpec) -> dict[str, ModelConfig]:
    """The model configuration each participant ran with, after the spec's defaulting rule.

    A spec may name a model per role or only a "default"; the record stores the outcome so
    a reader never has to re-apply the rule (which could change between versions).
    """
    return {role: spec.model_for(role) for role in spec.participants}


class SessionRecord(BaseModel):
    """One finished session, as stored in `<out>/<session id>/session.json`."""

    model_config = ConfigDict(frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _older_rules(cls, data: Any) -> Any:
        """A record before version 6 ran under the engine's rules 1 (its spec has no `engine_rules`)."""
        if isinstance(data, dict) and data.get("schema_version", 1) < 6 and isinstance(data.get("spec"), dict):
            return {**data, "spec": {"engine_rules": 1, **data["spec"]}}
        return data

    schema_version: Literal[2, 3, 4, 5, 6, 7] = RECORD_SCHEMA_VERSION
    session_id: str
    """First 16 hex digits of `spec.identity()`: also the session's folder name."""
    spec_identity: str
    """The full sha256 of the spec, so a folder can be checked against what produced it."""
    task_id: str
    task_digest: str
    """sha256 of the task's metadata file when the session ran (`Task.task_digest`)."""
    seed: int
    variant_hash: str
    """`spec.variant.identity()`: the variant config's stable hash (names can be reused)."""
    spec: SessionSpec
    models: dict[str, ModelConfig]
    """Per participant ("ai", "D", "R"), the model configuration actually used."""
    briefings: dict[str, str]
    """Per participant, the private briefing it received (once per session, not per event)."""
    persona_versions: dict[str, str]
    """Per participant, the version of its persona prompt."""
    memory: MemoryRecord | None
    memory_digest: str | None
    final_hypothesis: str
    ended_by: EndedBy
    budget_side: str | None = None
    """Whose budget ended a session that ended by "budget" ("ai", "human", "team"), under the
    rule in `spec.settings.termination`; None otherwise, and in records written before it existed."""
    n_events: int
    totals: Totals
    isolation: IsolationReport
    isolation_level: str
    package_version: str
    environment: EnvironmentStamp | None = None
    """The locked environment that ran the session (`colabkit.environment`): the lock's hash and
    how the installed packages differed from it, so a result says which environment made it."""
    started: datetime
    finished: datetime
    analysis_plan: str | None = None
    """The hash of the newest `analysis_plan*.json` in the experiment's folder when the session
    started (`record_plan_at_start`): which pre-registered plan the session was run under."""
    fork: ForkRecord | None = None
    """A counterfactual fork's parent, fork point, change, seed and replay report; then
    `spec` is the spec in force after the change (seed: the continuation's)."""

    @classmethod
    def from_result(cls, result: SessionResult, *, started: datetime, finished: datetime) -> SessionRecord:
        """Build the record of a session that has just finished."""
        spec = result.spec
        return cls(
            session_id=result.session_id,
            spec_identity=spec.identity(),
            task_id=spec.task_id,
            task_digest=result.task_digest,
            seed=spec.seed,
            variant_hash=spec.variant.identity(),
            spec=spec,
            models=resolved_models(spec),
            briefings=result.briefings,
            persona_versions=result.persona_versions,
            memory=result.memory,
            memory_digest=result.memory.digest() if result.memory is not None else None,
            final_hypothesis=result.final_hypothesis,
            ended_by=result.ended_by,
            budget_side=result.budget_side,
            n_events=result.n_events,
            totals=result.totals,
            isolation=result.isolation,
            isolation_level=result.isolation.level,
            package_version=colabkit.__version__,
            environment=environment_stamp(),
            started=started,
            finished=finished,
        )
