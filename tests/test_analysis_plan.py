"""The analysis plan fixes the families before the data; the sign-flip test beside the t; the
plan's hash on every table and figure."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from helpers.score_tables import score_table

from colabkit.analysis import (
    DECOMPOSITION,
    analysis_plan,
    contrast_figure,
    contrasts,
    format_study_table,
    hypothesis_table,
    plan_for,
    planned_tests,
    power_table,
    read_plan,
    sign_flip_p,
    study_table,
    termination_contrast,
)
from colabkit.analysis.inference.planning.plan import ALL_VARIANTS, AnalysisPlan
from colabkit.errors import ColabkitError

METRICS = ["performance", "hms"]
KEY = ["a", "b", "metric"]


def adjusted(table: pd.DataFrame) -> pd.Series:
    return table.set_index(KEY)["p_adjusted"]


def test_the_plan_fixes_families_from_planned_variants_and_metrics():
    plan = analysis_plan(metrics=METRICS)
    tests = planned_tests(plan)
    sizes = tests["family"].value_counts().to_dict()
    # Scaffolded - Default x 3 compositions x 2 metrics; 4 components x 3 x 2; dynamic 3 x 2
    assert sizes == {"scaffolded-default": 6, "decomposition": 24, "living-memory": 6}
    assert plan.first_step_alpha == pytest.approx(0.05 * 0.95)  # the largest initial share of alpha
    assert {"H1.dr", "H2.pooled", "H3.memory", "H4.w_total", "H5.dynamic"} <= {h.name for h in plan.hypotheses}
    paper = analysis_plan([v for v in plan.variants if not v.startswith("dynamic")], metrics=METRICS)
    assert "living-memory" not in set(planned_tests(paper)["family"])
    assert paper.plan_hash != plan.plan_hash and len(plan.plan_hash) == 12
    with pytest.raises(ColabkitError, match="unknown metric"):
        analysis_plan(metrics=["performance", "nonsense"])


def test_the_same_contrast_has_the_same_adjusted_p_whatever_metrics_are_asked():
    scores = score_table()
    plan = analysis_plan(metrics=METRICS)
    both = adjusted(contrasts(scores, DECOMPOSITION, metrics=METRICS, plan=plan, mixed_families=()))
    for metric in METRICS:
        alone = adjusted(contrasts(scores, DECOMPOSITION, metrics=[metric], plan=plan, mixed_families=()))
        assert len(alone) == 15
        assert np.allclose(alone, both.loc[alone.index], equal_nan=True)


def test_the_same_contrast_has_the_same_adjusted_p_whatever_variants_are_present():
    scores = score_table()
    plan = analysis_plan(metrics=METRICS)
    full = contrasts(scores, DECOMPOSITION, plan=plan, mixed_families=())
    missing = scores[scores["variant"] != "preassigned-d"]
    part = contrasts(missing, DECOMPOSITION, plan=plan, mixed_families=())
    assert len(part) == len(full) - 2 * 2  # preassigned-d's two pairs x two metrics are not shown
    # the absent tests count as p = 1: no other test's adjusted p moves down
    joined = full.merge(part, on=KEY, suffixes=("", "_part"))
    assert (joined["p_adjusted_part"] >= joined["p_adjusted"] - 1e-12).all()
    absent = hypothesis_table(missing, plan)
    assert absent.loc[absent["a"] == "preassigned", "p_test"].isna().all()  # pooled over d: not in the data


def test_a_hypothesis_never_shows_a_p_below_the_ones_that_pass_it_level():
    scores = score_table()
    plan = analysis_plan(metrics=METRICS)
    table = hypothesis_table(scores, plan).set_index("hypothesis")
    for h in plan.hypotheses:
        parents = [p.name for p in plan.hypotheses if h.name in p.then]
        if h.weight == 0 and parents:  # reachable only through its parents
            assert table.loc[h.name, "p_adjusted"] >= table.loc[parents, "p_adjusted"].min() - 1e-12, h.name
    shown = contrasts(scores, DECOMPOSITION, metrics=METRICS, plan=plan, mixed_families=())
    assert not {"p_holm", "significant_holm", "gate"} & set(shown.columns)
    assert (shown["declared"] == (shown["p_adjusted"] <= plan.alpha)).all()
    assert shown["decision"].isin(["declared", "not declared", "not reached (no level passed to it)"]).all()


def test_sign_flip_p_by_enumeration():
    # 5 tasks with 1-2 pairs: the p over all 32 flips, counted by hand with the same statistic
    d = pd.Series([0.3, 0.1, 0.2, -0.1, 0.4, 0.25, 0.05])
    tasks = pd.Series(["a", "a", "b", "c", "d", "d", "e"])
    sums = d.groupby(tasks).sum().to_numpy()
    counts = d.groupby(tasks).size().to_numpy()

    def t(signs: np.ndarray) -> float:
        flipped = signs * sums
        mean = flipped.sum() / counts.sum()
        se = math.sqrt(5 / 4 * ((flipped - counts * mean) ** 2).sum()) / counts.sum()
        return abs(mean / se)

    observed = t(np.ones(5))
    count = sum(t(np.array(s)) >= observed - 1e-12 for s in itertools.product((1.0, -1.0), repeat=5))
    p, how = sign_flip_p(d, tasks)
    assert (p, how) == (count / 32, "exact")
    p_random, how_random = sign_flip_p(d, tasks, flips=20_000, exact_flips=2)
    assert how_random == "random" and p_random == pytest.approx(p, abs=0.01)


def constant_shift(shift: float, n_tasks: int = 8) -> pd.DataFrame:
    scores = score_table(n_tasks=n_tasks, seeds=2)
    base = scores.loc[scores["variant"] == "default-dr", "performance"].to_numpy()
    scores.loc[scores["variant"] == "scaffolded-dr", "performance"] = base + shift
    return scores


@pytest.mark.parametrize("shift", [0.1, 0.1 + 1e-15])  # exact, and the same shift in floating point
def test_a_constant_shift_is_significant_by_sign_flip(shift):
    table = contrasts(constant_shift(shift), metrics=["performance"], mixed_families=())
    row = table[table["a"] == "scaffolded-dr"].iloc[0]
    assert row["p_signflip"] == pytest.approx(2 / 2**8) and row["signflip"] == "zero spread"
    assert row["p_unadjusted"] == row["p_signflip"] and "zero spread" in row["note"]
    assert row["diff"] == pytest.approx(0.1)


def test_delivery_one_arm_always_one_the_other_always_zero_is_significant():
    scores = score_table(n_tasks=10, seeds=2)
    scores.loc[scores["variant"] == "scaffolded-dr", "delivered"] = True
    scores.loc[scores["variant"] == "default-dr", "delivered"] = False
    table = contrasts(scores, metrics=["delivered"], mixed_families=())
    row = table[table["a"] == "scaffolded-dr"].iloc[0]
    assert row["p_signflip"] == pytest.approx(2 / 2**10) and row["p_unadjusted"] < 0.05


def test_the_plan_hash_appears_on_every_table_and_figure():
    scores = score_table(n_tasks=4, seeds=2)
    plan = analysis_plan(metrics=METRICS)
    both = pd.concat([scores.assign(termination="either_side"),
                      scores.assign(termination="all_sides", session_id=scores["session_id"] + "-all")])
    tables = {"study": study_table(scores, METRICS, plan=plan),
              "contrasts": contrasts(scores, metrics=METRICS, plan=plan, mixed_families=()),
              "power": power_table(scores, metrics=["performance"], plan=plan),
              "termination": termination_contrast(both, metrics=METRICS, plan=plan)}
    for name, table in tables.items():
        assert set(table["plan_hash"]) == {plan.plan_hash}, name
        assert table["plan_status"].str.startswith("no plan").all(), name  # no file: said so
    assert format_study_table(tables["study"])["plan_hash"].eq(plan.plan_hash).all()
    assert (tables["power"]["alpha"] == plan.first_step_alpha).all()
    figure = contrast_figure(tables["contrasts"])
    assert any(plan.plan_hash in text.get_text() for text in figure.texts)


def test_plan_analysis_writes_the_plan_locks_it_once_a_session_exists_and_amends_in_versions(tmp_path, capsys):
    from colabkit.cli import main

    config = tmp_path / "exp.yaml"
    config.write_text("name: tiny\ntasks: {data_root: null, ids: [demo_archaeology/0/0]}\n"
                      "variants: [default-dr, scaffolded-dr]\nseeds: [0]\nresults: out\n")
    assert main(["plan-analysis", str(config), "--metrics", "performance,hms", "--alpha", "0.01",
                 "--power-reps", "20"]) == 0
    written = list((tmp_path / "out").glob("*/analysis_plan.json"))
    assert len(written) == 1
    folder = written[0].parent
    document = json.loads(written[0].read_text())
    plan = read_plan(folder)
    assert plan.variants == ("default-dr", "scaffolded-dr") and plan.alpha == 0.01
    assert document["version"] == 1 and document["sessions_at_writing"] == 0 and document["written_at"]
    assert "before the first session" in plan.status
    out = capsys.readouterr().out
    assert document["plan_hash"] == plan.plan_hash and plan.plan_hash in out and "P(declared)" in out
    # before any session the plan may still change; once one exists it is locked
    assert main(["plan-analysis", str(config), "--power-reps", "0"]) == 0
    (folder / "0123456789abcdef").mkdir()
    (folder / "0123456789abcdef" / "session.json").write_text("{}")
    before = written[0].read_text()
    assert main(["plan-analysis", str(config), "--alpha", "0.05", "--power-reps", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "locked" in err and "1 session" in err and len(err.splitlines()) == 1
    assert written[0].read_text() == before  # untouched
    assert main(["plan-analysis", str(config), "--alpha", "0.02", "--power-reps", "0",
                 "--amend", "alpha tightened after the pilot"]) == 0
    amended = read_plan(folder)
    assert (folder / "analysis_plan.v2.json").is_file() and written[0].is_file()  # both kept
    assert amended.alpha == 0.02 and "plan v2" in amended.status and "after 1 session" in amended.status
    assert "alpha tightened" in amended.status
    document = json.loads(written[0].read_text())
    document["plan"]["alpha"] = 0.5  # edited after the fact
    written[0].write_text(json.dumps(document))
    with pytest.raises(ColabkitError, match="edited after it was written"):
        read_plan(written[0])
    assert main(["plan-analysis", str(tmp_path / "missing.yaml")]) == 2


def test_hypotheses_written_by_a_researcher_in_yaml(tmp_path):
    from colabkit.cli import main

    config = tmp_path / "exp.yaml"
    config.write_text("name: own\ntasks: {data_root: null, ids: [demo_archaeology/0/0]}\n"
                      "variants: [default-dr, scaffolded-dr, memory-dr]\nseeds: [0, 1]\nresults: out\n")
    own = tmp_path / "hypotheses.yaml"
    own.write_text("- {name: A, a: scaffolded-dr, b: default-dr, metric: performance, direction: greater,"
                   " family: mine, weight: 0.5, then: {B: 1}}\n"
                   "- {name: B, a: memory-dr, b: default-dr, metric: hms, direction: two-sided, family: mine,"
                   " weight: 0.5}\n")
    assert main(["plan-analysis", str(config), "--hypotheses", str(own), "--power-reps", "0"]) == 0
    plan = read_plan(next((tmp_path / "out").glob("*/analysis_plan.json")).parent)
    assert [h.name for h in plan.hypotheses] == ["A", "B"] and plan.hypotheses[0].then == {"B": 1.0}
    assert plan.planned_seeds == 2
    own.write_text("- {name: A, a: scaffolded-dr, b: default-dr, weight: 0.8}\n"
                   "- {name: B, a: memory-dr, b: default-dr, weight: 0.8}\n")
    with pytest.raises(ColabkitError, match="initial weights sum"):
        analysis_plan(("default-dr", "scaffolded-dr", "memory-dr"),
                      hypotheses=[{"name": "A", "a": "scaffolded-dr", "b": "default-dr", "weight": 0.8},
                                  {"name": "B", "a": "memory-dr", "b": "default-dr", "weight": 0.8}])


def test_with_one_composition_the_pooled_claim_and_that_compositions_are_one_hypothesis():
    dr_only = ("single", "default-dr", "scaffolded-dr", "memory-dr", "preassigned-dr")
    plan = analysis_plan(dr_only, metrics=METRICS)
    names = [h.name for h in plan.hypotheses]
    assert "H2.pooled" not in names and names.count("H2.dr") == 1
    merged = plan.hypotheses[names.index("H2.dr")]
    # the pooled claim's place in the graph: its weight, its edges, and the edges that led to it
    assert merged.weight == 0.95 and merged.then["H3.synergy"] > 0.3
    # "Default-DR is the worst" is below Single, Default-D AND Default-R: untestable without D and R,
    # it is not planned at all (an intersection is tested whole), never declared from Single alone
    assert "H1.dr" not in names and all("H1.dr" not in h.then for h in plan.hypotheses)
    assert all("H2.pooled" not in h.then for h in plan.hypotheses)
    assert plan.hypotheses[names.index("H3.memory")].then["H2.dr"] > 0.5  # with H1.dr's share, passed on
    table = hypothesis_table(score_table(), plan)
    tested = table[["a", "b", "metric", "direction"]].astype(str).agg(" ".join, axis=1)
    assert tested.is_unique and (tested == "scaffolded-dr default-dr performance greater").sum() == 1
    every = analysis_plan(metrics=METRICS)  # all compositions: pooled and DR differ, both kept
    assert {"H2.pooled", "H2.dr"} <= {h.name for h in every.hypotheses}
    with pytest.raises(ColabkitError, match="H2.dr and A test the same pairs"):
        analysis_plan(dr_only, hypotheses=[*plan.hypotheses, {"name": "A", "a": "scaffolded", "b": "default"}])


def test_a_decision_is_the_same_whether_one_pair_or_all_are_asked():
    scores = score_table()
    plan = analysis_plan(metrics=METRICS)
    columns = ["p_adjusted", "declared", "decision", "local_alpha"]
    every = contrasts(scores, DECOMPOSITION, plan=plan, mixed_families=()).set_index(KEY)[columns]
    for pair in DECOMPOSITION:
        for metric in METRICS:
            alone = contrasts(scores, [pair], metrics=[metric], plan=plan, mixed_families=()).set_index(KEY)[columns]
            assert len(alone) and alone.equals(every.loc[alone.index]), (pair, metric)


def test_unplanned_claims_leave_the_graph_as_a_rejected_one_does_so_no_planned_claim_is_cut_off():
    from colabkit.analysis.inference.planning.hypotheses import default_hypotheses

    # a claim reached only through unplanned ones keeps their share (Process loss alone: all of alpha)
    # an intersection is tested whole or not at all: "Default-DR is the worst" needs Default-D and
    # Default-R, "no gain" every composition; DR alone tests neither
    assert default_hypotheses(("single", "default-dr")) == ()
    assert [(h.name, h.weight) for h in default_hypotheses(("default-dr", "preassigned-dr"))] == [
        ("H3.preassigned", 1.0)]
    demo = {h.name: h for h in default_hypotheses(("single", "default-dr", "scaffolded-dr", "preassigned-dr"))}
    assert "H1.dr" not in demo and "H3.synergy" not in demo and demo["H2.dr"].weight > 0.99  # the rest passed on
    dynamic = ("default-d", "default-r", "default-dr", "scaffolded-d", "scaffolded-r", "scaffolded-dr",
               "dynamic-d", "dynamic-r", "dynamic-dr")
    for variants in (dynamic, ("single", "default-dr", "scaffolded-dr", "preassigned-dr"), ALL_VARIANTS):
        graph = default_hypotheses(variants)
        assert sum(h.weight for h in graph) == pytest.approx(1.0)
        reached = {h.name for h in graph if h.weight > 0} | {k for h in graph for k in h.then}
        assert reached == {h.name for h in graph}, variants
        assert all(sum(h.then.values()) <= 1 + 1e-9 for h in graph)


def test_the_plan_lock_is_bound_to_the_sessions_and_every_bypass_is_refused_naming_the_locked_plan(tmp_path, capsys):
    from colabkit.cli import main
    from colabkit.store.records import record_plan_at_start

    config = tmp_path / "exp.yaml"
    config.write_text("name: tiny\ntasks: {data_root: null, ids: [demo_archaeology/0/0]}\n"
                      "variants: [default-dr, scaffolded-dr]\nseeds: [0]\nresults: out\n")
    assert main(["plan-analysis", str(config), "--power-reps", "0"]) == 0
    path = next((tmp_path / "out").glob("*/analysis_plan.json"))
    folder, locked = path.parent, read_plan(path.parent).plan_hash
    assert record_plan_at_start(folder, "0123456789abcdef") == locked  # a session STARTED (none finished)
    assert "before the first session" in read_plan(folder).status and "predates the data" in read_plan(folder).status
    capsys.readouterr()

    def refused(argv: list[str]) -> str:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and locked in err, err
        return err

    original = path.read_text()
    refused(["plan-analysis", str(config), "--alpha", "0.01", "--power-reps", "0"])  # a plain rewrite
    refused(["plan-analysis", str(config), "--alpha", "0.01", "--power-reps", "0", "--out", str(path)])  # --out
    assert path.read_text() == original
    path.unlink()  # deleting the plan does not release it
    refused(["plan-analysis", str(config), "--alpha", "0.01", "--power-reps", "0"])
    with pytest.raises(ColabkitError, match=f"{locked} is locked.*no plan file"):
        plan_for(folder)
    path.write_text(original)
    # a hand edit with the hash recomputed and the session count set to 0 fails against the sessions' record
    document = json.loads(original)
    document["plan"]["alpha"] = 0.5
    edited = AnalysisPlan.model_validate(document["plan"])
    path.write_text(json.dumps(document | {"plan_hash": edited.plan_hash, "sessions_at_writing": 0}))
    with pytest.raises(ColabkitError, match=f"{locked} is locked.*not it nor an amendment"):
        read_plan(folder)
    path.write_text(original)
    # an amendment, kept beside the original with its reason and time, is the plan in force
    assert main(["plan-analysis", str(config), "--alpha", "0.02", "--power-reps", "0", "--amend", "pilot"]) == 0
    amended = read_plan(folder)
    assert amended.alpha == 0.02 and f"amends {locked}: pilot" in amended.status
    assert "does not predate the data" in amended.status
    path.unlink()  # the original gone: the amendment no longer stands
    with pytest.raises(ColabkitError, match="version 1 is missing"):
        read_plan(folder)
