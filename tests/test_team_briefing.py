"""Hidden-profile briefings: who privately knows what, compactness, and no gold anywhere."""

from pathlib import Path

import pytest
from helpers.discoverybench import discoverybench_root

from colabkit.tasks import Column, DatasetInfo, Task, load_tasks
from colabkit.team import DEFAULT_MAX_CHARS, Persona, private_briefing
from colabkit.team.briefing import SHORTENED_NOTE

KNOWLEDGE = "1. Symbolic capital consists of daggers and house size. 2. Bins are 100 years wide."
COLUMN_DESCRIPTIONS = ("Before Common Era year", "Z values for Axes and Celts", "Interpolated Axes and Celts")


@pytest.fixture
def task(tmp_path):
    csv = tmp_path / "capital.csv"
    csv.write_text(',BCE,group,ZBeil,ZBeil_inter\n0,4300,EN,"-0,44",\n1,4200,EN,"1,5","1,5"\n', encoding="utf-8")
    columns = (
        Column(name="Unnamed", description="Index"),
        Column(name="BCE", description=COLUMN_DESCRIPTIONS[0]),
        Column(name="group", description="Dropped after data loading"),
        Column(name="ZBeil", description=COLUMN_DESCRIPTIONS[1]),
        Column(name="ZBeil_inter", description=COLUMN_DESCRIPTIONS[2]),
    )
    return Task(
        id="arch/0/0", split="real/test", domain="humanities", query="When did axes peak?",
        question_type="context", domain_knowledge=KNOWLEDGE, workflow_tags=(), task_digest="0" * 64,
        datasets=(DatasetInfo(name="capital.csv", path=csv, description="Capital data.", columns=columns),),
    )


def test_everyone_gets_the_query_and_the_file_names(task):
    for pid in ("ai", "D", "R"):
        text = private_briefing(pid, task)
        assert "When did axes peak?" in text and "data/capital.csv" in text


def test_ai_gets_neither_domain_knowledge_nor_data_notes(task):
    text = private_briefing("ai", task)
    assert text == "Query: When did axes peak?\nFiles: data/capital.csv"


def test_researcher_holds_domain_knowledge_only(task):
    text = private_briefing("R", task)
    assert KNOWLEDGE in text
    assert not any(d in text for d in COLUMN_DESCRIPTIONS) and "decimal" not in text


def test_data_analyst_holds_descriptions_and_quirks_only(task):
    text = private_briefing("D", task)
    assert "Symbolic capital" not in text and "100 years" not in text
    assert "Capital data." in text and "ZBeil(_inter): Z values for Axes and Celts" in text
    assert "BCE: Before Common Era year" in text
    assert 'decimal commas in quoted numbers ("1,5")' in text
    assert "unnamed first column" in text and "some cells are empty" in text
    assert "group: documented as dropped" in text and "X_inter" in text


def test_quirks_from_metadata_when_the_file_is_missing(task):
    ds = task.datasets[0].model_copy(update={"path": Path("/nonexistent/capital.csv")})
    text = private_briefing("D", task.model_copy(update={"datasets": (ds,)}))
    assert "unnamed first column" in text and "decimal" not in text


def test_custom_persona_can_hold_both_slices(task):
    both = Persona(id="E", name="Expert", role="human", version="1", prompt="p", knows=("domain_knowledge", "datasets"))
    text = private_briefing(both, task)
    assert KNOWLEDGE in text and COLUMN_DESCRIPTIONS[1] in text


def test_long_briefings_are_shortened_and_say_so(task):
    long_knowledge = " ".join(f"{i}. " + "word " * 80 + "end." for i in range(1, 8))
    survey = "as recorded in the field survey of the site"
    columns = tuple(Column(name=f"col{i}", description=f"quantity {i} {survey}") for i in range(60))
    ds = task.datasets[0].model_copy(update={"columns": columns})
    big = task.model_copy(update={"domain_knowledge": long_knowledge, "datasets": (ds,)})
    for pid in ("D", "R"):
        text = private_briefing(pid, big, max_chars=900)
        assert len(text) <= 900 and text.endswith(SHORTENED_NOTE)
        assert "When did axes peak?" in text
        assert len(private_briefing(pid, big, max_chars=None)) > 2000
    r_text = private_briefing("R", big, max_chars=900)
    assert all(f"{i}. word" in r_text for i in range(1, 8))  # every point survives, shortened
    assert "+" in private_briefing("D", big, max_chars=900).split("Columns")[-1]  # says columns were left out


def test_short_briefings_are_not_marked_shortened(task):
    assert SHORTENED_NOTE not in private_briefing("R", task)


def _real_suite():
    return load_tasks(discoverybench_root())


def test_real_tasks_split_and_no_gold():
    suite = _real_suite()
    assert len(suite.tasks) >= 38
    for task in suite.tasks:
        gold = suite.gold_for(task.id)
        assert gold is not None
        texts = {pid: private_briefing(pid, task) for pid in ("ai", "D", "R")}
        for pid, text in texts.items():
            assert gold.hypothesis.strip().lower() not in text.lower(), (task.id, pid)
            assert len(text) <= DEFAULT_MAX_CHARS
        first_point = task.domain_knowledge.split(".")[1].strip()[:30]  # "Symbolic capital consists of ..."
        assert first_point in texts["R"] and first_point not in texts["D"] and first_point not in texts["ai"]
        descriptions = [c.description for ds in task.datasets for c in ds.columns if len(c.description) > 25]
        assert not any(d in texts["R"] or d in texts["ai"] for d in descriptions if d not in task.domain_knowledge)
        assert "Z values for" in texts["D"] and "decimal" in texts["D"]
