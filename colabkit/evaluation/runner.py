"""Score every finished session of a results folder: resumable, never re-running a session.

For each session and each selected scorer, the runner looks for the scorer's file; a
complete one is reused, anything else (absent, or incomplete because a judge or scorer
failed) is scored again. Judge answers are cached in `<results>/judge-cache`, so a redo
replays what was already answered and pays only for what is missing. Before judged scoring,
the judge's sanity check runs (and is stored) so every score file says whether its judge
passed it. A scorer that crashes marks its session incomplete and flagged; the batch goes on.
A spent budget or a provider refusing the judge stops the job (`ScoringReport.stopped`):
what was scored is kept, the rest is scored by the next run. A judge provider out of reach
past the retry bound opens the job's circuit breaker (`colabkit.llm.CircuitBreaker`, one per
job): the questions after it are not sent (each would wait out the whole bound again), their
scores are missing and flagged `judge_error` (incomplete, so the next run scores them again,
replaying what was answered), and the job reports the outage once as `stopped`.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import colabkit
from colabkit.errors import ColabkitError, one_line
from colabkit.evaluation.builtin import scorers_for
from colabkit.evaluation.config import ScoringConfig
from colabkit.evaluation.judge import PLUMBING_WARNING, Judge
from colabkit.evaluation.records import ScoreFile, ScoreResult
from colabkit.evaluation.reliability import (
    CHECKS_DIR,
    SanityCheck,
    repeat_agreement,
    run_sanity_check,
    table_agreement,
)
from colabkit.evaluation.scorer import Scorer, SessionContext
from colabkit.evaluation.spendlog import JudgeSpendLog
from colabkit.evaluation.storage import (
    finished_sessions,
    load_context,
    read_score,
    score_path,
    scorer_id,
    write_score,
)
from colabkit.evaluation.tables import export_tables, load_judgements
from colabkit.llm import BudgetExceeded, CircuitBreaker, Gateway, ModelConfig, ProviderError, Spend
from colabkit.llm.callbacks import settled
from colabkit.llm.providers import LOCAL_PROVIDER
from colabkit.store import AtomicBatch
from colabkit.tasks import TaskSuite, load_tasks

JUDGE_CACHE_DIR = "judge-cache"
_log = logging.getLogger(__name__)
R = TypeVar("R")


@dataclass
class ScoringReport:
    """What a scoring job did, for the CLI's summary and for tests."""

    sessions: int = 0
    config: ScoringConfig | None = None
    scored: int = 0
    reused: int = 0
    incomplete: int = 0
    judge: dict[str, Any] | None = None
    sanity: SanityCheck | None = None
    unreadable: list[str] = field(default_factory=list)
    """Sessions that could not be read for scoring (one line each); they are not scored."""
    agreement: dict[str, float | None] = field(default_factory=dict)
    """With repeats: the job's agreement per metric over every session (`table_agreement`)."""
    stopped: str | None = None
    """Why the job stopped early (a spent budget, a provider refusing the judge or out of reach), else None."""
    spend: Spend = field(default_factory=Spend)
    """What this job's judge paid (sanity check included), its suite replays apart; also
    appended as it goes to `<results>/judge-runs.jsonl` (`colabkit.evaluation.spendlog`)."""
    warnings: list[str] = field(default_factory=list)


