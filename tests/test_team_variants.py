"""Variant registry and configs: the 13 study conditions, validation, stable identities."""

import json

import pytest
from pydantic import ValidationError

from colabkit.errors import ColabkitError
from colabkit.team import (
    DEFAULT_PREASSIGNED_GATES,
    STUDY_VARIANT_NAMES,
    VARIANT_NAMES,
    VARIANTS,
    GateRule,
    GateTable,
    Persona,
    VariantConfig,
    variant,
)

EXPECTED = ["single"] + [
    f"{family}-{team}" for family in ("default", "scaffolded", "memory", "preassigned") for team in ("d", "r", "dr")
]


def test_registry_has_exactly_the_13_and_the_dynamic_extension():
    assert list(STUDY_VARIANT_NAMES) == EXPECTED
    assert list(VARIANT_NAMES) == [*EXPECTED, "dynamic-d", "dynamic-r", "dynamic-dr"] and len(VARIANTS) == 16
    assert all(variant(n).name == n for n in VARIANT_NAMES)
    for team in ("d", "r", "dr"):  # Scaffolded with a living memory, and nothing else
        dynamic, scaffolded = variant(f"dynamic-{team}"), variant(f"scaffolded-{team}")
        assert dynamic.memory_updates and not any(variant(n).memory_updates for n in EXPECTED)
        assert dynamic.model_copy(update={"name": scaffolded.name, "memory_updates": False}) == scaffolded


def test_unknown_variant_lists_the_valid_names():
    with pytest.raises(ColabkitError) as err:
        variant("scaffolded-x")
    message = str(err.value)
    assert "scaffolded-x" in message and all(n in message for n in EXPECTED) and "\n" not in message
    assert variant(" Default-DR ") is variant("default-dr")


def test_registry_settings():
    assert variant("single").humans == () and variant("single").team == ("ai",)
    assert variant("default-dr").humans == ("D", "R") and variant("memory-r").humans == ("R",)
    for team in ("d", "r", "dr"):
        assert (variant(f"default-{team}").memory, variant(f"default-{team}").gate_source) == (False, "none")
        assert (variant(f"memory-{team}").memory, variant(f"memory-{team}").gate_source) == (True, "none")
        assert (variant(f"scaffolded-{team}").memory, variant(f"scaffolded-{team}").gate_source) == (True, "self")
        pre = variant(f"preassigned-{team}")
        assert (pre.memory, pre.gate_source) == (False, "preassigned")
        assert pre.preassigned == DEFAULT_PREASSIGNED_GATES.for_team(pre.team)[0]
    # Without R or D their gates are dropped, nobody else signs in their place.
    assert variant("preassigned-dr").preassigned == DEFAULT_PREASSIGNED_GATES
    assert [(r.action, r.signatory) for r in variant("preassigned-r").preassigned.rules] == [
        ("edit_result", "R"), ("finish", "R")]
    assert [(r.action, r.signatory, r.scope) for r in variant("preassigned-d").preassigned.rules] == [
        ("execute_code", "D", "data_changing")]
    assert all(v.preassigned is None for v in VARIANTS.values() if v.gate_source != "preassigned")


def test_identity_is_stable_and_survives_serialisation():
    for v in VARIANTS.values():
        again = VariantConfig.model_validate(json.loads(json.dumps(v.model_dump(mode="json"))))
        assert again == v and again.identity() == v.identity() and len(v.identity()) == 64
    assert len({v.identity() for v in VARIANTS.values()}) == 16
    # Pinned across processes and machines: changing field names, defaults or the shipped
    # registry changes every recorded variant hash, so it must be deliberate.
    assert variant("single").identity() == "515a74d5b062dcbde2ddd93bd04d5d62d664fa301e713ccdbe9da5733236a4bb"
    assert variant("scaffolded-dr").identity() == "2c269baca215489371914c612c1bb98d867910d80b03b1ab15b0efebdaa6f2d4"


@pytest.mark.parametrize(
    "change",
    [
        {"name": "scaffolded-dr2"},
        {"humans": ("R", "D")},
        {"preassigned": GateTable(rules=(GateRule(action="finish", signatory="R"),)), "gate_source": "preassigned"},
        {"gate_source": "none"},
    ],
)
def test_identity_is_sensitive_to_every_field(change):
    base = variant("scaffolded-dr")
    assert base.model_copy(update=change).identity() != base.identity()


def test_identity_is_sensitive_to_the_gate_table_contents():
    base = variant("preassigned-dr")
    rules = list(base.preassigned.rules)
    rules[2] = rules[2].model_copy(update={"scope": "all"})
    changed = base.model_copy(update={"preassigned": GateTable(rules=tuple(rules))})
    assert changed.identity() != base.identity()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "x", "humans": ("D",), "gate_source": "self"}, "memory=True"),
        ({"name": "x", "humans": ("D",), "gate_source": "preassigned"}, "preassigned"),
        ({"name": "x", "humans": ("D",), "preassigned": DEFAULT_PREASSIGNED_GATES}, "preassigned"),
        ({"name": "x", "humans": ("D",), "gate_source": "preassigned", "preassigned": DEFAULT_PREASSIGNED_GATES},
         "name R, not on the team"),
        ({"name": "single", "humans": ("D",)}, "no humans"),
        ({"name": "x", "humans": ("Q",)}, "unknown persona 'Q'"),
        ({"name": "x", "humans": ("ai",)}, "role"),
        ({"name": "x", "humans": ("D", "D")}, "repeat"),
        ({"name": "x", "memory": True, "gate_source": "self"}, "at least one human"),
        ({"name": "bad name"}, "bad name"),
        ({"name": "x", "humans": ("system",), "personas": (
            Persona(id="system", name="Sys", role="human", version="s-1", prompt="p"),)}, "reserved"),
    ],
)
def test_contradictory_configs_are_rejected(fields, message):
    with pytest.raises(ColabkitError, match=message):
        VariantConfig(**fields)


def test_user_defined_variant_with_a_custom_persona_and_more_humans():
    statistician = Persona(
        id="S", name="Statistician", role="human", version="S-1", prompt="You check the statistics.",
        knows=("datasets",),
    )
    custom = VariantConfig(
        name="preassigned-drs",
        humans=("D", "R", "S"),
        gate_source="preassigned",
        preassigned=GateTable(rules=(GateRule(action="finish", signatory="S"),)),
        personas=(statistician,),
    )
    assert custom.team == ("ai", "D", "R", "S")
    assert [p.id for p in custom.team_personas()] == ["ai", "D", "R", "S"]
    assert custom.persona("S") is statistician and custom.persona("R").name == "Researcher"
    assert custom.preassigned.rule_for("finish", "ai").signatory == "S"
    again = VariantConfig.model_validate_json(custom.model_dump_json())
    assert again.identity() == custom.identity()
    # Overriding a shipped persona changes the condition, hence the identity.
    other_r = variant("default-r").model_copy(update={"personas": (statistician.model_copy(update={"id": "R"}),)})
    assert VariantConfig.model_validate(other_r.model_dump()).identity() != variant("default-r").identity()


def test_variant_config_is_frozen():
    with pytest.raises(ValidationError):
        variant("default-d").humans = ("R",)
    with pytest.raises(TypeError):
        VARIANTS["mine"] = variant("single")
