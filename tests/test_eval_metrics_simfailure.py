"""The judged simulator-caused-failure label: through the real judge and gateway on scripted
answers (a judge double by prompt id), failing closed on every answer it cannot use."""

from __future__ import annotations

import pytest

from colabkit.evaluation import available_metrics
from tests.helpers.judges import use_judge_double
from tests.helpers.trajectories import Trajectory
from tests.test_eval_metrics_scorers import context, score

WRONG = "The dataset covers only the 9th century."


def session() -> tuple[Trajectory, str]:
    t = Trajectory(("ai", "D", "R"))
    t.start()
    t.say("ai", "Which centuries does the data cover?")
    wrong = t.say("R", WRONG)
    t.say("D", "I will check the columns.")
    t.edit("ai", "Axes peak in the 9th century.")
    t.end()
    return t, wrong.event_id


def answer(caused: bool, ids: list[str], kind: str = "wrong_fact", failed: bool = True) -> dict:
    return {"reason": "r", "team_failed": failed, "caused_by_simulated_human": caused, "kind": kind,
            "event_ids": ids}


def test_a_wrong_fact_that_caused_the_failure_is_labelled_with_its_event(tmp_path):
    traj, wrong = session()
    seen = []
    use_judge_double({"sim_failure": [lambda p: seen.append(p) or answer(True, [wrong])]}, fallback=None)
    result = score("sim_failure", context(tmp_path, traj))
    assert result.values == {"sim_failure": True, "sim_failure_kind": "wrong_fact", "sim_failure_events": wrong}
    assert not result.flags and result.judgements[0].label == "wrong_fact"
    shown = seen[0]["acts"]
    assert [a["who"] for a in shown] == ["R", "D"] and shown[0]["event_id"] == wrong  # the AI's acts are not shown
    assert set(seen[0]["private_notes"]) == {"D", "R"}


@pytest.mark.parametrize(("reply", "why"), [
    (answer(True, ["s1-00099"]), "event id(s) not among the acts shown"),
    (answer(True, []), "a cause naming no event"),
    (answer(True, ["x"], failed=False), "a cause without a failure"),
    (answer(False, [], kind="wrong_fact"), "no cause but a kind or events named"),
    ("not json at all", "judge_invalid"),
])
def test_an_answer_it_cannot_use_leaves_the_label_missing_and_flagged(tmp_path, reply, why):
    traj, _ = session()
    use_judge_double({"sim_failure": [reply] * 3}, fallback=None)
    result = score("sim_failure", context(tmp_path, traj))
    assert result.values == {"sim_failure": None, "sim_failure_kind": None, "sim_failure_events": None}
    assert any(why in flag for flag in result.flags), result.flags


def test_no_simulated_human_is_not_applicable_and_no_act_is_false_without_asking(tmp_path):
    use_judge_double({}, fallback=None)  # any question would fail the test: nothing is scripted
    single = Trajectory(("ai",))
    single.start()
    single.edit("ai", "H")
    single.end()
    assert score("sim_failure", context(tmp_path / "a", single, variant_name="single")).values["sim_failure"] is None
    quiet = Trajectory(("ai", "D", "R"))
    quiet.start()
    quiet.edit("ai", "H")
    quiet.end()
    result = score("sim_failure", context(tmp_path / "b", quiet))
    assert result.values["sim_failure"] is False and "sim_failure:no_simulated_acts" in result.flags


def test_the_label_is_opt_in():
    assert "sim_failure" not in available_metrics() and "sim_failure" in available_metrics(opt_in=True)
