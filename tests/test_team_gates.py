"""Gate tables: which proposals need whose approval, the fallback, and the data-changing test."""

import itertools

import pytest

from colabkit.errors import ColabkitError
from colabkit.team import (
    ACTION_TYPES,
    DATA_CHANGING,
    DEFAULT_PREASSIGNED_GATES,
    GATEABLE_ACTIONS,
    GateRule,
    GateTable,
    is_data_changing,
)

DR = ("ai", "D", "R")
READ = 'df = pd.read_csv("data/capital.csv", decimal=",")'
WRITE = "df.to_csv('data/out.csv')"


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
    ],
)
def test_data_changing_code(code):
    assert is_data_changing(code)


@pytest.mark.parametrize(
    "code",
    [
        READ,
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
    assert not is_data_changing(code)


@pytest.mark.parametrize("action", ["approve", "reject", "wait", "delete_everything"])
def test_only_gateable_actions_can_have_rules(action):
    with pytest.raises(ColabkitError, match=action):
        GateRule(action=action, signatory="R")


def test_gateable_actions_are_action_types_minus_decisions_and_wait():
    assert set(GATEABLE_ACTIONS) == set(ACTION_TYPES) - {"approve", "reject", "wait"}
    for action in GATEABLE_ACTIONS:
        assert GateRule(action=action, signatory="R").action == action


def test_default_preassigned_table():
    rules = {(r.action, r.signatory, r.condition) for r in DEFAULT_PREASSIGNED_GATES.rules}
    assert rules == {("edit_result", "R", ""), ("finish", "R", ""), ("execute_code", "D", DATA_CHANGING)}


def _signatory(action, proposer, team, content=None):
    rule = DEFAULT_PREASSIGNED_GATES.rule_for(action, proposer, team, content=content)
    return None if rule is None else rule.signatory


def test_named_signatory_signs_others_requests():
    assert _signatory("edit_result", "ai", DR) == "R"
    assert _signatory("finish", "D", DR) == "R"
    assert _signatory("execute_code", "ai", DR, WRITE) == "D"
    assert _signatory("execute_code", "R", DR, WRITE) == "D"


def test_ungated_actions_and_harmless_code_take_effect_directly():
    assert _signatory("send_message", "ai", DR) is None
    assert _signatory("execute_code", "ai", DR, READ) is None
    assert _signatory("wait", "ai", DR) is None


def test_missing_content_errs_towards_gating():
    assert _signatory("execute_code", "ai", DR) == "D"


def test_nobody_signs_their_own_request_fallback_to_other_human_then_ai():
    assert _signatory("edit_result", "R", DR) == "D"
    assert _signatory("execute_code", "D", DR, WRITE) == "R"
    assert _signatory("edit_result", "R", ("ai", "R")) == "ai"
    assert _signatory("execute_code", "D", ("ai", "D"), WRITE) == "ai"


def test_absent_signatory_fallback():
    # R is not on a D-only team: D signs the AI's edits, the AI signs D's.
    assert _signatory("edit_result", "ai", ("ai", "D")) == "D"
    assert _signatory("finish", "D", ("ai", "D")) == "ai"
    assert _signatory("execute_code", "ai", ("ai", "R"), WRITE) == "R"
    # Nobody left to check the AI agent: ungated.
    assert _signatory("edit_result", "ai", ("ai",)) is None
    table = GateTable(rules=(GateRule(action="finish", signatory="ai"),))
    assert table.rule_for("finish", "ai", ("ai",)) is None
    assert table.rule_for("finish", "ai", ("ai", "D")).signatory == "D"


def test_the_signatory_is_never_the_proposer():
    teams = [("ai",), ("ai", "D"), ("ai", "R"), DR, ("ai", "D", "R", "E")]
    tables = [DEFAULT_PREASSIGNED_GATES] + [
        GateTable(rules=(GateRule(action=a, signatory=s),)) for a in GATEABLE_ACTIONS for s in ("ai", "D", "R", "X")
    ]
    for table, team, action in itertools.product(tables, teams, ACTION_TYPES):
        for proposer in team:
            rule = table.rule_for(action, proposer, team, content=WRITE)
            if rule is not None:
                assert rule.signatory != proposer and rule.signatory in team


def test_condition_in_words_gates_every_action_of_its_type_and_first_rule_wins():
    table = GateTable(
        rules=(
            GateRule(action="execute_code", signatory="D", condition=DATA_CHANGING),
            GateRule(action="execute_code", signatory="R", condition="if it changes the time bins"),
        )
    )
    assert table.rule_for("execute_code", "ai", DR, content=WRITE).signatory == "D"
    rule = table.rule_for("execute_code", "ai", DR, content=READ)
    assert rule.signatory == "R" and rule.condition == "if it changes the time bins"


def test_unknown_action_type_is_an_error():
    with pytest.raises(ColabkitError, match="'dance'"):
        DEFAULT_PREASSIGNED_GATES.rule_for("dance", "ai", DR)


def test_render_lists_rules():
    assert DEFAULT_PREASSIGNED_GATES.render() == (
        "edit_result -> R; finish -> R; execute_code (data-changing) -> D"
    )
    assert "every action takes effect directly" in GateTable().render()
