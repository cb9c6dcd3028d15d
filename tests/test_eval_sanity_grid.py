"""The judge's sanity check scores the experiment grid's tasks, never tasks outside it.

The scored folder holds sessions of one task while the suite has more; with the default of
three sanity tasks the check used to top the grid up from the suite. The 'other' case still
compares against another task's gold (that gold is only a wrong answer there).
"""

from __future__ import annotations

from helpers.judges import use_judge_double
from helpers.stored import store_session

from colabkit.evaluation import judge_config, score_results
from colabkit.tasks import load_tasks

SUITE = load_tasks()
TASK = "demo_archaeology/0/0"


def test_the_sanity_check_uses_only_the_sessions_tasks(tmp_path):
    assert len([t for t in SUITE.ids if SUITE.gold_for(t)]) > 1  # the suite could top it up
    store_session(tmp_path, TASK, SUITE.gold_for(TASK).hypothesis, seed=0)
    use_judge_double()
    report = score_results(tmp_path, metrics=["performance"], judge=judge_config("judgedouble/perfect"))
    assert report.sanity is not None and report.sanity.passed is True
    assert {c.task_id for c in report.sanity.cases} == {TASK}
    assert {c.kind for c in report.sanity.cases} == {"self", "other", "empty"}


def two_jobs(folder, *, together: bool) -> int:
    """Judge requests sent by a performance job and a gates job on `folder` (as `colabkit
    batch` runs score and annotate_gates), at once or one after the other."""
    import asyncio

    from colabkit.evaluation import ascore_results

    double = use_judge_double()
    perfect = judge_config("judgedouble/perfect")

    async def run() -> None:
        jobs = [ascore_results(folder, metrics=[m], judge=perfect) for m in ("performance", "gates")]
        if together:
            await asyncio.gather(*jobs)
        else:
            for job in jobs:
                await job

    asyncio.run(run())
    return len(double.calls)


def test_two_scoring_jobs_at_once_run_the_sanity_check_once(tmp_path):
    for folder in (tmp_path / "apart", tmp_path / "together"):
        store_session(folder, TASK, SUITE.gold_for(TASK).hypothesis, seed=0)
    apart = two_jobs(tmp_path / "apart", together=False)
    assert apart > 0 and two_jobs(tmp_path / "together", together=True) == apart
