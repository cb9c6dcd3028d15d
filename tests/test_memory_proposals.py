"""Memory proposals independent or sequential (issue 44): a setting, stated in the build's rules,
recorded in the session's identity when it is not the default, and what each proposer sees."""

from __future__ import annotations

from colabkit.runner.build import build_spec
from colabkit.runner.prompt_lint import lint, render_all
from colabkit.session.settings import SessionSettings
from colabkit.tasks import load_tasks

TASK = load_tasks().tasks[0]


def _proposals(settings: SessionSettings) -> list[str]:
    """The user text of every propose call of a Scaffolded DR build, in the order they were asked."""
    prompts = render_all(build_spec(TASK.id, "scaffolded-dr", 0, settings=settings), TASK)
    assert lint(prompts) == []
    return [p.user for p in prompts if p.kind == "propose"]


def test_sequential_proposers_see_the_earlier_proposals_and_independent_ones_none():
    sequential = _proposals(SessionSettings())
    assert ["# Proposals so far" in text for text in sequential] == [False, True, True]
    assert all("(each seeing the proposals made before it)" in text for text in sequential)
    independent = _proposals(SessionSettings(memory_proposals="independent"))
    assert not any("# Proposals so far" in text for text in independent) and len(independent) == 3
    assert all("(nobody sees another's proposal)" in text for text in independent)


def test_the_setting_is_in_the_identity_unless_it_is_the_default():
    default, explicit = SessionSettings(), SessionSettings(memory_proposals="sequential")
    independent = SessionSettings(memory_proposals="independent")
    assert default.identity() == explicit.identity() != independent.identity()
    assert "memory_proposals" not in default.model_dump(mode="json")  # sessions stored before it keep their ids
    assert SessionSettings.model_validate(independent.model_dump(mode="json")) == independent
    spec = build_spec(TASK.id, "memory-dr", 0, settings=independent)
    assert spec.session_id != build_spec(TASK.id, "memory-dr", 0).session_id