async def ascore_results(results: Path | str, config: ScoringConfig | None = None, *,
                         metrics: list[str] | None = None, judge: ModelConfig | None = None,
                         repeats: int | None = None, sanity_tasks: int | None = None,
                         data_root: Path | None = None, suite: TaskSuite | None = None,
                         gateway: Gateway | None = None, concurrency: int = 4,
                         progress: Callable[[int, int], None] | None = None) -> ScoringReport:
    """Score the finished sessions under `results` as `config` says (keywords override it).

    Without a judge the embedded model judges (plumbing grade, warned about); `suite` (or
    `data_root`, else the demo tasks) supplies tasks and gold. `progress(done, total)` is
    called after each (session, scorer) pair. Writes score files and the parquet tables.
    """
    results = Path(results)
    config = (config or ScoringConfig()).with_overrides(
        metrics=tuple(metrics) if metrics is not None else None, judge=judge, repeats=repeats,
        sanity_tasks=sanity_tasks)
    scorers = scorers_for(list(config.metrics) if config.metrics is not None else None)
    repeats = config.repeats
    folders = finished_sessions(results)
    suite = suite if suite is not None else load_tasks(data_root)
    report = ScoringReport(sessions=len(folders), config=config)
    judged = any(s.uses_judge for s in scorers)
    own_gateway = gateway is None and judged
    breaker = gateway.breaker if gateway is not None and gateway.breaker is not None else CircuitBreaker()
    lent_breaker = gateway is not None and gateway.breaker is None  # the caller's gateway, this job's breaker
    if gateway is None and judged:
        gateway = Gateway(cache_dir=results / JUDGE_CACHE_DIR, breaker=breaker)
    elif gateway is not None:
        gateway.breaker = breaker
    the_judge = Judge(gateway, config.judge) if judged and gateway else None
    spend_log = JudgeSpendLog(results, gateway, ",".join(s.name for s in scorers)) if the_judge and gateway else None
    try:
        if the_judge is not None:
            report.judge = the_judge.describe()
            if the_judge.grade == "plumbing":
                report.warnings.append(PLUMBING_WARNING)
            # The sessions' own tasks (the grid's), as many as there are: the check never
            # tops a small grid up with tasks outside it.
            grid = _task_ids(folders)
            async with _one_check_at_a_time(results):
                report.sanity = await run_sanity_check(the_judge, suite, grid, results,
                                                       n_tasks=min(config.sanity_tasks, len(grid) or config.sanity_tasks))
        if the_judge is not None and the_judge.config.provider == LOCAL_PROVIDER:
            concurrency = 1  # in-process models answer one call at a time; queued calls would time out
        await _score_all(results, folders, scorers, the_judge, repeats, suite, report, concurrency, progress,
                         spend_log)
        if breaker.open:  # the rest was flagged without asking: one line for the whole outage
            report.stopped = f"provider: {breaker.reason}"
    except BudgetExceeded as exc:
        report.stopped = f"budget: {exc.reason}"
    except ProviderError as exc:
        report.stopped = f"provider: {one_line(exc, 300)}"
    finally:
        if spend_log is not None:
            spend_log.flush()
            report.spend = spend_log.total()
        if own_gateway and gateway is not None:
            gateway.close()
        elif lent_breaker and gateway is not None:
            gateway.breaker = None
    export_tables(results)
    if repeats > 1 and the_judge is not None:
        judgements = load_judgements(results)
        report.agreement = table_agreement(judgements[judgements["judge_model"] == the_judge.config.model])
    return report


def score_results(results: Path | str, config: ScoringConfig | None = None, **kwargs: Any) -> ScoringReport:
    """Synchronous `ascore_results`; works in scripts and inside Jupyter's running loop."""
    return _run_sync(lambda: ascore_results(results, config, **kwargs))


