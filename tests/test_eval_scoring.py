"""Scoring stored sessions: storage, resumption, judge changes, cache replay, repeats, the
sanity check and the tables, with judge doubles behind the real gateway."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from helpers.env import require, shared_data
from helpers.judges import PROVIDER, perfect_answer, use_judge_double
from helpers.stored import store_session

import colabkit.session
from colabkit.cli import main
from colabkit.errors import ColabkitError
from colabkit.evaluation import (
    Judge,
    Judgement,
    Scorer,
    ScoreResult,
    ScoringConfig,
    SessionContext,
    fleiss_kappa,
    judge_config,
    judgement_agreement,
    load_judgements,
    load_scores,
    score_results,
    scorer_id,
    scorers_for,
    stored_scores,
)
from colabkit.evaluation import scorer as scorer_module
from colabkit.evaluation import tables as tables_module
from colabkit.evaluation.judge import PLUMBING_WARNING
from colabkit.evaluation.storage import write_score
from colabkit.evaluation.tables import SCORE_COLUMNS
from colabkit.llm import DEFAULT_MODEL, Gateway, ModelConfig, RetryPolicy
from colabkit.tasks import load_tasks

SUITE = load_tasks()
TASK = "demo_archaeology/0/0"
GOLD = SUITE.gold_for(TASK).hypothesis
OTHER_GOLD = SUITE.gold_for("demo_archaeology/1/0").hypothesis
PERFECT = judge_config("judgedouble/perfect")
METRICS = ["performance"]
FAST = {"metrics": METRICS, "sanity_tasks": 1}  # one sanity task is enough where the check is not the point


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """Three finished sessions on one task: the gold itself, nothing, another task's gold."""
    store_session(tmp_path, TASK, GOLD, seed=0)
    store_session(tmp_path, TASK, "", seed=1)
    store_session(tmp_path, TASK, OTHER_GOLD, seed=2)
    return tmp_path


@pytest.fixture(autouse=True)
def no_sessions_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scoring must never run a session: any attempt fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("scoring ran a session")
    monkeypatch.setattr(colabkit.session, "run_session", refuse)
    monkeypatch.setattr("colabkit.runner.recorder.run_session", refuse)


def by_seed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["seed", "judge_model"]).reset_index(drop=True)


def session_files(results: Path, *, scores: bool = False) -> dict[str, tuple[bytes, int]]:
    """Bytes and modification times of the session folders' files (their scores if asked)."""
    return {str(p.relative_to(results)): (p.read_bytes(), p.stat().st_mtime_ns)
            for folder in results.iterdir() if (folder / "session.json").is_file()
            for p in folder.rglob("*") if p.is_file() and (p.parent.name == "scores") == scores}


def test_a_perfect_judge_scores_stored_sessions_and_the_tables_show_them(results):
    use_judge_double()
    report = score_results(results, metrics=METRICS, judge=PERFECT)

    assert (report.sessions, report.scored, report.reused, report.incomplete) == (3, 3, 0, 0)
    assert report.sanity is not None and report.sanity.passed is True
    assert {c.kind for c in report.sanity.cases} == {"self", "other", "empty"}
    assert list((results / "judge-checks").glob("*.json"))
    scores = by_seed(load_scores(results))
    assert list(scores.columns[:len(SCORE_COLUMNS)]) == list(SCORE_COLUMNS)
    assert scores["termination"].tolist() == ["ai_budget"] * 3  # the session-end rule, from each spec
    assert scores["ended_by"].tolist() == ["finish"] * 3 and scores["ai_steps"].tolist() == [0.0] * 3  # from each record
    # gold vs gold: recall 1, HMS 1; empty: undelivered -> 0 without asking; other gold: 0
    assert scores["delivered"].tolist() == [True, False, True]
    assert scores["performance"].tolist() == [1.0, 0.0, 0.0]
    assert scores["hms"].tolist() == [1.0, 0.0, 0.0]
    assert scores["judge_reliable"].tolist() == [True] * 3
    assert scores["judge_grade"].tolist() == ["capable"] * 3
    assert scores["w_total"].isna().all()  # not scored here: missing, never 0
    assert (results / "scores.parquet").is_file() and (results / "judgements.parquet").is_file()

    sid = scorer_id(scorers_for(["performance"])[0], PERFECT, 1)
    folder = results / scores["session_id"][0]
    stored = json.loads((folder / "scores" / f"{sid}.json").read_text())
    assert stored["scorer"] == "performance" and stored["judge"]["model"] == "judgedouble/perfect"
    assert stored["prompt_version"] == "hms_context_match@2,hms_decompose@2,hms_relation@2,hms_variables@2"
    judgements = load_judgements(results)
    mine = judgements[judgements["session_id"] == folder.name]
    assert set(mine["item"]) == {"decompose:gold", "decompose:prediction", "variables:p0:g0", "relation:p0:g0"}
    assert mine["raw"].notna().all() and (mine["prompt_version"] == 2).all()


