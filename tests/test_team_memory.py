"""Shared Group Memory: frozen record, digest, rendering, build schemas and consolidation."""

import json

import pytest
from pydantic import ValidationError

from colabkit.team import (
    GATEABLE_ACTIONS,
    GateRule,
    GateTable,
    MemoryProposal,
    MemoryRecord,
    MemorySlots,
    Ratification,
    build_request,
    build_rules,
    memory_from_consolidation,
    memory_schema,
    persona,
    ratification_schema,
)
from colabkit.team.memory import ENFORCEABLE_GATES, SIGNATORY_CHARS, SLOT_CEILING, SLOT_MAX_CHARS

SLOTS = dict(
    expertise="D knows the columns; R knows the capital groupings.",
    responsibility="D checks parsing; R checks definitions.",
    plan="AI loads data, asks D about columns, drafts; R reviews.",
    evidence_standards="Use 100-year bins; name the period.",
)
TEAM = tuple(persona(p) for p in ("ai", "D", "R"))


def _record(**changes):
    fields = {**SLOTS, "gates": GateTable(rules=(GateRule(action="finish", signatory="R"),)), **changes}
    return MemoryRecord(**fields)


def test_record_is_frozen():
    record = _record()
    with pytest.raises(ValidationError):
        record.plan = "do whatever"
    with pytest.raises(ValidationError):
        record.gates.rules[0].signatory = "D"
    with pytest.raises(TypeError):
        record.gates.rules[0] = GateRule(action="finish", signatory="D")  # tuples cannot be assigned to


def test_digest_is_stable_and_changes_with_content():
    a, b = _record(), _record()
    assert a.digest() == b.digest() and len(a.digest()) == 64
    assert _record(plan="Another plan.").digest() != a.digest()
    assert _record(gates=None).digest() != a.digest()
    assert _record(gates=GateTable(rules=(GateRule(action="finish", signatory="D"),))).digest() != a.digest()


def test_render_shows_every_slot_read_only_and_the_gates():
    text = _record().render()
    assert "read-only" in text and _record().digest()[:8] in text
    for value in SLOTS.values():
        assert value in text
    assert "Gates: finish -> R" in text
    assert "Gates" not in _record(gates=None).render()
    assert "Gates: none" in _record(gates=GateTable()).render()


def test_slots_are_bounded_in_records_and_schemas():
    with pytest.raises(ValidationError):
        _record(plan="x" * (SLOT_CEILING + 1))
    with pytest.raises(ValidationError):
        MemorySlots(**{**SLOTS, "plan": "x" * (SLOT_MAX_CHARS + 1)})
    schema = MemoryProposal.model_json_schema()
    assert schema["properties"]["plan"]["maxLength"] == SLOT_MAX_CHARS
    assert "gates" in schema["properties"] and "gates" not in MemorySlots.model_json_schema()["properties"]
    assert memory_schema(True) is MemoryProposal and memory_schema(False) is MemorySlots


def test_a_larger_profile_asks_for_longer_slots_and_the_record_holds_them():
    sized = memory_schema(True, 1200)
    assert issubclass(sized, MemoryProposal) and sized.model_json_schema()["properties"]["plan"]["maxLength"] == 1200
    long = sized(**{**SLOTS, "plan": "p" * 1200})
    record, _ = memory_from_consolidation(long, [persona("ai"), persona("R")], with_gates=True)
    assert record.plan == "p" * 1200
    assert "at most 1200 characters" in build_rules([persona("ai")], False, 1200)


def test_consolidation_maps_drops_and_reports_gates():
    output = MemoryProposal(
        **SLOTS,
        gates=[
            {"action": "Edit", "signatory": "the Researcher"},
            {"action": "execute_code", "signatory": "D", "scope": "data_changing", "note": "check the bins "},
            {"action": "approve", "signatory": "R"},
            {"action": "finish", "signatory": "Bob"},
            {"action": "edit_result", "signatory": "D"},
            {"action": "finish", "signatory": "R (Researcher)"},
            {"action": "send_message", "signatory": "ai", "scope": "data_changing"},
        ],
    )
    record, report = memory_from_consolidation(output, TEAM, with_gates=True)
    assert [(r.action, r.signatory, r.scope, r.note) for r in record.gates.rules] == [
        ("edit_result", "R", "all", ""),
        ("execute_code", "D", "data_changing", "check the bins"),
        ("finish", "R", "all", ""),
        ("send_message", "ai", "all", ""),
    ]
    assert any("gate 7 widened" in line and "send_message" in line for line in report)
    assert any("gate 1 mapped" in line for line in report)
    assert any("gate 3 dropped" in line and "approve" in line for line in report)
    assert any("gate 4 dropped" in line and "Bob" in line for line in report)
    assert any("gate 5 dropped" in line and "repeats" in line for line in report)
    assert record.expertise == SLOTS["expertise"]


def test_signatory_must_be_on_this_team():
    team = (persona("ai"), persona("D"))
    record, report = memory_from_consolidation(
        {**SLOTS, "gates": [{"action": "finish", "signatory": s} for s in ("Researcher", "AI agent")]},
        team,
        with_gates=True,
    )
    assert [(r.action, r.signatory) for r in record.gates.rules] == [("finish", "ai")]
    assert report[0] == "gate 1 dropped: signatory 'Researcher' is not on the team"


