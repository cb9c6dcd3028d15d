"""`colabkit run`: one session from the shell, three lines of output (a fourth, last, on the embedded
model: plumbing-grade), one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.scripted import use_scripted

from colabkit.cli import main
from colabkit.llm import ModelConfig
from colabkit.runner import build_session
from colabkit.store import SessionRecord, load_sessions

TASK_ID = "demo_archaeology/0/0"
HYPOTHESIS = "Axes are most frequent in hoards of the 12th century BCE."
SCRIPT = [
    {"thought": "check", "action": "execute_code", "content": "print(6 * 7)"},
    {"thought": "write", "action": "edit_result", "content": HYPOTHESIS},
    {"thought": "done", "action": "finish", "content": "checked"},
]
WAIT = {"thought": "nothing to add", "action": "wait"}


def run(out, *extra: str) -> int:
    return main(["run", "--task", TASK_ID, "--variant", "single", "--seed", "3",
                 "--model", "scripted/everyone", "--out", str(out), *extra])


def test_run_stores_one_session_and_prints_where_how_and_what(tmp_path, capsys):
    model = use_scripted({"everyone": list(SCRIPT)}, default=WAIT)
    assert run(tmp_path, "--action-budget", "5", "--max-rounds", "7") == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    record = SessionRecord.model_validate_json((Path(lines[0].removeprefix("session: ")) / "session.json").read_bytes())
    assert len(lines) == 3 and lines[0] == f"session: {tmp_path / record.session_id}"
    assert lines[1].startswith("ended by: finish after ")
    assert lines[2] == f"final hypothesis: {HYPOTHESIS}"
    assert "execute_code" in err and "session_start" in err  # the live view went to stderr
    assert len(model.calls) == 3 and all(c["name"] == "everyone" for c in model.calls)
    assert record.spec.settings.action_budget == 5 and record.spec.settings.max_rounds == 7
    assert record.models == {"ai": ModelConfig(model="scripted/everyone")}
    assert load_sessions(tmp_path).session_id.tolist() == [record.session_id]


def test_model_sets_every_role(tmp_path, capsys):
    use_scripted({"everyone": list(SCRIPT)}, default=WAIT)
    assert main(["run", "--task", TASK_ID, "--variant", "default-dr", "--seed", "0", "--model",
                 "scripted/everyone", "--out", str(tmp_path), "--quiet", "--max-rounds", "3"]) == 0
    assert capsys.readouterr().err == ""
    [record] = [SessionRecord.model_validate_json(p.read_bytes()) for p in tmp_path.glob("*/session.json")]
    assert {role: m.model for role, m in record.models.items()} == {r: "scripted/everyone" for r in ("ai", "D", "R")}


def test_asking_again_returns_the_stored_session_without_running(tmp_path, capsys):
    use_scripted({"everyone": list(SCRIPT)}, default=WAIT)
    run(tmp_path, "--quiet")
    first = capsys.readouterr().out.splitlines()
    again = use_scripted({"everyone": list(SCRIPT)}, default=WAIT)
    assert run(tmp_path) == 0
    second = capsys.readouterr().out.splitlines()
    assert again.calls == []
    assert second[0] == first[0] + " (already finished: not rerun)" and second[1:] == first[1:]


def test_the_cli_and_python_name_the_same_session(tmp_path, capsys):
    use_scripted({"everyone": list(SCRIPT)}, default=WAIT)
    run(tmp_path, "--quiet")
    spec, _ = build_session(TASK_ID, "single", 3, model="scripted/everyone")
    assert capsys.readouterr().out.splitlines()[0] == f"session: {tmp_path / spec.session_id}"


def test_the_embedded_models_session_says_plumbing_grade_and_a_chosen_models_does_not():
    """The line `colabkit run` prints last (tests/test_e2e_real_model.py sees it on a real run;
    the scripted run above has three lines only)."""
    from colabkit.cli.run_cmd import plumbing_note

    default, _ = build_session(TASK_ID, "default-dr", 0)
    note = plumbing_note(default.model_for(role).model for role in default.participants)
    assert note is not None and note.startswith("plumbing-grade: local/smollm2-135m (the embedded model)")
    assert plumbing_note(["scripted/everyone", "openai/gpt-4o"]) is None


def test_omitting_model_is_the_same_session_as_naming_the_default():
    default, _ = build_session(TASK_ID, "single", 0)
    named, _ = build_session(TASK_ID, "single", 0, model=ModelConfig().model)
    assert default.identity() == named.identity()


@pytest.mark.parametrize(("args", "message"), [
    (["--variant", "solo"], "unknown variant 'solo'; valid: single,"),
    (["--task", "demo_archaeology/9/9"], "unknown task id 'demo_archaeology/9/9'"),
    (["--seed", "x"], "--seed must be an integer >= 0, got 'x'"),
    (["--seed", "-1"], "--seed must be an integer >= 0, got '-1'"),
    (["--action-budget", "0"], "--action-budget must be an integer >= 1, got '0'"),
    (["--data-root", "/no/such/folder"], "/no/such/folder"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    base = {"--task": TASK_ID, "--variant": "single", "--seed": "0", "--out": str(tmp_path)}
    base.update(dict(zip(args[::2], args[1::2])))
    assert main(["run", *[x for pair in base.items() for x in pair]]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("colabkit: error: ")
    assert message in captured.err
    assert not any(tmp_path.iterdir())


def test_a_wrong_variant_lists_the_variants_before_the_required_flags_are_asked_for(capsys):
    assert main(["run", "--variant", "nope"]) == 2  # the README's line: no --task, --seed, --out yet
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown variant 'nope'; valid: single, default-d," in err
    with pytest.raises(SystemExit) as stopped:  # a right variant: argparse's own error for the missing flags
        main(["run", "--variant", "single", "--task", TASK_ID])
    assert stopped.value.code == 2
    assert "colabkit run: error: the following arguments are required: --seed, --out" in capsys.readouterr().err


def test_a_discoverybench_task_id_on_the_demo_tasks_is_told_to_add_data_root(tmp_path, capsys):
    assert main(["run", "--task", "archaeology/3/0", "--variant", "single", "--seed", "0", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown task id 'archaeology/3/0'" in err
    assert "these are the demo tasks (no --data-root): for a DiscoveryBench task" in err and "pass --data-root DIR" in err


# --- colabkit demo (the `make demo` job), with the scripted model -----------------------------

def demo(out, *extra: str) -> int:
    return main(["demo", "--model", "scripted/everyone", "--out", str(out), "--variants", "single,default-dr",
                 "--max-rounds", "3", "--quiet", *extra])


def test_demo_runs_each_variant_stores_it_and_prints_a_summary(tmp_path, capsys):
    use_scripted({"everyone": list(SCRIPT)}, default=WAIT)
    assert demo(tmp_path) == 0
    out = capsys.readouterr().out
    sessions = load_sessions(tmp_path)
    assert sorted(sessions.variant) == ["default-dr", "single"]
    assert (tmp_path / "events.parquet").is_file() and (tmp_path / "sessions.parquet").is_file()
    ended = dict(zip(sessions.variant, sessions.ended_by))
    assert ended["single"] == "finish"
    for name, ended_by in ended.items():  # one summary row per session: variant, seed, how it ended
        assert any(line.split()[:3] == [name, "0", ended_by] for line in out.splitlines())
    assert HYPOTHESIS[:40] in out
    for sid in sessions.session_id:
        assert f"  {sid}/  events.jsonl, snapshot.json, session.json" in out

    again = use_scripted({"everyone": list(SCRIPT)}, default=WAIT)
    assert demo(tmp_path) == 0
    assert again.calls == [] and capsys.readouterr().out.count("already finished, not rerun") == 2


def test_demo_dry_run_lists_the_tasks_and_the_plan_without_running(tmp_path, capsys):
    model = use_scripted({"everyone": list(SCRIPT)}, default=WAIT)
    assert demo(tmp_path / "results", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "demo_archaeology/3/0  [variables]" in out
    assert out.count("would run") == 2 and model.calls == [] and not (tmp_path / "results").exists()


def test_log_prompts_stores_the_rendered_prompts_without_changing_the_session(tmp_path, capsys):
    use_scripted({"everyone": list(SCRIPT)}, default=WAIT)
    assert run(tmp_path / "plain", "--quiet") == 0
    use_scripted({"everyone": list(SCRIPT)}, default=WAIT)
    assert run(tmp_path / "logged", "--quiet", "--log-prompts") == 0
    [plain] = list((tmp_path / "plain").glob("*/session.json"))
    [logged] = list((tmp_path / "logged").glob("*/session.json"))
    assert plain.parent.name == logged.parent.name  # same session id: prompts are not part of the spec
    assert not (plain.parent / "prompts.jsonl").exists()
    prompts = (logged.parent / "prompts.jsonl").read_text().splitlines()
    assert len(prompts) == 3 and all('"role": "system"' in line for line in prompts)