def test_rescoring_reuses_stored_scores_and_replays_the_judge_from_the_cache(results):
    double = use_judge_double()
    score_results(results, **FAST, judge=PERFECT)
    sessions, scores = session_files(results), session_files(results, scores=True)
    asked = len(double.calls)
    assert asked > 0

    again = score_results(results, **FAST, judge=PERFECT)
    assert (again.scored, again.reused) == (0, 3)
    assert len(double.calls) == asked  # nothing asked: stored scores reused, sanity check stored
    assert session_files(results) == sessions and session_files(results, scores=True) == scores

    # Lose every score and the sanity check: the judge's answers come back from the cache.
    for path in [*results.glob("*/scores/*.json"), *results.glob("judge-checks/*.json")]:
        path.unlink()
    replay = score_results(results, **FAST, judge=PERFECT)
    assert replay.scored == 3 and len(double.calls) == asked
    assert by_seed(load_scores(results))["performance"].tolist() == [1.0, 0.0, 0.0]


def test_changing_the_judge_rescores_beside_the_old_scores_without_rerunning_sessions(results):
    use_judge_double()
    score_results(results, **FAST, judge=PERFECT)
    before = session_files(results)
    yes_man = use_judge_double({}, fallback=agreeable_answer)
    report = score_results(results, **FAST, judge=judge_config("judgedouble/agreeable"))

    assert report.scored == 3 and yes_man.calls
    assert session_files(results) == before
    for folder in (p for p in results.iterdir() if (p / "session.json").is_file()):
        assert {s.judge.model for s in stored_scores(folder)} == {"judgedouble/perfect", "judgedouble/agreeable"}
    scores = by_seed(load_scores(results))
    assert len(scores) == 6  # one row per session and judge
    agreeable = scores[scores["judge_model"] == "judgedouble/agreeable"]
    # the agreeable judge matches any context: the other task's gold now scores 1 ...
    assert agreeable["performance"].tolist() == [1.0, 0.0, 1.0]
    # ... which its sanity check catches ('other' case), so every row says unreliable
    assert report.sanity is not None and report.sanity.passed is False
    assert "other" in report.sanity.reason
    assert agreeable["judge_reliable"].tolist() == [False] * 3
    assert scores[scores["judge_model"] == "judgedouble/perfect"]["judge_reliable"].tolist() == [True] * 3
    judgements = load_judgements(results)
    assert set(judgements.loc[judgements["judge_model"] == "judgedouble/agreeable", "judge_reliable"]) == {False}


def agreeable_answer(prompt_id: str, payload: dict) -> dict:
    """A judge that says yes to everything: decomposes like the perfect one, matches all."""
    if prompt_id == "hms_context_match":
        return {"reason": "looks fine", "match": True}
    if prompt_id == "hms_variables":
        return {"explanation": "all shared", "size_gold": 1, "size_pred": 1, "intersection": 1}
    if prompt_id == "hms_relation":
        return {"explanation": "same", "option": "A"}
    return perfect_answer(prompt_id, payload)


def test_a_judge_returning_garbage_leaves_scores_missing_flagged_and_unreliable(results):
    use_judge_double({}, fallback=lambda prompt_id, payload: "I think it is about right!")
    report = score_results(results, **FAST, judge=judge_config("judgedouble/garbage"))

    scores = by_seed(load_scores(results))
    assert scores["performance"].isna().tolist() == [True, False, True]  # the undelivered one is 0
    assert scores["performance"][1] == 0.0
    assert scores["hms"].isna().tolist() == [True, False, True]
    assert all("judge_invalid" in f for f in scores["flags"][[0, 2]])
    assert report.sanity is not None and report.sanity.passed is False
    assert scores["judge_reliable"].tolist() == [False] * 3
    judgements = load_judgements(results)
    assert judgements["raw"].str.contains("about right").all()  # the garbage itself is kept
    assert judgements["label"].isna().all() and judgements["score"].isna().all()


