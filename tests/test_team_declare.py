"""Your own study in the experiment file: inline variants, file personas, preassigned gate tables.

A declared variant must run like a shipped one (its sessions record the persona's content
hash as its version), a team of three humans must run, and every bad declaration must be
one line naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers.scripted import use_scripted

from colabkit.cli import main
from colabkit.errors import ColabkitError
from colabkit.runner import load_experiment, run_experiment
from colabkit.store import SessionRecord
from colabkit.team import persona, variant
from colabkit.team.declare import load_variant_file, persona_version
from colabkit.team.personas import persona_frame

WAIT = {"thought": "nothing to add", "action": "wait"}
ETHICIST = "You are the Ethicist of a data-analysis team.\nYou check that claims are fair to the people in the data."
PERSONAS = [{"id": "E", "name": "Ethicist", "role": "human", "prompt_file": "personas/ethicist.md",
             "knows": ["domain_knowledge"]}]
INLINE = {"name": "preassigned-dre", "structure": "preassigned", "humans": ["D", "R", "E"],
          "gates": [{"action": "finish", "signatory": "E"},
                    {"action": "execute_code", "signatory": "D", "scope": "data_changing"}]}


def study(tmp_path: Path, **fields) -> Path:
    (tmp_path / "personas").mkdir(exist_ok=True)
    (tmp_path / "personas" / "ethicist.md").write_text(ETHICIST + "\n")
    data = {"name": "own", "tasks": {"ids": ["demo_archaeology/0/0"]}, "variants": ["default-dr", INLINE],
            "personas": PERSONAS, "seeds": [0], "models": {"default": "scripted/everyone"},
            "settings": {"action_budget": 2, "max_rounds": 2}, "results": str(tmp_path / "results"), **fields}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_an_inline_variant_with_a_file_persona_and_gates_runs_and_records_the_personas_hash(tmp_path):
    exp = load_experiment(study(tmp_path))
    config = exp.variant_config("preassigned-dre")
    ethicist = config.persona("E")
    assert exp.variants == ("default-dr", "preassigned-dre") and config.team == ("ai", "D", "R", "E")
    assert ethicist.prompt == ETHICIST and ethicist.version == persona_version(ethicist)
    assert ethicist.version.startswith("sha256:") and config.preassigned.rule_for("finish", "ai").signatory == "E"
    model = use_scripted({}, default=WAIT)
    summary = run_experiment(exp, progress=False)
    assert summary.line()
    asked = [str(call["messages"][0]["content"]) for call in model.calls]
    assert any(ETHICIST.splitlines()[1] in system for system in asked)  # E took its turns with its own prompt
    records = {r.spec.variant.name: r for r in (SessionRecord.model_validate_json(p.read_bytes())
                                                for p in exp.folder().glob("*/session.json"))}
    assert set(records) == {"default-dr", "preassigned-dre"}
    own = records["preassigned-dre"]
    assert own.persona_versions == {"ai": persona("ai").version, "D": persona("D").version,
                                    "R": persona("R").version, "E": ethicist.version}
    assert own.spec.variant == config and "E" in own.briefings  # the three humans each took part
    # The shipped variant beside it is the registered one, unchanged.
    assert records["default-dr"].spec.variant == variant("default-dr")
    # Editing the persona's file is a new version, a new condition, a new experiment.
    (tmp_path / "personas" / "ethicist.md").write_text(ETHICIST + " Always.\n")
    edited = load_experiment(tmp_path / "exp.yaml")
    assert edited.variant_config("preassigned-dre").persona("E").version != ethicist.version
    assert edited.experiment_id != exp.experiment_id


def test_the_config_copy_keeps_the_inline_variants(tmp_path):
    exp = load_experiment(study(tmp_path))
    copy = tmp_path / "copy.yaml"
    copy.write_text(exp.dump_yaml())
    again = load_experiment(copy)
    assert again.identity() == exp.identity() and again.declared == exp.declared
    assert [s.session_id for s, _ in again.sessions()] == [s.session_id for s, _ in exp.sessions()]


def test_a_persona_on_the_shipped_frame_differs_from_d_only_in_who_it_is(tmp_path):
    lines = {"id": "S", "name": "Statistician", "role_line": "You are the Statistician of a data-analysis team.",
             "knowledge_line": "You know the statistics: tests, power and their assumptions.", "knows": ["datasets"]}
    path = tmp_path / "variants.yaml"
    path.write_text(yaml.safe_dump({"personas": [lines], "variants": [
        {"name": "memory-ds", "structure": "memory", "humans": ["D", "S"]}]}))
    config = load_variant_file(path)["memory-ds"]
    assert persona_frame(config.persona("S")) == persona_frame(persona("D"))
    assert config.persona("S").prompt != persona("D").prompt and config.memory and config.gate_source == "none"


def test_run_takes_a_variant_from_a_variant_file(tmp_path, capsys):
    path = tmp_path / "variants.yaml"
    (tmp_path / "personas").mkdir()
    (tmp_path / "personas" / "ethicist.md").write_text(ETHICIST)
    path.write_text(yaml.safe_dump({"personas": PERSONAS, "variants": [INLINE]}))
    use_scripted({}, default=WAIT)
    assert main(["run", "--task", "demo_archaeology/0/0", "--variant-file", str(path), "--variant", "preassigned-dre",
                 "--seed", "0", "--model", "scripted/everyone", "--out", str(tmp_path / "out"), "--quiet",
                 "--max-rounds", "2"]) == 0
    [record] = [SessionRecord.model_validate_json(p.read_bytes()) for p in (tmp_path / "out").glob("*/session.json")]
    assert record.spec.variant.team == ("ai", "D", "R", "E") and record.persona_versions["E"].startswith("sha256:")
    assert main(["run", "--task", "demo_archaeology/0/0", "--variant-file", str(path), "--variant", "nope",
                 "--seed", "0", "--out", str(tmp_path / "out")]) == 2
    assert "no inline variant 'nope'; declared: preassigned-dre" in capsys.readouterr().err


@pytest.mark.parametrize(("change", "message"), [
    ({"variants": [{**INLINE, "structure": "devils-advocate", "gates": None}]},  # found by the session layer
     r"exp\.yaml: variant 'preassigned-dre': structure 'devils-advocate': unknown; built in or installed: "),
    ({"personas": [{**PERSONAS[0], "prompt_file": "personas/missing.md"}]},
     r"personas\.0 \('E'\)\.prompt_file: not found: .*missing\.md"),
    ({"variants": [{**INLINE, "gates": [{"action": "finish", "signatory": "Q"}]}]},
     r"variants\.0 \('preassigned-dre'\)\.gates\.0\.signatory: 'Q' is not on the team \(ai, D, R, E\)"),
    ({"personas": [*PERSONAS, PERSONAS[0]]}, r"personas\.1\.id: repeated persona id 'E'"),
    ({"variants": [INLINE, {**INLINE, "humans": ["D"]}]}, r"variants\.1: repeated variant 'preassigned-dre'"),
    ({"variants": [{**INLINE, "name": "default-dr"}]}, r"\.name: 'default-dr' is a registered variant"),
    ({"variants": [{**INLINE, "humans": ["D", "X"]}]}, r"\.humans\.1: unknown persona 'X'"),
    ({"variants": [{**INLINE, "structure": "scaffolded", "gates": None, "memory": False}]},
     r"\.memory: contradicts structure 'scaffolded'"),
    ({"variants": [{**INLINE, "options": {"rounds": 2}}]}, r"\.options: options belong to a plugin structure; the study structure 'preassigned' takes none"),
    ({"variants": [{**INLINE, "gates": [{"action": "wait", "signatory": "E"}]}]}, r"\.gates: gate action 'wait'"),
    ({"personas": [{**PERSONAS[0], "prompt": "inline too"}]}, r"personas\.0 \('E'\): give exactly one of"),
    ({"personas": [{**PERSONAS[0], "colour": "red"}]}, r"personas\.0\.colour: Extra inputs"),
    ({"models": {"default": "scripted/x", "E": "scripted/e"}},  # the part that cannot hold a new seat yet
     r"models: unknown role\(s\) 'E'.*a declared persona plays on the 'default' model"),
])
def test_a_bad_declaration_is_one_line_naming_the_file_and_the_field(tmp_path, change, message):
    path = study(tmp_path, **change)
    with pytest.raises(ColabkitError, match=message) as caught:
        load_experiment(path)
    text = str(caught.value)
    assert text.startswith(f"{path}: ") and "\n" not in text
