"""The trajectory views on a real stored session (scripted participants, real kernel), and the
explorer widget's wiring: selecting, filtering and stepping change what it shows."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from helpers.stored_session import HYPOTHESIS, record_scaffolded_session

from colabkit.analysis.explorer import TrajectoryExplorer
from colabkit.analysis.trajectory import (
    experiments,
    load_trajectory,
    render_event,
    render_memory,
    render_session,
    render_step,
    select_steps,
    workspace_at,
)
from colabkit.errors import ColabkitError
from colabkit.store import SessionRecord


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    root = tmp_path_factory.mktemp("trajectories")
    folder = record_scaffolded_session(root / "exp")
    return root, folder


def test_a_stored_session_renders_every_kind_of_event(stored):
    root, folder = stored
    assert experiments(root) == [root / "exp"]
    traj = load_trajectory(root / "exp", folder.name)
    page = render_session(traj)
    for expected in ("AI-THOUGHT: count the hoards first", "D-THOUGHT: check the data",  # thoughts
                     "print(6 * 7)", "42",  # a cell and its output from the snapshot
                     "Yes, the 12th century fits.",  # chat
                     "request req-1", "<b>approved</b>: matches the counts",  # the gate and its decision
                     "counts by century", "signed by",  # the frozen memory with its gate table
                     HYPOTHESIS.replace("'", "&#x27;")):
        assert expected in page, expected
    assert "<script" not in page and "&lt;" not in render_memory(traj)  # escaped, no markup injected


def test_filters_and_the_workspace_at_a_step(stored):
    root, folder = stored
    traj = load_trajectory(root / "exp", folder.name)
    build = select_steps(traj, phase="build")
    assert build and {traj.events.loc[i, "phase"] for i in build} == {"build"}
    d_steps = select_steps(traj, participant="D", phase="task")
    assert {traj.events.loc[i, "participant"] for i in d_steps} == {"D"}
    first_code = next(i for i in select_steps(traj) if traj.events.loc[i, "action"] == "execute_code")
    last = select_steps(traj)[-1]
    assert len(workspace_at(traj, first_code)["cells"]) == 1 and len(workspace_at(traj, last)["cells"]) == 2
    assert workspace_at(traj, first_code)["editor_versions"] == [] and workspace_at(traj, last)["editor_versions"]
    steps = select_steps(traj)
    assert "step 1 of" in render_step(traj, steps, 0) and "editor empty" in render_step(traj, steps, 0)
    assert HYPOTHESIS[:20] in render_step(traj, steps, len(steps) - 1)
    with pytest.raises(ColabkitError, match="no finished session 'nope'"):
        load_trajectory(root / "exp", "nope")


def test_the_explorer_steps_and_filters(stored):
    root, folder = stored
    explorer = TrajectoryExplorer(root)
    explorer.show(root / "exp", folder.name)
    first = explorer.view.value
    assert "step 1 of" in first and explorer.step.max == len(explorer.steps) > 5
    explorer.next.click()
    assert explorer.step.value == 2 and explorer.view.value != first and "step 2 of" in explorer.view.value
    explorer.participant.value = "R"
    assert explorer.step.value == 1 and all(explorer.trajectory.events.loc[i, "participant"] == "R"
                                            for i in explorer.steps)
    assert "signed by" in explorer.memory.value and "R-THOUGHT" in explorer.thoughts.value
    assert "no finished sessions" in TrajectoryExplorer(root / "empty").view.value


def test_missing_values_of_any_kind_are_left_out_of_a_card(stored):
    root, folder = stored
    traj = load_trajectory(root / "exp", folder.name)
    code = next(i for i in traj.events.index if traj.events.loc[i, "action"] == "execute_code")
    events = traj.events.astype({"round": "Int64"}).assign(cell_index=pd.NA, gate_note=None)
    events["cell_index"] = events["cell_index"].astype("Int64")  # nullable, as newer stores write it
    card = render_event(type(traj)(traj.session_id, traj.record, events, traj.snapshot), code)
    assert "print(6 * 7)" in card and "cell 0 → ok" in card and "note" not in card  # found by code and time


def test_the_explorer_opens_on_a_session_table_with_team_sessions_first_and_one_selected(stored, tmp_path):
    import shutil

    from helpers.stored import store_session
    from helpers.stored_session import TASK_ID

    from colabkit.analysis.session_table import session_table

    root, folder = stored
    exp = tmp_path / "exp"
    shutil.copytree(folder, exp / folder.name)
    # two waits more than the stored session's AI took, so a swap of the two columns shows
    record = json.loads((exp / folder.name / "session.json").read_text())
    record["totals"]["ai_turns"] = record["totals"]["ai_actions"] + 2
    (exp / folder.name / "session.json").write_text(json.dumps(record))
    singles: list[str] = []
    while len(singles) < 4 or min(singles) >= folder.name:  # until, by hash, a single session would come first
        assert len(singles) < 64, "no seed gave a single session whose id sorts before the team session's"
        singles.append(store_session(exp, TASK_ID, "single answer", seed=len(singles)).name)
    table = session_table(exp)
    assert list(table["session_id"]) == [folder.name, *singles]  # then by seed
    team = table.iloc[0]
    assert team["variant"] == "scaffolded-dr" and team["human_actions"] > 0 and team["messages"] > 0
    # the AI's turns (waits included) and its actions (no waits), each as the record counts it
    totals = SessionRecord.model_validate_json((exp / folder.name / "session.json").read_bytes()).totals
    assert (team["ai_turns"], team["ai_actions"]) == (totals.ai_turns, totals.ai_actions)
    assert totals.ai_turns == totals.ai_actions + 2 and totals.ai_actions > 0
    assert team["hypothesis"] == HYPOTHESIS and pd.isna(team["performance"])  # not scored yet

    explorer = TrajectoryExplorer(tmp_path)
    assert explorer.session.value == folder.name and explorer.trajectory is not None  # the team session
    shown = explorer.sessions.value
    assert shown.count("<tr") == 1 + 1 + len(singles) and 'class="ck-selected"' in shown
    assert shown.index(folder.name) < min(shown.index(s) for s in singles)
    explorer.show(session_id=singles[0])
    assert 'class="ck-selected"' in explorer.sessions.value.split(singles[0])[0].rsplit("<tr", 1)[1]


def test_recipients_read_as_names_the_memory_from_the_left_and_the_static_page_has_the_session_table(stored):
    """A failed step's `to` is the text the model wrote ("to n, o, n, e, ;" was it spelled out);
    the frozen memory's cells are left-aligned; the executed notebook's static rendering holds
    the session table the widget opens on, the selected session marked."""
    import json

    root, folder = stored
    traj = load_trajectory(root / "exp", folder.name)
    sent = next(i for i in traj.events.index if traj.events.loc[i, "action"] == "send_message")
    assert "to all:" in render_event(traj, sent) or "to ai" in render_event(traj, sent)
    events = traj.events.copy()
    events.loc[sent, "args_json"] = json.dumps({"action": "send_message", "content": "hello", "to": "none;"})
    events.loc[sent, "status"] = "failed_step"
    card = render_event(type(traj)(traj.session_id, traj.record, events, traj.snapshot), sent)
    assert "to &#x27;none;&#x27; (as written): «hello»" in card and "n, o, n" not in card
    memory = render_memory(traj)
    assert memory.count("text-align:left") == 2 * memory.count("<tr>") > 0
    explorer = TrajectoryExplorer(root)
    page = explorer.static_html()
    assert 'class="ck-sessions"' in page and 'class="ck-selected"' in page and folder.name in page
    assert page.index('class="ck-sessions"') < page.index('class="ck-session"')  # the table, then the session
    assert "no finished sessions" in TrajectoryExplorer(root / "empty").static_html()