def test_a_judge_error_is_missing_and_incomplete_and_a_rerun_completes_it(results):
    use_judge_double({}, fallback=lambda prompt_id, payload: RuntimeError("provider down"))
    no_backoff = Gateway(cache_dir=results / "judge-cache", retry=RetryPolicy(max_attempts=2, base_delay_s=0))
    report = score_results(results, **FAST, judge=PERFECT, gateway=no_backoff)
    no_backoff.close()
    assert report.incomplete == 2  # the two delivered sessions; the undelivered one needs no judge
    scores = by_seed(load_scores(results))
    assert scores["performance"].isna().tolist() == [True, False, True]
    assert all("judge_error" in f for f in scores["flags"][[0, 2]])
    assert report.sanity is not None and report.sanity.passed is False

    use_judge_double()  # the provider is back: only the incomplete sessions are redone
    rerun = score_results(results, **FAST, judge=PERFECT)
    assert (rerun.scored, rerun.reused, rerun.incomplete) == (2, 1, 0)
    assert by_seed(load_scores(results))["performance"].tolist() == [1.0, 0.0, 0.0]
    assert rerun.sanity is not None and rerun.sanity.passed is True  # a failed-by-error check is redone
    # the reused (undelivered) session's file was written under the failed check; the tables
    # follow the judge's current check
    assert by_seed(load_scores(results))["judge_reliable"].tolist() == [True] * 3


def test_a_provider_refusing_the_judge_stops_the_job_and_a_rerun_scores_everything(results, capsys):
    import litellm

    refused = litellm.AuthenticationError("invalid api key", model="perfect", llm_provider=PROVIDER)
    use_judge_double({}, fallback=lambda prompt_id, payload: refused)
    assert main(["score", str(results), "--judge", PERFECT.model, "--metrics", "performance",
                 "--sanity-tasks", "1", "--quiet"]) == 1
    assert "stopped early: provider: " in capsys.readouterr().out
    report = score_results(results, **FAST, judge=PERFECT)
    assert report.stopped is not None and report.stopped.startswith("provider: ")
    assert "invalid api key" in report.stopped
    assert report.scored == 0  # the sanity check asks first, so nothing was scored 0 or 1
    scores = load_scores(results)
    assert "performance" not in scores or scores["performance"].isna().all()

    use_judge_double()  # the key is fixed: the next run scores every session
    rerun = score_results(results, **FAST, judge=PERFECT)
    assert rerun.stopped is None and (rerun.scored, rerun.reused) == (3, 0)
    assert by_seed(load_scores(results))["performance"].tolist() == [1.0, 0.0, 0.0]


def test_a_session_that_ended_by_an_infrastructure_failure_has_its_metrics_missing(tmp_path):
    store_session(tmp_path, TASK, GOLD, seed=0)
    store_session(tmp_path, TASK, "", seed=1, ended_by="provider_error")  # refused: no team result
    store_session(tmp_path, TASK, "", seed=2, ended_by="budget")  # the study's own limit: a result
    score_results(tmp_path, metrics=["performance", "work"], sanity_tasks=1, judge=PERFECT)
    scores = by_seed(load_scores(tmp_path))
    assert scores["performance"].tolist()[::2] == [1.0, 0.0]
    assert scores["w_total"].tolist()[::2] == [0.0, 0.0]
    refused = scores.iloc[1]
    assert pd.isna(refused["performance"]) and pd.isna(refused["w_total"]) and pd.isna(refused["delivered"])
    assert refused["flags"].startswith("session: ended by provider_error")


def test_a_session_that_reached_its_spending_cap_is_an_outcome_scored_from_its_editor(tmp_path):
    store_session(tmp_path, TASK, GOLD, seed=0, ended_by="llm_budget")  # delivered before the cap
    store_session(tmp_path, TASK, "", seed=1, ended_by="llm_budget")  # nothing delivered
    score_results(tmp_path, metrics=["performance"], sanity_tasks=1, judge=PERFECT)
    scores = by_seed(load_scores(tmp_path))
    assert scores["performance"].tolist() == [1.0, 0.0] and scores["delivered"].tolist() == [True, False]
    assert scores["ended_by"].tolist() == ["llm_budget"] * 2
    assert not any(flag.startswith("session: ended by") for flag in scores["flags"])


