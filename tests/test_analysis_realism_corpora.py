"""The public corpora's importers on shipped samples: people and simulated users as fingerprints."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from colabkit.analysis.realism import corpus_fingerprints, recllmsim_tables, simulatorarena_tables
from colabkit.analysis.realism.recllmsim import RECLLMSIM, recllmsim_conversations
from colabkit.errors import ColabkitError

CORPORA = Path(__file__).resolve().parent / "fixtures" / "corpora"


def test_recllmsim_people_and_simulated_users_read_as_one_seat_with_attribution():
    events, sessions = recllmsim_tables(CORPORA / "RecLLMSim")
    assert len(sessions) == 6 and set(sessions["licence"]) == {"Apache-2.0"}
    assert set(sessions["source"]) == {RECLLMSIM.repository}
    prints = corpus_fingerprints(events, sessions).set_index("session_id")
    assert sorted(prints["kind"].value_counts().items()) == [("person", 3), ("simulated", 3)]
    assert set(prints.loc[prints["kind"] == "simulated", "simulator"]) == {"recllmsim/llm-agent-user"}
    assert set(prints["task_id"]) == {"recllmsim:travel planning", "recllmsim:preparing gifts",
                                      "recllmsim:skills learning planning"}
    person = prints.loc["recllmsim:real_human_user/User_0/旅行规划/16.json"]
    raw = json.loads((CORPORA / "RecLLMSim/real_human_user/User_0/旅行规划/16.json").read_text(encoding="utf-8"))
    said = [t["content"] for t in raw["history"] if t["role"] == "user"]
    assert person["user_id"] == "real_human_user/User_0" and person["n_steps"] == len(said)
    assert person["msg_chars_mean"] == pytest.approx(sum(len("".join(t.split())) for t in said) / len(said))
    questions = sum("？" in t or "?" in t for t in said)
    assert questions and person["question_share"] == pytest.approx(questions / len(said))  # Chinese question marks
    assert person["msg_words_mean"] > 10  # one word per Chinese character, not zero
    assert 0 < person["char_diversity"] < 1 and 0 < person["opening_share"] < 1
    sim = prints[prints["kind"] == "simulated"].iloc[0]
    assert sim["user_id"].startswith("LLM_agent_user/profile_") and sim["language"] == "zh"


def test_recllmsim_people_sit_in_each_seat():
    from colabkit.analysis.realism import recllmsim_people

    people = recllmsim_people(CORPORA / "RecLLMSim")
    assert sorted(people["participant"].value_counts().items()) == [("D", 3), ("R", 3)]
    assert set(people["kind"]) == {"person"}


def test_recllmsim_in_english_reads_the_simulated_originals_only():
    (conv, *_), people = recllmsim_conversations(CORPORA / "RecLLMSim", ["LLM_agent_user"], "en"), \
        recllmsim_conversations(CORPORA / "RecLLMSim", ["real_human_user"], "en")
    assert conv.turns[0].text.startswith("Hello") and people == []


def test_simulatorarena_people_in_english():
    events, sessions = simulatorarena_tables(CORPORA / "SimulatorArena")
    prints = corpus_fingerprints(events, sessions)
    assert len(prints) == 4 and set(prints["kind"]) == {"person"} and set(sessions["licence"]) == {"MIT"}
    raw = json.loads((CORPORA / "SimulatorArena/data/document_creation_annotations_for_benchmarking.json")
                     .read_text(encoding="utf-8"))[0]
    first = prints.set_index("session_id").loc["simulatorarena:document_creation/0"]
    assert first["n_steps"] == len(raw["user_queries"]) and first["task_id"] == "simulatorarena:document_creation:email"
    assert first["reply_share"] == pytest.approx((len(raw["user_queries"]) - 1) / len(raw["user_queries"]))
    assert math.isnan(first["disclosure_share"])  # no private briefing in a chat corpus: missing, not 0


def test_a_missing_or_broken_corpus_file_is_one_line_naming_it(tmp_path):
    with pytest.raises(ColabkitError, match=r"nowhere/real_human_user: no such folder"):
        recllmsim_tables(tmp_path / "nowhere")
    copy = tmp_path / "RecLLMSim"
    shutil.copytree(CORPORA / "RecLLMSim", copy)
    bad = copy / "LLM_agent_user" / "travel planning" / "0.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ColabkitError, match=r"travel planning/0.json: not a RecLLMSim file \(not JSON") as err:
        recllmsim_tables(copy)
    assert "\n" not in str(err.value)
    bad.write_text(json.dumps({"preference_id": 1, "history": [{"role": "user"}]}), encoding="utf-8")
    with pytest.raises(ColabkitError, match=r"0.json: not a RecLLMSim conversation \(needs a history"):
        recllmsim_tables(copy)
    arena = tmp_path / "arena"
    with pytest.raises(ColabkitError, match=r"document_creation_annotations_for_benchmarking.json: no such"):
        simulatorarena_tables(arena)
    (arena / "data").mkdir(parents=True)
    (arena / "data/document_creation_annotations_for_benchmarking.json").write_text('[{"user_queries": 3}]')
    with pytest.raises(ColabkitError, match=r"benchmarking.json: entry 0 is not a SimulatorArena conversation"):
        simulatorarena_tables(arena, ("document_creation",))