async def _score_all(results: Path, folders: list[Path], scorers: list[Scorer], judge: Judge | None,
                     repeats: int, suite: TaskSuite, report: ScoringReport, concurrency: int,
                     progress: Callable[[int, int], None] | None, spend_log: JudgeSpendLog | None) -> None:
    total, done = len(folders) * len(scorers), 0
    gate = asyncio.Semaphore(max(1, concurrency))
    reliable = report.sanity.passed if report.sanity is not None else None

    async def one_session(folder: Path, batch: AtomicBatch) -> None:
        nonlocal done
        async with gate:
            ctx: SessionContext | None = None
            for scorer in scorers:
                sid = scorer_id(scorer, judge.config if judge else None, repeats)
                try:
                    existing = read_score(score_path(folder, sid))
                except ColabkitError as exc:  # a damaged score file is scored again, over it
                    _log.warning("%s", exc)
                    existing = None
                if existing is not None and existing.result.complete:
                    report.reused += 1
                else:
                    if ctx is None:
                        try:
                            ctx = load_context(folder, suite, judge)
                        except ColabkitError as exc:  # e.g. an older record schema: skip, say so
                            report.unreadable.append(str(exc))
                            done += len(scorers)
                            return
                    score = await _score_one(scorer, sid, ctx, judge, repeats, reliable)
                    write_score(folder, score, batch)
                    report.scored += 1
                    report.incomplete += 0 if score.result.complete else 1
                done += 1
                if spend_log is not None:
                    spend_log.flush()
                if progress is not None:
                    progress(done, total)

    # Score files are written as a batch: their data synced together before their renames,
    # their folders once each at the end (also when the job stops), see `AtomicBatch`.
    with AtomicBatch() as batch:
        tasks = [asyncio.ensure_future(one_session(f, batch)) for f in folders]
        try:
            await asyncio.gather(*tasks)
        except BaseException:  # a job that stops leaves no session mid-scoring behind its gateway
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise


async def _score_one(scorer: Scorer, sid: str, ctx: SessionContext, judge: Judge | None, repeats: int,
                     reliable: bool | None) -> ScoreFile:
    runs = repeats if scorer.uses_judge else 1
    results: list[ScoreResult] = []
    for repeat in range(runs):
        results.append(await _safe_score(scorer, ctx.for_repeat(repeat)))
    combined = scorer.combine(results)
    if ctx.task is None:
        combined = combined.model_copy(update={"flags": [*combined.flags, f"task_not_found: {ctx.record.task_id}"]})
    elif ctx.task.task_digest != ctx.record.task_digest:  # scored against other metadata than it ran on
        combined = combined.model_copy(update={"flags": [*combined.flags, f"task_changed: {ctx.record.task_id} "
                                                         "metadata differs from the session's"]})
    judged = scorer.uses_judge and judge is not None
    return ScoreFile(
        scorer_id=sid, scorer=scorer.name, version=scorer.version, prompt_version=scorer.prompt_version,
        judge=judge.config if judged and judge else None, judge_grade=judge.grade if judged and judge else None,
        judge_reliable=reliable if judged else None, repeats=runs, session_id=ctx.session_id,
        result=combined, agreement=repeat_agreement(results) if runs > 1 else {},
        scored_at=datetime.now(UTC), package_version=colabkit.__version__)


async def _safe_score(scorer: Scorer, ctx: SessionContext) -> ScoreResult:
    """One repeat of one scorer; a crash becomes an incomplete, flagged, all-missing result."""
    try:
        return await scorer.score(ctx)
    except (BudgetExceeded, ProviderError):
        raise
    except Exception as exc:
        _log.exception("scorer %s failed on session %s", scorer.name, ctx.session_id)
        return ScoreResult(values=dict.fromkeys(scorer.columns), complete=False,
                           flags=[f"scorer_error: {type(exc).__name__}: {one_line(exc)}"])


@asynccontextmanager
async def _one_check_at_a_time(results: Path) -> AsyncIterator[None]:
    """Hold `<results>/judge-checks/.lock` (an OS file lock) while a sanity check runs.

    `colabkit batch` runs the score and annotate_gates notebooks at once on one results
    folder; each began by running the same sanity check (the demo's 52 judge requests, twice,
    at the same time). With the lock the second waits and reuses the check the first stored.
    """
    folder = results / CHECKS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await asyncio.sleep(0.5)
        yield
    finally:
        os.close(fd)  # releases the lock


def _task_ids(folders: list[Path]) -> list[str]:
    """Task ids of the sessions, in first-seen order (the sanity check picks from these)."""
    import orjson

    from colabkit.store import SESSION_FILE

    seen: dict[str, None] = {}
    for folder in folders:
        seen.setdefault(orjson.loads((folder / SESSION_FILE).read_bytes())["task_id"], None)
    return list(seen)


def _run_sync(make: Callable[[], Any]) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(settled(make()))
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(settled(make()))).result()