def marked_context(answers: list[bool]):
    """Context matches for the session's prediction come from `answers` in turn; the rest
    (the sanity check's questions) are answered perfectly."""
    def answer(prompt_id: str, payload: dict) -> dict:
        if prompt_id == "hms_decompose" and payload["hypothesis"] == "MARKED":
            return {"sub_hypotheses": [{"text": "m", "context": "MARKED", "variables": ["v"], "relation": "r"}]}
        if prompt_id == "hms_context_match" and payload["predicted_context"] == "MARKED":
            return {"reason": "scripted", "match": answers.pop(0)}
        if prompt_id in ("hms_variables", "hms_relation") and payload["predicted_sub_hypothesis"]["text"] == "m":
            return agreeable_answer(prompt_id, payload)
        return perfect_answer(prompt_id, payload)
    return answer


def test_repeats_are_stored_and_their_agreement_reported(tmp_path):
    store_session(tmp_path, TASK, "MARKED", seed=0)
    store_session(tmp_path, TASK, "MARKED", seed=1)
    double = use_judge_double({}, fallback=marked_context([True, False, True]))
    report = score_results(tmp_path, **FAST, judge=PERFECT, repeats=3, concurrency=1)

    seeds = [c["seed"] for c in double.calls if c["payload"].get("predicted_context") == "MARKED"]
    assert seeds == [0, 1, 2]  # each repeat a different sample; the second session's same
    # questions are replayed from the cache, so it gets the same three answers
    judgements = load_judgements(tmp_path)
    context = judgements[judgements["item"] == "context:p0:g0"].sort_values(["session_id", "repeat"])
    assert context["repeat"].tolist() == [0, 1, 2] * 2
    assert context["label"].tolist() == ["true", "false", "true"] * 2
    scores = load_scores(tmp_path)
    # per repeat performance 1, 0, 1 -> mean 2/3 in each session
    assert scores["performance"].tolist() == pytest.approx([2 / 3, 2 / 3])
    stored = stored_scores(next(p for p in tmp_path.iterdir() if (p / "session.json").is_file()))[0]
    assert stored.repeats == 3
    assert stored.agreement["spread:performance"] == 1.0
    assert stored.agreement["kappa:hms/context"] is None  # one labelled item per session: undefined, not faked
    # The job pools both sessions: two items rated (true, false, true).
    # P_i = (2^2 + 1^2 - 3) / 6 = 1/3 each -> P_bar = 1/3; p_true = 4/6, p_false = 2/6
    # P_e = 4/9 + 1/9 = 5/9; kappa = (1/3 - 5/9) / (1 - 5/9) = -1/2
    assert report.agreement["kappa:hms/context"] == pytest.approx(-0.5)
    assert report.agreement["spread:hms/decompose"] == 0.0  # decompositions: one sub-hypothesis every time
    assert "kappa:hms" not in report.agreement  # context and relation labels are never pooled


def test_fleiss_kappa_by_hand():
    # 4 items x 3 raters: (a,a,a) (b,b,b) (a,a,b) (b,b,a)
    # P_i = (sum n_ij^2 - 3) / 6 = 1, 1, 1/3, 1/3 -> P_bar = 2/3; p_a = p_b = 1/2 -> P_e = 1/2
    # kappa = (2/3 - 1/2) / (1 - 1/2) = 1/3
    ratings = [["a", "a", "a"], ["b", "b", "b"], ["a", "a", "b"], ["b", "b", "a"]]
    assert fleiss_kappa(ratings) == pytest.approx(1 / 3)
    assert fleiss_kappa([["a", "a"], ["b", "b"]]) == pytest.approx(1.0)
    assert fleiss_kappa([["a", "a"], ["a", "a"]]) is None  # one category: undefined
    rows = [Judgement(metric="m", item=f"i{i}", repeat=r, label=label, prompt_id="p", prompt_version=1, model="x")
            for i, row in enumerate(ratings) for r, label in enumerate(row)]
    rows += [Judgement(metric="s", item="n", repeat=r, score=v, prompt_id="p", prompt_version=1, model="x")
             for r, v in enumerate([0.2, 0.5, 0.4])]
    assert judgement_agreement(rows) == pytest.approx({"kappa:m": 1 / 3, "spread:s": 0.3})


