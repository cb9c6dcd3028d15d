"""The observation profile: derived from the models' context window, one per run, recorded in
the spec; the full profile cuts nothing of the real archaeology briefings."""

from __future__ import annotations

import asyncio
import json

import pytest
from helpers.env import shared_data
from helpers.scripted import use_scripted

from colabkit.llm import Gateway, ModelConfig
from colabkit.llm.schema import bounded_schema, token_bound
from colabkit.session import ListSink, SessionSettings, SessionSpec, run_session
from colabkit.session.prompting.profile import FULL_MIN_TOKENS, context_window, full_profile, resolve_profile
from colabkit.session.seats.react import step_schema
from colabkit.tasks import load_tasks
from colabkit.team import VARIANT_NAMES, memory_schema, private_briefing, variant
from colabkit.team.briefing import SHORTENED_NOTE

EMBEDDED = ModelConfig()
API_MODELS = ("deepseek/deepseek-chat", "openai/gpt-4o")


def spec(models: dict[str, ModelConfig], name: str = "default-dr", **settings) -> SessionSpec:
    return SessionSpec(task_id="t/0/0", variant=variant(name), seed=0, models=models,
                       settings=SessionSettings(**settings))


def test_the_embedded_model_gets_the_compact_profile(socket_guard):
    profile = spec({}).profile
    assert profile.name == "compact" and profile.context_window == context_window(EMBEDDED)[0] < FULL_MIN_TOKENS
    assert "n_ctx" in profile.source
    assert (profile.briefing_chars, profile.cells, profile.code_chars, profile.content_chars) == (1600, 2, 250, 500)
    assert not socket_guard  # litellm's model info was read offline


@pytest.mark.parametrize("model", API_MODELS)
def test_an_api_model_gets_the_full_profile_from_litellms_model_info(model, socket_guard):
    profile = spec({"default": ModelConfig(model=model)}).profile
    assert profile.name == "full" and profile.context_window >= 128_000 and model in profile.source
    assert profile.briefing_chars is None and profile.memory_chars is None and profile.cells is None
    assert profile.code_chars >= 5000 and profile.notebook_chars > 100_000
    schema = step_schema(profile.thought_chars, profile.content_chars).model_json_schema()
    assert schema["properties"]["content"]["maxLength"] >= 5000  # code cells of several thousand chars
    assert not socket_guard


@pytest.mark.parametrize("max_output", [None, 16_384, 8192, 4096])
def test_full_answers_fit_the_smallest_output_limit(max_output):
    profile = full_profile(131_072, "test", max_output)
    step = token_bound(bounded_schema(step_schema(profile.thought_chars, profile.content_chars)))
    memory = token_bound(bounded_schema(memory_schema(True, profile.slot_chars)))
    if max_output is not None:
        assert step <= max_output and memory <= max_output
    if max_output is None or max_output >= 8192:
        assert (profile.content_chars, profile.slot_chars) == (6000, 1200)  # DeepSeek V3 and GPT-4o: no cap


def test_an_unknown_window_is_compact_and_an_override_decides():
    unknown = spec({"default": ModelConfig(model="openai/my-local-alias", api_base="http://127.0.0.1:1")}).profile
    assert unknown.name == "compact" and unknown.context_window is None and "unknown" in unknown.source
    overridden = spec({"default": ModelConfig(model="scripted/x")}, context_window=65_536).profile
    assert overridden.name == "full" and overridden.source == "settings.context_window"
    assert spec({"default": ModelConfig(model="deepseek/deepseek-chat")}, context_window=8192).profile.name == "compact"


def test_one_profile_for_every_variant_of_a_run_from_the_smallest_window():
    deepseek = ModelConfig(model="deepseek/deepseek-chat")
    mixed = {"ai": deepseek, "D": deepseek}  # R falls back to the embedded model
    profiles = {spec(mixed, name).profile for name in VARIANT_NAMES}
    assert len(profiles) == 1 and next(iter(profiles)).name == "compact"  # the single agent sees no more
    assert resolve_profile([deepseek, ModelConfig(model="openai/gpt-4o")]).context_window == 128_000


def test_the_profile_is_recorded_and_part_of_the_identity():
    compact = spec({})
    full = spec({}, context_window=131_072)
    assert compact.identity() != full.identity()
    again = SessionSpec.model_validate_json(full.model_dump_json())
    assert again.profile == full.profile and again.identity() == full.identity()
    stored = json.loads(full.model_dump_json())
    assert stored["profile"]["name"] == "full"


# --- the real archaeology task 0 ----------------------------------------------------------------


@pytest.fixture(scope="module")
def archaeology_task():
    return load_tasks(shared_data()).get("archaeology/0/0")


def _column_named(name: str, text: str) -> bool:
    """A column is named as itself or as the `X(_inter)` pair, or is the saved index quirk."""
    base = name.removesuffix("_inter")
    return name in text or f"{base}(_inter)" in text or (name.lower().startswith("unnamed") and "row index" in text)


def test_the_real_archaeology_briefings_are_whole_under_the_full_profile(archaeology_task):
    task = archaeology_task
    full = spec({"default": ModelConfig(model="deepseek/deepseek-chat")}).profile
    r_text = private_briefing("R", task, max_chars=full.briefing_chars)
    d_text = private_briefing("D", task, max_chars=full.briefing_chars)
    assert task.domain_knowledge.strip() in r_text and "'Belau_PC1'" in r_text and SHORTENED_NOTE not in r_text
    columns = [c.name for ds in task.datasets for c in ds.columns]
    assert len(columns) == 64 and all(_column_named(c, d_text) for c in columns)
    for ds in task.datasets:
        assert " ".join(ds.description.split()) in d_text
    # the compact profile is what cut them before (the contrast the full profile removes)
    compact = private_briefing("R", task, max_chars=spec({}).profile.briefing_chars)
    assert len(compact) <= 1600 and task.domain_knowledge.strip() not in compact


def test_a_session_under_the_full_profile_shows_each_human_its_whole_briefing(archaeology_task, tmp_path):
    task = archaeology_task
    model = use_scripted({}, default={"thought": "nothing yet", "action": "wait"})
    run_spec = SessionSpec(task_id=task.id, variant=variant("default-dr"), seed=0,
                           models={pid: ModelConfig(model=f"scripted/{pid}") for pid in ("ai", "D", "R")},
                           settings=SessionSettings(context_window=131_072, action_budget=2))
    assert run_spec.profile.name == "full"
    result = asyncio.run(run_session(run_spec, task, gateway=Gateway(), sink=ListSink(), workdir_root=tmp_path))
    assert result.ended_by == "budget"
    first = {call["name"]: call["messages"][-1]["content"] for call in reversed(model.calls)}
    assert task.domain_knowledge.strip() in first["R"]
    assert all(_column_named(c.name, first["D"]) for ds in task.datasets for c in ds.columns)
    assert task.domain_knowledge.strip() not in first["ai"] and task.domain_knowledge.strip() not in first["D"]
