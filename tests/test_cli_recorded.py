"""The first hour's conveniences: an experiment folder tells `score`, `export`, `fork` and the
notebooks its data root and experiment; `--with-gold` without gold is one error line; config
mistakes name every unknown key with the key that was meant; an unset data-root variable
points at `--data-root`.

The data root is a copy of the demo tasks under another dataset name, so a command that
forgot it (and fell back to the demo tasks) would not find the sessions' task: every check
here could fail. Sessions are stored files (helpers.stored), not runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from helpers.stored import store_session

from colabkit.cli import main
from colabkit.errors import ColabkitError
from colabkit.runner import load_experiment
from colabkit.runner.pipeline import CONFIG_COPY, write_config
from colabkit.runner.recorded import data_root_for, open_experiment
from colabkit.tasks import load_tasks
from colabkit.tasks.layout import demo_root

TASK_ID = "my_archaeology/0/0"


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    """The demo tasks as another dataset (`my_archaeology`): not what the demo tasks hold."""
    root = tmp_path_factory.mktemp("db") / "discoverybench"
    shutil.copytree(demo_root(), root)
    (root / "real" / "test" / "demo_archaeology").rename(root / "real" / "test" / "my_archaeology")
    key = root / "eval" / "answer_key_real.csv"
    key.write_text(key.read_text(encoding="utf-8").replace("demo_archaeology", "my_archaeology"), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def folder(tmp_path_factory, data_root) -> Path:
    """An experiment folder as `colabkit batch` leaves it: its config copy and one finished session."""
    base = tmp_path_factory.mktemp("exp")
    config = base / "exp.yaml"
    config.write_text(yaml.safe_dump({"name": "mine", "tasks": {"data_root": str(data_root), "ids": [TASK_ID]},
                                      "variants": ["single"], "seeds": [0], "metrics": ["work"],
                                      "results": "results"}))
    exp = load_experiment(config)
    write_config(exp)
    store_session(exp.folder(), TASK_ID, "Axes peak around 2300 BCE.", suite=load_tasks(data_root))
    return exp.folder()


def plain_copy(folder: Path, tmp_path: Path) -> Path:
    """The same sessions without the experiment's config: nothing to read the data root from."""
    copy = tmp_path / "runs"
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns(CONFIG_COPY, "inspect", "scores*", "*.parquet"))
    return copy


def test_the_folder_its_sessions_and_their_forks_name_the_experiments_data_root(folder, data_root, tmp_path):
    session = next(p for p in folder.iterdir() if (p / "session.json").is_file())
    for path in (folder, session, folder / "forks" / "a-fork"):
        root, exp = data_root_for(path, None)
        assert root == data_root and exp is not None and exp.folder() == folder
    assert data_root_for(session, tmp_path)[0] == tmp_path  # a given --data-root wins
    assert data_root_for(tmp_path, None) == (None, None)  # outside an experiment: the demo tasks
    assert open_experiment("", str(folder)).folder() == folder  # a notebook given only the folder


def test_a_stored_config_that_no_longer_reads_stops_only_a_command_that_needs_it(folder, tmp_path):
    broken = tmp_path / "old-exp"
    broken.mkdir()
    (broken / CONFIG_COPY).write_text("name: old\nvariants: [single]\nseeds: [0]\nretired_knob: 1\n")
    assert data_root_for(broken, tmp_path) == (tmp_path, None)
    with pytest.raises(ColabkitError, match=r"retired_knob.*pass --data-root DIR"):
        data_root_for(broken, None)


def test_score_reads_the_data_root_and_metrics_from_the_folder(folder, data_root, tmp_path, monkeypatch, capsys):
    import colabkit.evaluation as evaluation

    real, asked = evaluation.score_results, []

    def spy(results, config=None, **kwargs):  # the real job, its arguments kept
        asked.append((config, kwargs["data_root"]))
        return real(results, config, **kwargs)

    monkeypatch.setattr(evaluation, "score_results", spy)
    assert main(["score", str(folder), "--quiet"]) == 0
    assert "sessions: 1, scored: 1" in capsys.readouterr().out
    config, root = asked.pop()
    assert root == data_root and config is not None and config.metrics == ("work",)  # the experiment's
    assert main(["score", str(plain_copy(folder, tmp_path)), "--metrics", "work", "--quiet"]) == 0
    assert asked.pop() == (None, None)  # no experiment folder: the demo tasks, as before


def test_export_with_gold_finds_the_gold_through_the_folder_and_fails_closed_without(folder, tmp_path, capsys):
    pytest.importorskip("inspect_ai")
    assert main(["export", str(folder), "--with-gold", "--out", str(tmp_path / "logs")]) == 0
    capsys.readouterr()
    assert main(["export", str(plain_copy(folder, tmp_path)), "--with-gold", "--out", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--with-gold: no gold answer" in err and TASK_ID in err and "--data-root" in err
    assert not list((tmp_path / "none").glob("*.eval"))  # nothing written with empty targets


def test_a_config_lists_every_unknown_key_with_the_key_meant(tmp_path, capsys):
    path = tmp_path / "typos.yaml"
    path.write_text("name: t\nvariants: [single]\nseeds: [0]\nsedes: [1]\njudge_repeat: 2\n"
                    "settings: {action_budgt: 3}\nmodels: {ai: {model: scripted/x, tempreature: 0.1}}\n")
    assert main(["batch", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "more)" not in err
    for key, meant in [("sedes", "seeds"), ("judge_repeat", "judge_repeats"),
                       ("settings.action_budgt", "action_budget"), ("models.ai.tempreature", "temperature")]:
        assert f"{key} (did you mean {meant}?)" in err, err
    assert "models.ai: Input should be a valid string" not in err  # the union's other member stays quiet


def test_an_unset_data_root_variable_points_at_the_option(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("DISCOVERYBENCH_ROOT", raising=False)
    path = tmp_path / "paper.yaml"
    path.write_text("name: t\nvariants: [single]\nseeds: [0]\ntasks: {data_root: '${DISCOVERYBENCH_ROOT}'}\n")
    assert main(["batch", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert "DISCOVERYBENCH_ROOT" in err and "--data-root" in err and "\n" not in err