def test_agreement_is_per_judged_question_never_pooled_across_label_kinds():
    # HMS asks two labelled questions: context (true/false) and relation (A/B/C). Pooled, the
    # disagreements of one look like agreement with the other's categories.
    context = [["true", "false"], ["false", "true"], ["true", "true"]]
    relation = [["A", "B"], ["B", "C"], ["C", "C"], ["A", "A"]]
    rows = [Judgement(metric="hms", item=f"{kind}:p{i}:g0", repeat=r, label=label, prompt_id="p",
                      prompt_version=1, model="x")
            for kind, ratings in (("context", context), ("relation", relation))
            for i, row in enumerate(ratings) for r, label in enumerate(row)]
    rows += [Judgement(metric="hms", item=f"variables:p{i}:g0", repeat=r, score=v, prompt_id="p",
                       prompt_version=1, model="x") for i, pair in enumerate([(0.5, 1.0), (1.0, 1.0)])
             for r, v in enumerate(pair)]
    agreement = judgement_agreement(rows)
    assert set(agreement) == {"kappa:hms/context", "kappa:hms/relation", "spread:hms/variables"}
    assert agreement["kappa:hms/context"] == pytest.approx(fleiss_kappa(context))
    assert agreement["kappa:hms/relation"] == pytest.approx(fleiss_kappa(relation))
    assert agreement["spread:hms/variables"] == pytest.approx(0.25)
    assert fleiss_kappa(context + relation) != pytest.approx(agreement["kappa:hms/context"])


def test_combining_repeats_never_invents_a_value():
    scorer = scorers_for(["performance"])[0]
    combined = scorer.combine([ScoreResult(values={"hms": 0.5, "delivered": True}),
                               ScoreResult(values={"hms": None, "delivered": True})])
    assert combined.values == {"hms": 0.5, "delivered": True}
    assert combined.flags == ["hms: missing in 1 of 2 repeats"]
    tie = scorer.combine([ScoreResult(values={"ok": True}), ScoreResult(values={"ok": False})])
    assert tie.values == {"ok": None}
    assert scorer.combine([ScoreResult(values={"hms": None}), ScoreResult(values={"hms": None})]).values == {"hms": None}


def test_the_embedded_judge_is_accepted_only_as_plumbing_with_a_loud_warning():
    with pytest.warns(UserWarning, match="JUDGE WARNING"):
        judge = Judge(Gateway(), judge_config())
    assert judge.config.model == DEFAULT_MODEL and judge.grade == "plumbing"
    assert Judge(Gateway(), judge_config("openai/gpt-4o")).grade == "capable"
    assert Judge(Gateway(), judge_config("openai/gpt-4o", temperature=0.9)).config.temperature == 0.0
    assert "judge_grade='plumbing'" in PLUMBING_WARNING


