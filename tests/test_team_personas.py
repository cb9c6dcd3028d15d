"""Personas: fixed, versioned, short prompts read from the package's text files."""

from importlib import resources

import pytest
from pydantic import ValidationError

from colabkit.errors import ColabkitError
from colabkit.team import PERSONA_IDS, persona
from colabkit.team.personas import parse_prompt_file, persona_frame

FILES = {"ai": "ai.md", "D": "data_analyst.md", "R": "researcher.md"}


def test_the_three_personas_and_their_roles():
    assert PERSONA_IDS == ("ai", "D", "R")
    assert [persona(p).role for p in PERSONA_IDS] == ["ai", "human", "human"]
    assert persona("D").name == "Data Analyst" and persona("R").name == "Researcher"


@pytest.mark.parametrize("pid", PERSONA_IDS)
def test_prompt_is_versioned_short_and_matches_its_file(pid):
    p = persona(pid)
    text = resources.files("colabkit.team").joinpath("prompts", FILES[pid]).read_text(encoding="utf-8")
    assert text.splitlines()[0] == f"version: {p.version}"
    assert p.prompt == text.partition("\n")[2].strip()
    assert len(p.prompt) < 900


def test_prompts_differ_in_role_and_in_private_knowledge():
    assert persona("ai").knows == () and persona("D").knows == ("datasets",)
    assert persona("R").knows == ("domain_knowledge",)
    assert len({persona(p).prompt for p in PERSONA_IDS}) == 3


def test_ai_prompt_asks_for_a_result_in_the_editor_and_a_finish():
    prompt = persona("ai").prompt
    for phrase in ("edit_result", "context", "variables", "relation", "finish"):
        assert phrase in prompt


@pytest.mark.parametrize("pid", ["D", "R"])
def test_simulated_humans_are_colleagues_not_assistants(pid):
    prompt = persona(pid).prompt
    assert "not an assistant" in prompt
    assert "one piece at a time" in prompt and "Never invent" in prompt and "wait" in prompt


def test_unknown_persona_names_the_valid_ones():
    with pytest.raises(ColabkitError, match="'X'.*ai, D, R"):
        persona("X")


def test_prompt_file_needs_a_version_line():
    assert parse_prompt_file("version: 7\nHello", "f.md") == ("7", "Hello")
    with pytest.raises(ColabkitError, match="f.md"):
        parse_prompt_file("Hello\nworld", "f.md")
    with pytest.raises(ColabkitError, match="empty"):
        parse_prompt_file("version: 7\n\n", "f.md")


def test_persona_is_frozen():
    with pytest.raises(ValidationError):
        persona("R").prompt = "be nice"


EXPERTISE_WORDS = ("Data Analyst", "Researcher", "domain", "column", "quirk", "definition", "files, columns")


def test_the_default_ai_prompt_names_no_teammates_expertise():
    prompt = persona("ai").prompt
    assert not [w for w in EXPERTISE_WORDS if w.lower() in prompt.lower()]
    assert "lead" not in prompt.lower()  # no role ranking either: that is for the memory to settle
    assert persona("ai").version == "ai-2"


@pytest.mark.parametrize(("pid", "own", "other", "version"),
                         [("D", "the data", "domain", "D-3"), ("R", "the domain", "column", "R-4")])
def test_a_human_prompt_states_its_own_knowledge_only_and_nobody_leads(pid, own, other, version):
    prompt = persona(pid).prompt
    assert f"You know {own}" in prompt and other not in prompt.lower()
    assert "leads" not in prompt and "AI agent" not in prompt
    assert persona(pid).version == version  # R-4: its knowledge line lost R-3's "a sound answer must respect"
    assert "must" not in prompt.splitlines()[1] + prompt.splitlines()[2]


def test_human_personas_share_one_frame_and_differ_only_in_role_and_knowledge():
    d, r = persona("D"), persona("R")
    assert persona_frame(d) == persona_frame(r) and len(persona_frame(d)) >= 5
    changed = [(a, b) for a, b in zip(d.prompt.splitlines(), r.prompt.splitlines()) if a != b]
    assert [a.split()[:2] for a, _ in changed] == [["You", "are"], ["You", "know"]]
    assert len(d.prompt.splitlines()) == len(r.prompt.splitlines())
    # what the issue found in one persona only: an evidence standard, a working-style rule
    for p in (d, r):
        assert "evidence" not in p.prompt and "Do not debug other people's code" in p.prompt
