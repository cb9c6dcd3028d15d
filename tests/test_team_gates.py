"""Gate tables: which proposals need whose approval, scopes and notes, self-gates, absent
signatories, and the data-changing test."""

import itertools

import pytest

from colabkit.errors import ColabkitError
from colabkit.team import (
    ACTION_TYPES,
    DEFAULT_PREASSIGNED_GATES,
    GATEABLE_ACTIONS,
    GateRule,
    GateTable,
    is_data_changing,
)

DR = ("ai", "D", "R")
READ = 'df = pd.read_csv("data/capital.csv", decimal=",")'
WRITE = "df.to_csv('data/out.csv')"
EXISTING = ("df", "counts", "df_inter", "plt", "pd")  # names earlier cells bound


@pytest.mark.parametrize(
    "code",
    [
        WRITE,
        "df['x'] = df['x'] * 2",
        "df.loc[df.a > 0, 'b'] = 1",
        "df.dropna(inplace=True)",
        "df = df[df.BCE > -3000]",
        "df.columns = ['a', 'b']",
        "del df['group']",
        "with open('notes.txt', 'w') as f:\n    f.write('x')",
        "import os\nos.remove('data/capital.csv')",
        "counts[0] += 1",
        "df.insert(0, 'c', 1)",
        READ,  # reassigning the loaded table (issue 44: it ran ungated while a new table was held)
    ],
)
def test_data_changing_code(code):
    assert is_data_changing(code, EXISTING)


@pytest.mark.parametrize(
    "code",
    [
        READ.replace("df =", "hoards ="),
        "merged = df.merge(df_inter)\nmerged['x'] = 1",  # a new table, even changed in the cell that made it
        "m = df.groupby('century')['ZBeil'].mean()\nprint(m.idxmax())",
        "print(df[df.BCE == -3500])",
        "df.plot(x='BCE', y='ZBeil')\nplt.savefig('axes.png')",
        "print('a[0]=1')  # df = df.x",
        "with open('data/wine.csv') as f:\n    print(f.readline())",
        "x = df_inter.max()",
        "ok = df['a'] != df['b']",
    ],
)
def test_not_data_changing_code(code):
    assert not is_data_changing(code, EXISTING)


@pytest.mark.parametrize("action", ["approve", "reject", "wait", "delete_everything"])
def test_only_gateable_actions_can_have_rules(action):
    with pytest.raises(ColabkitError, match=action):
        GateRule(action=action, signatory="R")


def test_gateable_actions_are_action_types_minus_decisions_and_wait():
    assert set(GATEABLE_ACTIONS) == set(ACTION_TYPES) - {"approve", "reject", "wait"}
    for action in GATEABLE_ACTIONS:
        assert GateRule(action=action, signatory="R").action == action


def test_default_preassigned_table():
    rules = {(r.action, r.signatory, r.scope, r.note) for r in DEFAULT_PREASSIGNED_GATES.rules}
    assert rules == {("edit_result", "R", "all", ""), ("finish", "R", "all", ""),
                     ("execute_code", "D", "data_changing", "")}


def _signatory(action, proposer, content=None, table=DEFAULT_PREASSIGNED_GATES):
    rule = table.rule_for(action, proposer, content=content)
    return None if rule is None else rule.signatory


def test_named_signatory_signs_others_requests():
    assert _signatory("edit_result", "ai") == "R"
    assert _signatory("finish", "D") == "R"
    assert _signatory("execute_code", "ai", WRITE) == "D"
    assert _signatory("execute_code", "R", WRITE) == "D"


def test_ungated_actions_and_harmless_code_take_effect_directly():
    assert _signatory("send_message", "ai") is None
    assert _signatory("execute_code", "ai", READ) is None
    assert _signatory("wait", "ai") is None


def test_missing_content_errs_towards_gating():
    assert _signatory("execute_code", "ai") == "D"


def test_a_self_gate_is_ungated_and_nobody_is_drafted_in():
    # R named for edits: R's own edit takes effect (nobody else was chosen to sign it).
    assert _signatory("edit_result", "R") is None and _signatory("finish", "R") is None
    assert _signatory("execute_code", "D", WRITE) is None
    table = GateTable(rules=(GateRule(action="finish", signatory="ai"),))
    assert _signatory("finish", "ai", table=table) is None and _signatory("finish", "D", table=table) == "ai"


def test_an_absent_signatorys_gate_is_dropped_and_reported():
    kept, report = DEFAULT_PREASSIGNED_GATES.for_team(("ai", "D"))
    assert [(r.action, r.signatory) for r in kept.rules] == [("execute_code", "D")]
    assert report == ("gate edit_result -> R dropped: R is not on the team",
                      "gate finish -> R dropped: R is not on the team")
    assert _signatory("edit_result", "ai", table=kept) is None  # nobody rerouted to sign it
    kept, report = DEFAULT_PREASSIGNED_GATES.for_team(DR)
    assert kept == DEFAULT_PREASSIGNED_GATES and report == ()


def test_the_signatory_is_never_the_proposer_and_always_on_the_team():
    teams = [("ai",), ("ai", "D"), ("ai", "R"), DR, ("ai", "D", "R", "E")]
    tables = [DEFAULT_PREASSIGNED_GATES] + [
        GateTable(rules=(GateRule(action=a, signatory=s),)) for a in GATEABLE_ACTIONS for s in ("ai", "D", "R", "X")
    ]
    for table, team, action in itertools.product(tables, teams, ACTION_TYPES):
        enforced, _ = table.for_team(team)
        for proposer in team:
            rule = enforced.rule_for(action, proposer, content=WRITE)
            if rule is not None:
                assert rule.signatory != proposer and rule.signatory in team


def test_scope_narrows_a_code_gate_a_note_never_does_and_the_first_rule_wins():
    table = GateTable(
        rules=(
            GateRule(action="execute_code", signatory="D", scope="data_changing"),
            GateRule(action="execute_code", signatory="R", note="if it changes the time bins"),
        )
    )
    assert _signatory("execute_code", "ai", WRITE, table=table) == "D"
    rule = table.rule_for("execute_code", "ai", content=READ)
    assert rule.signatory == "R" and rule.scope == "all" and rule.terms() == "note: if it changes the time bins"
    assert table.rules[0].terms() == "data-changing code only"


def test_data_changing_scope_is_for_code_only():
    with pytest.raises(ColabkitError, match="execute_code only"):
        GateRule(action="edit_result", signatory="R", scope="data_changing")


def test_unknown_action_type_is_an_error():
    with pytest.raises(ColabkitError, match="'dance'"):
        DEFAULT_PREASSIGNED_GATES.rule_for("dance", "ai")


def test_render_lists_rules():
    assert DEFAULT_PREASSIGNED_GATES.render() == (
        "edit_result -> R; finish -> R; execute_code (data-changing code only) -> D"
    )
    assert GateRule(action="finish", signatory="R", note="cite").describe() == "finish (note: cite) -> R"
    assert "every action takes effect directly" in GateTable().render()
