"""The data-changing gate, defined operationally (issue 44): the dry check a member can apply
before proposing a cell (`data_changes`, with the names the gate rules list) and the engine's
hold agree on a table of cells, and the table's expectations are the rule the prompts state."""

from __future__ import annotations

import pytest

from colabkit.runner.build import build_spec
from colabkit.session.actions import StepSchema, to_action
from colabkit.session.prompting.preview import _EmptyWorkspace, prepared
from colabkit.tasks import load_tasks
from colabkit.team import DATA_CHANGING_RULE, data_changes, names_defined

LOAD = "import pandas as pd\ndf = pd.read_csv('data/hoard_finds.csv')"
# (cells run before, the proposed cell, why it is data-changing: () when it is not)
TABLE: list[tuple[tuple[str, ...], str, tuple[str, ...]]] = [
    # assignments
    ((LOAD,), "df = pd.read_csv('data/hoard_finds.csv', decimal=',')", ("assigns to df",)),
    ((LOAD,), "df = df.dropna()", ("assigns to df",)),
    ((LOAD, "n = 0"), "n += 1", ("assigns to n",)),
    ((LOAD,), "a, df = 1, df.head()", ("assigns to df",)),
    ((LOAD,), "if (df := df[df.BCE > -3000]) is not None:\n    pass", ("assigns to df",)),
    ((), LOAD, ()),  # the first load: df did not exist
    ((LOAD,), "top = df.nlargest(5, 'axes')", ()),
    ((LOAD,), "def f(df):\n    df = df.dropna()\n    return df", ()),  # a local name, not the kernel's
    # in-place mutations
    ((LOAD,), "df['x'] = df['axes'] * 2", ("changes df",)),
    ((LOAD,), "df.loc[df.axes > 0, 'b'] = 1", ("changes df",)),
    ((LOAD,), "df.columns = [c.lower() for c in df.columns]", ("changes df",)),
    ((LOAD,), "del df['phase']", ("changes df",)),
    ((LOAD,), "del df", ("deletes df",)),
    ((LOAD,), "df.dropna(inplace=True)", ("changes df (inplace=True)",)),
    ((LOAD, "seen = []"), "for c in df.columns:\n    seen.append(c)", ("changes seen (append)",)),
    ((LOAD,), "df.insert(0, 'c', 1)", ("changes df (insert)",)),
    # new frames
    ((LOAD,), "merged = df.merge(df, on='BCE')\nmerged['x'] = 1", ()),
    ((LOAD,), "counts = df.groupby('phase')['axes'].sum()\ncounts.sort_values(inplace=True)", ()),
    # prints and plots
    ((LOAD,), "print(df.describe())", ()),
    ((LOAD,), "print('df[0] = 1')  # df = df.x", ()),
    ((LOAD,), "df.plot(x='BCE', y='axes')", ()),
    ((LOAD,), "for col in df.columns:\n    print(col, df[col].max())", ()),
    # file writes
    ((LOAD,), "df.to_csv('out.csv')", ("writes a file",)),
    ((LOAD,), "with open('notes.txt', 'w') as f:\n    f.write('x')", ("writes a file",)),
    ((LOAD,), "import os\nos.remove('data/hoard_finds.csv')", ("writes a file",)),
    ((LOAD,), "with open('data/hoard_finds.csv') as f:\n    print(f.readline())", ()),
    # imports
    ((LOAD,), "import numpy as np", ()),
    ((LOAD,), "import pandas as pd", ()),  # importing again rebinds nothing the rule counts
    # a cell that does not parse cannot run
    ((LOAD,), "df = = 1", ()),
]


@pytest.fixture(scope="module")
def task():
    return load_tasks().tasks[0]


def _held(task, prior: tuple[str, ...], code: str) -> tuple[bool, str]:
    """Whether the engine holds `code` by the AI for D (preassigned DR: D signs data-changing code),
    with `prior` run before it; and the gate rules D is shown then."""
    session, _ = prepared(build_spec(task.id, "preassigned-dr", 0), task, _EmptyWorkspace())
    for cell in prior:
        session.emit("ai", "execute_code", "ok", args={"code": cell})
    action = to_action(StepSchema(thought="", action="execute_code", content=code), "ai", session.team)
    rule = session.structure.hold(session, action, "ai")
    return rule is not None and rule.signatory == "D", session.observe("D").gate_rules or ""


@pytest.mark.parametrize(("prior", "code", "reasons"), TABLE, ids=[row[1][:40] for row in TABLE])
def test_the_dry_check_and_the_engine_agree(task, prior, code, reasons):
    existing = names_defined(prior)
    assert data_changes(code, existing) == reasons  # the rule, as stated
    held, rules = _held(task, prior, code)
    assert held == bool(reasons)  # the engine holds exactly what the dry check calls data-changing
    assert f"Names that exist now: {', '.join(existing) or 'none yet'}." in rules  # what the member can check against


def test_the_rule_is_stated_where_gates_are_chosen_and_where_they_hold(task):
    _, rules = _held(task, (LOAD,), "print(1)")
    assert DATA_CHANGING_RULE in rules
    build = prepared(build_spec(task.id, "scaffolded-dr", 0), task, _EmptyWorkspace())[1]["D"][0]
    assert build.stage == "propose" and DATA_CHANGING_RULE in build.user
    assert "Names that exist now" not in (prepared(build_spec(task.id, "scaffolded-r", 0), task,
                                                   _EmptyWorkspace())[0].observe("R").gate_rules or "")
