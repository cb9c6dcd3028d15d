"""Metrics as plugins: found by a `colabkit.metrics` entry point (an installed distribution,
here a temporary dist-info folder on sys.path) or by an import path, scored and cached like the
built-ins, joining scores.parquet; a broken or unfair plugin is refused with one line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers.stored import store_session

from colabkit.analysis import analysis_plan
from colabkit.cli import main
from colabkit.errors import ColabkitError
from colabkit.evaluation import available_metrics, score_results, scorers_for
from colabkit.evaluation.tables import SCORES_PARQUET
from colabkit.runner import load_experiment

TASK = "demo_archaeology/0/0"
PLUGIN = textwrap.dedent('''
    from colabkit.evaluation import Scorer, ScoreResult

    class HypothesisWords(Scorer):
        """The submitted hypothesis' length in words: rule-based, no judge."""
        name = "hyp_words"
        version = "1"
        columns = ("hyp_words",)
        opt_in = True

        async def score(self, ctx):
            return ScoreResult(values={"hyp_words": len(ctx.hypothesis.split())})

    class Crashes(Scorer):
        name = "crashes"
        version = "1"
        columns = ("crash_value",)

        async def score(self, ctx):
            raise RuntimeError("plugin bug")

    class Overwrites(Scorer):
        name = "overwrites"
        version = "1"
        columns = ("performance",)

        async def score(self, ctx):
            return ScoreResult(values={"performance": 1.0})
''')


def install(site: Path, monkeypatch: pytest.MonkeyPatch, entries: dict[str, str]) -> None:
    """A distribution `mylab-metrics` with `entries` in `colabkit.metrics`, importable from `site`."""
    site.mkdir(exist_ok=True)
    (site / "mylab_metrics.py").write_text(PLUGIN)
    info = site / "mylab_metrics-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mylab-metrics\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[colabkit.metrics]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()))
    monkeypatch.syspath_prepend(str(site))


def test_an_entry_point_metric_is_found_scored_cached_and_joins_scores_parquet(tmp_path, monkeypatch, capsys):
    install(tmp_path / "site", monkeypatch, {"hyp_words": "mylab_metrics:HypothesisWords"})
    assert "hyp_words" in available_metrics(opt_in=True) and "hyp_words" not in available_metrics()
    results = tmp_path / "results"
    short = store_session(results, TASK, "Axes dominate.", seed=0)
    long = store_session(results, TASK, "Axes are most frequent in the 12th century BCE.", seed=1)
    assert main(["score", str(results), "--metrics", "hyp_words,work", "--quiet"]) == 0
    assert "sessions: 2, scored: 4, reused: 0, incomplete: 0" in capsys.readouterr().out
    table = pd.read_parquet(results / SCORES_PARQUET).set_index("session_id")
    assert table.loc[short.name, "hyp_words"] == 2 and table.loc[long.name, "hyp_words"] == 9
    assert table["hyp_words"].dtype == "float64" and table.loc[short.name, "w_total"] == 0  # beside a built-in
    again = score_results(results, metrics=["hyp_words"])
    assert (again.scored, again.reused) == (0, 2)  # cached like a built-in
    assert analysis_plan(metrics=("performance", "hyp_words")).metrics == ("performance", "hyp_words")


def test_the_analysis_plan_refuses_a_metric_no_installed_plugin_fills():
    with pytest.raises(ColabkitError, match="analysis plan: .*unknown metric.s. hyp_words"):
        analysis_plan(metrics=("performance", "hyp_words"))


def test_an_import_path_in_the_experiment_file_names_a_metric_file_beside_it(tmp_path):
    (tmp_path / "my_metrics.py").write_text(PLUGIN)
    data = {"name": "m", "tasks": {"ids": [TASK]}, "variants": ["single"], "seeds": [0],
            "metrics": ["work", "my_metrics.py:HypothesisWords"]}
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(data))
    exp = load_experiment(tmp_path / "exp.yaml")
    assert exp.metrics[1] == f"{tmp_path / 'my_metrics.py'}:HypothesisWords"
    results = tmp_path / "results"
    store_session(results, TASK, "Axes dominate.")
    report = score_results(results, exp.scoring())
    assert report.scored == 2 and report.incomplete == 0
    assert pd.read_parquet(results / SCORES_PARQUET)["hyp_words"].tolist() == [2.0]


def test_a_crashing_plugin_scores_missing_and_flagged_and_the_others_still_score(tmp_path, monkeypatch):
    install(tmp_path / "site", monkeypatch, {"crashes": "mylab_metrics:Crashes"})
    results = tmp_path / "results"
    store_session(results, TASK, "Axes dominate.")
    report = score_results(results, metrics=["crashes", "work"])
    assert report.incomplete == 1
    row = pd.read_parquet(results / SCORES_PARQUET).iloc[0]
    assert pd.isna(row["crash_value"]) and "scorer_error: RuntimeError: plugin bug" in row["flags"]
    assert row["w_total"] == 0


@pytest.mark.parametrize(("entries", "name", "message"), [
    ({"overwrites": "mylab_metrics:Overwrites"}, "overwrites",
     r"metric plugin 'overwrites' \(entry point mylab_metrics:Overwrites\): column\(s\) performance belong to a built-in"),
    ({"gone": "mylab_metrics:Missing"}, "gone",
     r"metric plugin 'gone' \(entry point mylab_metrics:Missing\): cannot load: AttributeError"),
    ({"work": "mylab_metrics:HypothesisWords"}, "work", None),  # a built-in's name: the built-in wins
    ({"renamed": "mylab_metrics:HypothesisWords"}, "renamed", r"its scorer is named 'hyp_words', not 'renamed'"),
])
def test_a_bad_plugin_is_one_line_when_asked_for_and_harmless_otherwise(tmp_path, monkeypatch, entries, name, message):
    install(tmp_path / "site", monkeypatch, entries)
    assert [s.name for s in scorers_for(["work"])] == ["work"]  # the others are never loaded
    if message is None:
        assert type(scorers_for([name])[0]).__module__ == "colabkit.evaluation.metrics.work"
        return
    with pytest.raises(ColabkitError, match=message) as caught:
        scorers_for([name])
    assert "\n" not in str(caught.value)