def test_cli_scores_shows_the_sanity_check_and_rejects_bad_options(results, capsys):
    use_judge_double()
    assert main(["score", str(results), "--judge", "judgedouble/perfect", "--metrics", "performance", "--sanity-tasks", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "judge sanity check: reliable" in out and "sessions: 3, scored: 3" in out
    assert main(["score", str(results), "--judge", "judgedouble/perfect", "--metrics", "performance", "--sanity-tasks", "1", "--quiet"]) == 0
    assert "scored: 0, reused: 3" in capsys.readouterr().out
    assert main(["score", str(results), "--metrics", "nope"]) == 2
    assert "unknown metric(s) nope" in capsys.readouterr().err
    assert main(["score", str(results), "--repeats", "0"]) == 2
    assert main(["score", str(results / "missing")]) == 2


class CrashingScorer(Scorer):
    """A rule-based scorer with a bug on one session: the batch must go on."""

    name = "crashing"
    version = "1"
    columns = ("w_total",)

    async def score(self, ctx: SessionContext) -> ScoreResult:
        if ctx.record.seed == 1:
            raise KeyError("a bug")
        return ScoreResult(values={"w_total": float(ctx.record.seed)})


def test_a_crashing_scorer_marks_its_session_incomplete_and_the_batch_goes_on(results, monkeypatch):
    monkeypatch.setitem(scorer_module._REGISTRY, "crashing", CrashingScorer)
    report = score_results(results, metrics=["crashing"])
    assert (report.scored, report.incomplete, report.sanity) == (3, 1, None)  # no judge asked: no check
    scores = by_seed(load_scores(results))
    assert scores["w_total"].tolist()[0::2] == [0.0, 2.0] and pd.isna(scores["w_total"][1])
    assert "crashing: scorer_error: KeyError" in scores["flags"][1]
    assert scores["judge_model"].isna().all() and scores["judge_reliable"].isna().all()
    assert score_results(results, metrics=["crashing"]).scored == 1  # only the incomplete one is redone


class CellCountScorer(Scorer):
    """A rule-based scorer that reads the workspace snapshot."""

    name = "cell_count"
    version = "1"
    columns = ("n_cells",)

    async def score(self, ctx: SessionContext) -> ScoreResult:
        return ScoreResult(values={"n_cells": len(ctx.snapshot.cells)})


def test_a_damaged_snapshot_fails_only_the_scorers_that_read_it(results, monkeypatch):
    monkeypatch.setitem(scorer_module._REGISTRY, "cell_count", CellCountScorer)
    damaged = sorted(p for p in results.iterdir() if (p / "session.json").is_file())[0]
    (damaged / "snapshot.json").write_text("{not json")
    report = score_results(results, metrics=["work", "cell_count"])
    assert (report.scored, report.incomplete, report.unreadable) == (6, 1, [])
    stored = {s.scorer: s.result for s in stored_scores(damaged)}
    assert stored["work"].complete and stored["work"].values["w_total"] is not None
    assert not stored["cell_count"].complete and stored["cell_count"].values == {"n_cells": None}
    assert f"cannot read stored session {damaged}" in stored["cell_count"].flags[0]


def test_sessions_whose_task_is_missing_or_changed_are_flagged(tmp_path):
    use_judge_double()
    store_session(tmp_path, TASK, GOLD, seed=0, task_digest="0" * 64)
    store_session(tmp_path, "demo_archaeology/1/0", OTHER_GOLD, seed=0)
    without = load_tasks(ids=["demo_archaeology/0"])  # task 1/0 is not in this suite
    score_results(tmp_path, **FAST, judge=PERFECT, suite=without)
    scores = load_scores(tmp_path).set_index("task_id")
    assert "task_changed: demo_archaeology/0/0" in scores.loc[TASK, "flags"]
    assert scores.loc[TASK, "performance"] == 1.0  # still scored, but the flag says against what
    missing = scores.loc["demo_archaeology/1/0"]
    assert "task_not_found" in missing["flags"] and "no_gold" in missing["flags"]
    assert pd.isna(missing["performance"]) and bool(missing["delivered"])


def test_a_scoring_config_holds_the_judge_and_keywords_override_it(results):
    use_judge_double()
    config = ScoringConfig(judge=ModelConfig(model="judgedouble/perfect", temperature=0.7),
                           metrics=("performance",), sanity_tasks=1)
    assert config.judge.temperature == 0.0  # a judge is always asked at temperature 0
    assert config.identity() == ScoringConfig.model_validate_json(config.model_dump_json()).identity()
    report = score_results(results, config)
    assert report.config == config and report.scored == 3
    again = score_results(results, config, repeats=2)
    assert again.config is not None and again.config.repeats == 2 and again.config.judge == config.judge
    assert again.scored == 3  # more repeats are another scoring: scored beside the first


def test_a_stale_parquet_export_never_hides_a_newer_score(results, monkeypatch):
    use_judge_double()
    score_results(results, **FAST, judge=PERFECT)
    with monkeypatch.context() as patch:  # a current export is read as is, not rebuilt
        patch.setattr(tables_module, "_build", lambda results: pytest.fail("rebuilt a current export"))
        assert by_seed(load_scores(results))["performance"].tolist() == [1.0, 0.0, 0.0]
    folder = next(p for p in sorted(results.iterdir()) if (p / "session.json").is_file())
    [score] = stored_scores(folder)
    changed = score.result.model_copy(update={"values": {**score.result.values, "performance": 0.25}})
    write_score(folder, score.model_copy(update={"result": changed}))  # newer than scores.parquet
    rows = load_scores(results).set_index("session_id")
    assert rows.loc[folder.name, "performance"] == 0.25


def test_the_scorer_id_changes_with_everything_that_decides_a_score():
    performance = scorers_for(["performance"])[0]
    base = scorer_id(performance, PERFECT, 1)
    assert scorer_id(performance, PERFECT, 1) == base
    assert scorer_id(performance, PERFECT.model_copy(update={"timeout": 999.0}), 1) == base  # not an answer's cause
    assert scorer_id(performance, judge_config("judgedouble/other"), 1) != base
    assert scorer_id(performance, PERFECT.model_copy(update={"seed": 7}), 1) != base
    assert scorer_id(performance, PERFECT, 3) != base
    bumped = type("Bumped", (type(performance),), {"version": "2"})()
    assert scorer_id(bumped, PERFECT, 1) != base
    reworded = type("Reworded", (type(performance),), {"prompts": (
        *performance.prompts[:-1], performance.prompts[-1].model_copy(update={"version": 3}))})()
    assert reworded.prompt_version != performance.prompt_version and scorer_id(reworded, PERFECT, 1) != base
    rule_based = CrashingScorer()  # asks no judge: its id ignores the judge and repeats
    assert scorer_id(rule_based, PERFECT, 1) == scorer_id(rule_based, judge_config("judgedouble/other"), 3)


def test_a_damaged_score_file_is_scored_again(results):
    use_judge_double()
    score_results(results, **FAST, judge=PERFECT)
    [damaged] = list(results.glob("*/scores/*.json"))[:1]
    damaged.write_text("{not json")
    (results / "scores.parquet").unlink()  # edited in place: no export can know, read the files
    with pytest.raises(ColabkitError, match=f"unreadable score file {damaged}"):
        load_scores(results)  # readers name the file
    report = score_results(results, **FAST, judge=PERFECT)
    assert (report.scored, report.reused) == (1, 2)
    assert load_scores(results)["performance"].notna().all()


def test_scoring_on_real_archaeology_tasks_with_their_answer_key(tmp_path):
    discoverybench = shared_data()
    require((discoverybench / "eval").is_dir(), f"DiscoveryBench answer key not present at {discoverybench / 'eval'}")
    suite = load_tasks(discoverybench, domains=["archaeology"])
    gold = suite.gold_for("archaeology/3/0")
    assert gold is not None
    store_session(tmp_path, "archaeology/3/0", gold.hypothesis, suite=suite)
    store_session(tmp_path, "archaeology/3/0", "", seed=1, suite=suite)
    use_judge_double()
    report = score_results(tmp_path, metrics=METRICS, judge=PERFECT, data_root=discoverybench)
    assert report.sanity is not None and report.sanity.passed is True
    # metadata_2 and metadata_26 are duplicates upstream: 'other' must never pick an equal gold
    for case in report.sanity.cases:
        if case.kind == "other":
            other = suite.gold_for(case.other_task_id or "")
            assert other is not None and other.hypothesis != suite.gold_for(case.task_id).hypothesis
    assert by_seed(load_scores(tmp_path))["performance"].tolist() == [1.0, 0.0]


def test_scoring_an_empty_folder_is_one_line_and_a_non_zero_exit_without_asking_the_judge(tmp_path, capsys):
    asked: list[str] = []
    use_judge_double({}, fallback=lambda prompt_id, payload: asked.append(prompt_id) or perfect_answer(prompt_id, payload))
    assert main(["score", str(tmp_path), "--judge", PERFECT.model]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"colabkit: error: no stored sessions under {tmp_path}: nothing to score "
                   "(colabkit run or colabkit batch stores them)"]
    assert asked == [] and list(tmp_path.iterdir()) == []  # no judge call, no table, no temporary


def test_an_export_removes_the_temporaries_a_killed_export_left_behind(tmp_path):
    import os

    store_session(tmp_path, TASK, GOLD, seed=0)
    stale, fresh = tmp_path / ".scores.parquet.0123456789ab.tmp", tmp_path / ".scores.parquet.ba9876543210.tmp"
    stale.write_bytes(b"torn")
    fresh.write_bytes(b"being written")
    os.utime(stale, (0, 0))
    tables_module.export_tables(tmp_path)
    assert not stale.exists() and fresh.exists()  # a live writer's temporary is left alone
