"""Stored sessions as Inspect AI `.eval` logs, so Inspect's viewer, Docent and Scout open them.

A results folder is one experiment; it becomes one log per variant (`<experiment>_<variant>.eval`)
or, with `per_session`, one per session (`<experiment>_<variant>_<session id>.eval`), each
sample a session (`inspect_sample.session_sample`). Logs are written by `inspect_ai.log`'s
own `write_eval_log` into a temporary file that replaces the log atomically, so an export
is either the old file or the new one; exporting again rewrites the same names.

Gold answers stay out (every sample's target is empty) unless `with_gold` asks for them,
which reads them through the evaluation layer as `tasks show --with-gold` does.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalMetric,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
    write_eval_log,
)

import colabkit
from colabkit.errors import ColabkitError, one_line
from colabkit.evaluation.gold import gold_hypotheses
from colabkit.evaluation.storage import finished_sessions, read_snapshot, stored_scores
from colabkit.export.inspect_sample import session_sample
from colabkit.session import Event
from colabkit.store import EVENTS_FILE, PROMPTS_FILE, SESSION_FILE, SessionRecord, atomic_path
from colabkit.tasks import TaskSuite, load_tasks

LOG_SUFFIX = ".eval"


@dataclass(frozen=True)
class ExportedLog:
    """One written log: where, which variant, and the sessions (sample ids) it holds."""

    path: Path
    variant: str
    session_ids: tuple[str, ...]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "results"


def _prompts(folder: Path) -> dict[str, list[dict]]:
    path = folder / PROMPTS_FILE
    if not path.is_file():
        return {}
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return {row["prompt_hash"]: row["messages"] for row in rows}


def _read_session(folder: Path) -> tuple[SessionRecord, list[Event]]:
    try:
        record = SessionRecord.model_validate_json((folder / SESSION_FILE).read_bytes())
        events = [Event.model_validate_json(line) for line in (folder / EVENTS_FILE).read_bytes().splitlines()
                  if line.strip()]
    except (OSError, ValueError) as exc:
        raise ColabkitError(f"cannot read stored session {folder}: {one_line(exc)}") from None
    return record, events


def _results(samples: Sequence[EvalSample]) -> EvalResults:
    """Per scorer, the mean of each numeric column over the samples that have it."""
    columns: dict[tuple[str, str], list[float]] = defaultdict(list)
    for sample in samples:
        for scorer, score in (sample.scores or {}).items():
            values = score.value if isinstance(score.value, dict) else {}
            for name, value in values.items():
                if isinstance(value, int | float):  # bool is an int: a rate
                    columns[(scorer, name)].append(float(value))
    scores = [EvalScore(name=f"{scorer}/{name}", scorer=scorer, scored_samples=len(values),
                        metrics={"mean": EvalMetric(name="mean", value=fmean(values))})
              for (scorer, name), values in sorted(columns.items())]
    return EvalResults(total_samples=len(samples), completed_samples=len(samples), scores=scores)


def _log(experiment: str, variant: str, samples: list[EvalSample], records: list[SessionRecord]) -> EvalLog:
    first = min(r.started for r in records)
    last = max(r.finished for r in records)
    ai_models = sorted({r.models["ai"].model for r in records if "ai" in r.models})
    spec = EvalSpec(
        created=first.isoformat(), task=f"colabkit/{experiment}/{variant}", task_id=f"{experiment}-{variant}",
        run_id=f"colabkit-{experiment}", eval_id=f"{experiment}-{variant}-{len(samples)}",
        dataset=EvalDataset(name=experiment, samples=len(samples), sample_ids=[str(s.id) for s in samples]),
        model=ai_models[0] if len(ai_models) == 1 else ",".join(ai_models) or "none",
        config=EvalConfig(), packages={"colabkit": colabkit.__version__},
        metadata={"source": "colabkit", "experiment": experiment, "variant": variant})
    return EvalLog(status="success", eval=spec, results=_results(samples),
                   stats=EvalStats(started_at=first.isoformat(), completed_at=last.isoformat()), samples=samples)


def export_inspect(results: Path | str, out: Path | str | None = None, *, per_session: bool = False,
                   with_gold: bool = False, suite: TaskSuite | None = None,
                   data_root: Path | None = None) -> list[ExportedLog]:
    """Write the finished sessions of `results` as Inspect logs into `out` (default
    `<results>/inspect`); return what was written. `suite` (else `data_root`, else the demo
    tasks) gives each sample's input, the task query, and with `with_gold` its target."""
    results = Path(results)
    folders = finished_sessions(results)
    if not folders:
        raise ColabkitError(f"no finished sessions in {results}")
    out = Path(out) if out is not None else results / "inspect"
    out.mkdir(parents=True, exist_ok=True)
    suite = suite if suite is not None else load_tasks(data_root)
    experiment = _safe(results.resolve().name)
    sessions = [(folder, *_read_session(folder)) for folder in folders]
    gold = gold_hypotheses(suite, [r.task_id for _, r, _ in sessions]) if with_gold else {}
    groups: dict[str, list[tuple[EvalSample, SessionRecord]]] = defaultdict(list)
    for folder, record, events in sessions:
        query = suite.get(record.task_id).query if record.task_id in suite.ids else None
        sample = session_sample(record, events, read_snapshot(folder), stored_scores(folder), query=query,
                                gold=gold.get(record.task_id) if with_gold else None, prompts=_prompts(folder))
        key = record.spec.variant.name + (f"_{record.session_id}" if per_session else "")
        groups[key].append((sample, record))
    written = []
    for key, members in sorted(groups.items()):
        variant = members[0][1].spec.variant.name
        log = _log(experiment, variant, [s for s, _ in members], [r for _, r in members])
        path = out / f"{experiment}_{_safe(key)}{LOG_SUFFIX}"
        with atomic_path(path) as tmp:
            tmp.unlink()  # the writer makes its own file
            write_eval_log(log, tmp, format="eval")
        written.append(ExportedLog(path=path, variant=variant, session_ids=tuple(str(s.id) for s, _ in members)))
    return written
