"""`colabkit batch`: the dry-run plan, sessions-only runs, and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.experiments import write_experiment
from helpers.scripted import use_scripted

from colabkit.cli import main
from colabkit.runner import load_experiment
from colabkit.runner.pipeline import CONFIG_COPY
from colabkit.runner.recorded import experiment_folder, recorded_experiment
from colabkit.store import SessionRecord, session_dir

CODE = {"thought": "look", "action": "execute_code", "content": "print(6 * 7)"}
REPO = Path(__file__).resolve().parents[1]


def config(tmp_path: Path, **fields) -> Path:
    return write_experiment(tmp_path, "cli", **{"variants": ["single", "memory-dr"], "seeds": [0, 1],
                                                "judge": "scripted/judge", **fields})


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path, capsys):
    model = use_scripted({}, default=CODE)
    path = config(tmp_path)
    assert main(["batch", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    exp = load_experiment(path)
    assert f"experiment {exp.experiment_id}: 4 sessions in {exp.folder()}" in out
    assert "already finished: 0" in out and "to run: 4" in out
    assert any(line.split()[:4] == ["single", "2", "to", "run"] for line in out.splitlines())
    assert "sessions: about" in out and "judge   : about" in out and "4 from the step model" in out
    assert "assumptions of the step model" in out and "- AI steps: 100% of its action budget" in out
    assert "cost unknown" in out and "cost in all: unknown" in out  # no litellm price for a scripted model
    assert "run_variant x 2 (2 at once), then score + annotate_gates, then ablations" in out
    assert "plumbing-grade" not in out  # no embedded model anywhere in this config
    assert model.calls == [] and not (tmp_path / "results").exists()


def test_sessions_only_runs_in_process_and_the_plan_then_uses_what_they_cost(tmp_path, capsys):
    use_scripted({}, default=CODE)
    path = config(tmp_path)
    assert main(["batch", str(path), "--sessions-only", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "4 sessions: 4 done, 0 failed, 0 cached" in out
    [line] = [line for line in out.splitlines() if line.startswith("  sessions calls ")]
    exp = load_experiment(path)
    records = [SessionRecord.model_validate_json((session_dir(spec, exp.folder()) / "session.json").read_bytes())
               for spec, _ in exp.sessions()]
    assert f" / {sum(r.totals.llm_calls for r in records):,} (x" in line  # the estimate beside what was asked
    # the folder holds its config as a whole batch's does: a path inside it names the experiment
    inside = session_dir(exp.sessions()[0][0], exp.folder())
    assert experiment_folder(inside) == exp.folder() and (exp.folder() / CONFIG_COPY).is_file()
    recorded = recorded_experiment(inside)
    assert recorded is not None and recorded.experiment_id == exp.experiment_id
    stored = (exp.results / "calibration.jsonl").read_text().splitlines()
    assert len(stored) == 3 and '"comparison"' in stored[-1]  # two settings (one per variant), then the run
    assert main(["batch", str(path), "--dry-run", "--variants", "memory-dr"]) == 0
    out = capsys.readouterr().out
    assert "2 sessions in" in out and "already finished: 2" in out and "to run: 0" in out
    assert "2 session(s) from figures measured for the same settings" in out and "sessions: about 0 model calls" in out
    memory = [r.totals.llm_calls for r, (spec, _) in zip(records, exp.sessions()) if spec.variant.name == "memory-dr"]
    assert f"{sum(memory) / 2:.1f} calls of" in out  # the measured mean, not the model's


def test_the_embedded_model_is_called_plumbing_grade(tmp_path, capsys):
    path = config(tmp_path, models={"default": "local/smollm2-135m"}, judge="local/smollm2-135m")
    assert main(["batch", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "plumbing-grade" in out and "numbers mean nothing about the study" in out
    assert "cost in all: about $0.00 (upper bound $0.00)" in out


@pytest.mark.parametrize(("args", "message"), [
    (["--variants", "single,nope"], "variant(s) 'nope' not in experiment 'cli'"),
    (["--variants", ","], "--variants names no variant"),
    (["--notebooks", "/no/such/dir"], "notebook not found: /no/such/dir/run_variant.ipynb"),
    (["--data-root", "/no/such/root"], "/no/such/root"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    use_scripted({}, default=CODE)
    assert main(["batch", str(config(tmp_path)), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("colabkit: error: ") and message in err


def test_a_bad_config_is_one_line_naming_the_field(tmp_path, capsys):
    assert main(["batch", str(config(tmp_path, seeds="zero"))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "exp.yaml: seeds: Input should be a valid tuple" in err


def test_the_batch_report_says_when_the_judge_failed_its_check_or_is_plumbing_grade(tmp_path, capsys):
    from datetime import UTC, datetime

    from colabkit.cli.batch_cmd import _judge_report
    from colabkit.evaluation.reliability import SanityCheck, sanity_check_path
    from colabkit.llm import DEFAULT_MODEL
    from colabkit.store import atomic_write_text

    exp = load_experiment(config(tmp_path))
    _judge_report(exp)
    assert "JUDGE NOT RELIABLE: the judge's sanity check did not run" in capsys.readouterr().out
    path = sanity_check_path(exp.folder(), exp.scoring().judge)  # where the scoring job stores it
    path.parent.mkdir(parents=True)
    failed = SanityCheck(judge={}, cases=[], passed=False, reason="failed: self on t1", checked_at=datetime.now(UTC))
    atomic_write_text(path, failed.model_dump_json())
    _judge_report(exp)
    out = capsys.readouterr().out
    assert "the judge failed its sanity check" in out and "(judge scripted/judge: failed: self on t1)" in out
    atomic_write_text(path, failed.model_copy(update={"passed": True, "reason": "all cases passed"}).model_dump_json())
    _judge_report(exp)
    assert capsys.readouterr().out == ""  # a capable judge that passed: nothing to say
    _judge_report(load_experiment(config(tmp_path, judge=DEFAULT_MODEL)))
    assert "the judge is plumbing-grade" in capsys.readouterr().out
    _judge_report(load_experiment(config(tmp_path, metrics=["work"])))  # rule-based metrics only
    assert capsys.readouterr().out == ""
