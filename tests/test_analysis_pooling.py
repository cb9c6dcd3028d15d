"""Pooling through the scoring runner into the score table, the per-variant table and the figure.

Two scripted sessions of one task: a Memory-DR session (the quirk said in chat, the holiday point
in the frozen memory) and a Default-DR session (the quirk in chat in round 3, the holiday point
first in the result editor, the same round). The runner scores both
with the two pooling scorers and stores them like every other metric; the analysis layer must
then read the truth back per variant and per item.
"""

from pathlib import Path

import pytest

from colabkit.analysis.pooling import pooling_figure, pooling_items, pooling_table
from colabkit.analysis.why_missing import why_missing
from colabkit.evaluation import load_scores, score_results, stored_scores
from colabkit.evaluation.judge import judge_config
from colabkit.evaluation.records import SCORE_SCHEMA_VERSION
from colabkit.store import SessionRecord, atomic_write_text
from tests.helpers.judges import perfect_answer, use_judge_double
from tests.helpers.stored import store_session
from tests.helpers.trajectories import Trajectory
from tests.test_eval_metrics_pooling import BRIEFINGS, CHAT, HYPOTHESIS, IN_CHAT, IN_MEMORY, NEVER, session, truthful

TASK = "demo_archaeology/0/0"


def stored(results: Path, variant_name: str, traj: Trajectory) -> Path:
    """Write `traj` as a finished session of `variant_name` (record with the briefings, events, snapshot)."""
    folder = store_session(results, TASK, traj.hypothesis, variant_name=variant_name)
    record = SessionRecord.model_validate_json((folder / "session.json").read_text())
    events = [e.model_copy(update={"session_id": record.session_id}) for e in traj.events]
    atomic_write_text(folder / "events.jsonl", "".join(e.model_dump_json() + "\n" for e in events))
    atomic_write_text(folder / "snapshot.json", traj.snapshot().model_dump_json())
    atomic_write_text(folder / "session.json", record.model_copy(
        update={"briefings": BRIEFINGS, "n_events": len(events)}).model_dump_json())
    return folder


def chat_only() -> Trajectory:
    t = Trajectory(("ai", "D", "R"))
    t.start()
    t.next_round()
    t.next_round()
    t.say("D", CHAT)  # round 3
    t.edit("ai", HYPOTHESIS)
    t.end()
    return t


@pytest.fixture
def results(tmp_path):
    stored(tmp_path, "memory-dr", session())
    stored(tmp_path, "default-dr", chat_only())
    use_judge_double({}, fallback=lambda prompt_id, payload: truthful(payload) if prompt_id == "pooling_conveys"
                     else perfect_answer(prompt_id, payload))
    score_results(tmp_path, metrics=["pooling", "pooling_lexical"], judge=judge_config("judgedouble/scripted"))
    return tmp_path


def test_the_runner_stores_pooling_like_every_metric_and_the_tables_read_it(results):
    scores = load_scores(results).set_index("variant")
    assert scores.loc["memory-dr", "pooling"] == pytest.approx(2 / 7)
    assert scores.loc["default-dr", "pooling"] == pytest.approx(2 / 7)
    assert scores.loc["default-dr", ["pooling_lex_first_chat", "pooling_lex_first_editor"]].tolist() == [1, 1]
    assert scores.loc["default-dr", "pooling_delay"] == 3
    files = [s for folder in results.iterdir() if folder.is_dir() for s in stored_scores(folder)]
    assert {s.scorer for s in files} == {"pooling", "pooling_lexical"}
    assert {s.schema_version for s in files} == {SCORE_SCHEMA_VERSION}


def test_the_item_table_joins_the_same_item_across_sessions(results):
    items = pooling_items(results, "judge")
    assert len(items) == 14 and set(items["decider"]) == {"judge"}
    wide = items.pivot(index="item_id", columns="variant", values="channel")
    assert wide.loc[IN_CHAT].tolist() == ["chat", "chat"]
    assert wide.loc[IN_MEMORY].tolist() == ["editor", "memory"]  # columns: default-dr, memory-dr
    assert items.loc[items["item_id"] == NEVER, "pooled"].tolist() == [False, False]
    assert len(pooling_items(results)) == 28  # both deciders


@pytest.mark.parametrize("decider, prefix", [("judge", "pooling"), ("lexical", "pooling_lex")])
def test_the_variant_table_and_figure_show_rate_channels_and_delay(results, decider, prefix):
    scores = load_scores(results)
    table = pooling_table(scores, decider).set_index("variant")
    assert table.loc["memory-dr", "pooling"] == pytest.approx(2 / 7)
    assert (table.loc["memory-dr", "share_chat"], table.loc["memory-dr", "share_memory"]) == (0.5, 0.5)
    assert table.loc["default-dr", ["share_chat", "share_editor", "share_memory"]].tolist() == [0.5, 0.5, 0.0]
    assert table.loc["default-dr", "delay_rounds"] == 3 and table.loc["memory-dr", "delay_rounds"] == 0.5
    assert ("judge_grade" in table.columns) is (decider == "judge")
    fig = pooling_figure(scores, decider)
    ax = fig.axes[0]
    heights: dict[str, float] = {}
    for patch, label in zip(ax.patches, [t.get_text() for t in ax.get_xticklabels()] * 5):
        heights[label] = heights.get(label, 0.0) + patch.get_height()
    assert heights == pytest.approx({"default-dr": 2 / 7, "memory-dr": 2 / 7})  # bar height = pooling rate
    assert "docs/pooling.md" in fig.texts[-1].get_text()


def test_an_empty_variant_says_why_in_the_figure(results):
    scores = load_scores(results)
    failed = scores.assign(**{c: None for c in scores.columns if c.startswith("pooling_first")},
                           flags=["pooling: pooling:judge_missing(7)"] * len(scores))
    reason = why_missing(failed[failed["variant"] == "memory-dr"], "pooling_first_chat")
    assert reason.startswith("flags: pooling:judge_missing")
    fig = pooling_figure(failed, "judge")
    assert any(reason in t.get_text() for t in fig.axes[0].texts)
