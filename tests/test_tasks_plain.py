"""Plain task folders (`task.yaml` beside the data): validated, loaded through `load_tasks` and
scored through the gold path like DiscoveryBench's, the answer never reaching a participant."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from helpers.judges import use_judge_double
from helpers.scripted import use_scripted

from colabkit.cli import main
from colabkit.errors import ColabkitError
from colabkit.evaluation import judge_config, load_scores, score_results
from colabkit.runner import build_session, record_session
from colabkit.session import SessionSettings
from colabkit.store import SessionRecord
from colabkit.tasks import load_tasks, validate_tasks

EXAMPLE = Path(__file__).resolve().parents[1] / "experiments" / "tasks"
TASK_ID = "us_state_crime"
WAIT = {"thought": "nothing to add", "action": "wait"}
GUESS = "Violent crime is higher in warmer states."


def test_the_worked_example_validates_and_loads_with_its_gold_apart():
    report = validate_tasks(EXAMPLE)
    assert report.ok and report.task_count == 1 and not report.problems, report.problems
    suite = load_tasks(EXAMPLE)
    task = suite.get(TASK_ID)
    assert task.split == "plain" and task.domain == "sociology" and "violent crime rate" in task.query
    assert [d.path for d in task.datasets] == [EXAMPLE / TASK_ID / "statecrime.csv"]
    assert {c.name for c in task.datasets[0].columns} >= {"violent", "single", "poverty"}
    gold = suite.gold_for(TASK_ID)
    assert gold is not None and "single-parent" in gold.hypothesis
    assert "single-parent" not in task.model_dump_json()  # the Task carries no answer
    assert load_tasks(EXAMPLE / TASK_ID).ids == (TASK_ID,)  # one task folder is a root too


def test_a_session_on_a_plain_task_never_sees_the_answer_and_is_scored_against_it(tmp_path):
    suite = load_tasks(EXAMPLE)
    gold = suite.gold_for(TASK_ID)
    assert gold is not None
    model = use_scripted({"everyone": [{"thought": "w", "action": "edit_result", "content": GUESS},
                                       {"thought": "d", "action": "finish", "content": "done"}]}, default=WAIT)
    spec, task = build_session(TASK_ID, "default-dr", 0, model="scripted/everyone", data_root=EXAMPLE,
                               settings=SessionSettings(action_budget=2, max_rounds=2))
    folder = record_session(spec, task, out=tmp_path)
    record = SessionRecord.model_validate_json((folder / "session.json").read_bytes())
    assert record.final_hypothesis == GUESS and record.task_digest == task.task_digest
    sent = " ".join(str(m.get("content")) for call in model.calls for m in call["messages"])
    assert "statecrime.csv" in sent and "single-parent households (r = 0.66)" not in sent
    assert "r = 0.66" not in sent and "r = 0.31" not in sent
    assert "leave out the District of Columbia" in record.briefings["R"]  # R holds the domain knowledge
    judge = use_judge_double()
    report = score_results(tmp_path, metrics=["performance", "work"], judge=judge_config("judgedouble/perfect"),
                           suite=suite, sanity_tasks=1)
    assert report.scored == 2 and report.incomplete == 0
    asked = judge.asked("hms_decompose")
    assert any(call["payload"]["hypothesis"] == gold.hypothesis for call in asked)  # gold reached the judge
    row = load_scores(tmp_path).iloc[0]
    assert row["performance"] == 0.0 and row["w_total"] == 1  # the guess is not the answer; one edit


def test_validate_names_the_file_and_field_of_each_problem(tmp_path, capsys):
    root = tmp_path / "tasks"
    shutil.copytree(EXAMPLE / TASK_ID, root / "good")
    (root / "bad").mkdir()
    (root / "bad" / "task.yaml").write_text(yaml.safe_dump({"query": "q?", "licence": "CC0", "datasets": []}))
    (root / "leaky").mkdir()
    (root / "leaky" / "task.yaml").write_text(yaml.safe_dump(
        {"query": "q?", "licence": "CC0", "answer": "a", "datasets": [{"file": "task.yaml"}]}))
    (root / "unanswered").mkdir()
    (root / "unanswered" / "task.yaml").write_text(yaml.safe_dump(
        {"query": "q?", "licence": "CC0", "datasets": [{"file": "gone.csv"}]}))
    assert main(["tasks", "validate", "--data-root", str(root)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert f"error: malformed task file {root / 'bad' / 'task.yaml'}: datasets: Tuple should have at least 1 item" \
           f" after validation, not 0" in out
    assert any(line.startswith(f"error: malformed task file {root / 'leaky' / 'task.yaml'}: datasets.0.file: "
                               "'task.yaml' must be a data file inside") for line in out)
    assert f"error: dataset file listed in {root / 'unanswered' / 'task.yaml'} is missing: " \
           f"{root / 'unanswered' / 'gone.csv'}" in out
    assert f"error: no gold answer for task unanswered: no `answer` in {root / 'unanswered' / 'task.yaml'}" in out
    assert load_tasks(root).ids == ("good",)  # the broken ones are left out, the good one loads
    with pytest.raises(ColabkitError, match="malformed task file .*bad/task.yaml"):
        load_tasks(root, ids=["bad"])