def test_memory_only_consolidation_has_no_gates():
    record, report = memory_from_consolidation(
        {**SLOTS, "plan": "", "gates": [{"action": "finish", "signatory": "R"}]}, TEAM, with_gates=False
    )
    assert record.gates is None
    assert any("ignored" in line for line in report) and any("plan is empty" in line for line in report)
    record, report = memory_from_consolidation(MemorySlots(**SLOTS), TEAM, with_gates=True)
    assert record.gates == GateTable() and report == ()


def test_consolidation_is_deterministic():
    output = {**SLOTS, "gates": [{"action": "run code", "signatory": "analyst"}]}
    first = memory_from_consolidation(output, TEAM, with_gates=True)
    assert first == memory_from_consolidation(json.loads(json.dumps(output)), TEAM, with_gates=True)
    assert first[0].gates.rules[0] == GateRule(action="execute_code", signatory="D")


def test_build_rules_name_the_team_and_gates_only_when_asked():
    text = build_rules(TEAM, with_gates=True)
    assert "D = Data Analyst" in text and "edit_result" in text and "frozen" in text
    assert "gates" not in build_rules(TEAM, with_gates=False)
    assert "gates" not in build_request("propose", with_gates=False) and "gates" in build_request("propose", True)
    requests = {stage: build_request(stage, True) for stage in ("propose", "consolidate", "ratify", "amend")}
    assert len(set(requests.values())) == 4 and "'amend'" in requests["ratify"]


def test_a_sized_schema_bounds_the_gate_table_and_its_notes():
    sized = memory_schema(True, 160, ENFORCEABLE_GATES, 60)
    schema = sized.model_json_schema()
    assert schema["properties"]["gates"]["maxItems"] == ENFORCEABLE_GATES == 5
    item = schema["$defs"][schema["properties"]["gates"]["items"]["$ref"].split("/")[-1]]
    assert item["properties"]["note"]["maxLength"] == 60
    six = {**SLOTS, "gates": [{"action": "finish", "signatory": "R"}] * 6}
    with pytest.raises(ValidationError):
        sized.model_validate({**six, **{s: "x" for s in SLOTS}})
    five = sized.model_validate({s: "x" for s in SLOTS} | {"gates": six["gates"][:5]})
    assert memory_from_consolidation(five, TEAM, with_gates=True)[0].gates.rules[0].action == "finish"
    assert memory_schema(True, 160, ENFORCEABLE_GATES, 60) is sized  # one class per size
    # its actions come from the list (an enum in the grammar); known wordings are still understood
    assert item["properties"]["action"]["enum"] == list(GATEABLE_ACTIONS)
    assert item["properties"]["signatory"]["maxLength"] == SIGNATORY_CHARS
    slots = {s: "x" for s in SLOTS}
    assert sized.model_validate({**slots, "gates": [{"action": "run code", "signatory": "D"}]}).gates[0].action == (
        "execute_code")
    with pytest.raises(ValidationError):
        sized.model_validate({**slots, "gates": [{"action": "approve", "signatory": "D"}]})
    free = MemoryProposal.model_validate({**slots, "gates": [{"action": "approve", "signatory": "D"}]})
    assert memory_from_consolidation(free, TEAM, with_gates=True)[1] == ("gate 1 dropped: action 'approve' cannot be gated",)


def test_render_fits_a_budget_keeping_every_slot_and_the_gates():
    long = {slot: f"{slot} " + "detail " * 30 for slot in SLOTS}
    record = _record(**long)
    full = record.render()
    assert len(full) > 1000
    short = record.render(max_chars=700)
    assert len(short) <= 700 and "Gates: finish -> R" in short
    for slot in SLOTS:
        assert f"{slot} detail" in short
    assert _record().render(max_chars=5000) == _record().render()


def test_ratification_is_accept_or_one_named_amendment():
    accept = Ratification.model_validate({"reply": {"decision": "accept"}})
    assert (accept.decision, accept.amendment) == ("accept", "")
    amend = Ratification.model_validate({"reply": {"decision": "amend", "amendment": "R checks the bins"}})
    assert (amend.decision, amend.amendment) == ("amend", "R checks the bins")
    for empty in ({"decision": "amend"}, {"decision": "amend", "amendment": ""}, {"decision": "amend", "amendment": "  "}):
        with pytest.raises(ValidationError):
            Ratification.model_validate({"reply": empty})
    with pytest.raises(ValidationError):
        Ratification.model_validate({"reply": {"decision": "veto"}})
    # the schema a model decodes against has no 'amend' without its text
    schema = ratification_schema(160).model_json_schema()
    amend_schema = schema["$defs"]["Amend160"]
    assert amend_schema["required"] == ["decision", "amendment"] and amend_schema["properties"]["amendment"]["minLength"] == 1
    assert amend_schema["properties"]["amendment"]["maxLength"] == 160 and len(schema["properties"]["reply"]["oneOf"]) == 2
    draft = _record().render(draft=True)
    assert draft.startswith("Shared Group Memory (draft, not frozen yet):") and "read-only" not in draft
