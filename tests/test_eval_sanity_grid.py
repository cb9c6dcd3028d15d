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
