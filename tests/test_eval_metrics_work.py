"""Work (W_total, W_human) on constructed trajectories, counted by hand."""

from colabkit.evaluation.metrics.work import work
from tests.helpers.trajectories import Trajectory


def test_work_counts_effective_workspace_actions_once_for_the_proposer():
    t = Trajectory(("ai", "D", "R"))
    t.start()
    t.build_step("D")                                  # build phase: never counts
    t.run("ai", "df = load()", "ok")                   # ai +1
    t.run("ai", "1/0", "ZeroDivisionError", status="error")  # raised: did not take effect
    t.run("D", "df.head()", "rows")                    # D +1
    t.failed("R", "edit_result")                       # failed step: nothing happened
    t.say("ai", "I wrote a draft")                     # a message is not workspace work
    t.edit("R", "Draft hypothesis")                    # R +1
    r1 = t.request("ai", "edit_result", "R", text="Axes peak around 3500 BCE")
    t.decide("R", r1, approve=True, reason="matches cell 0")  # applied as ai's: ai +1; the approval itself: 0
    r2 = t.request("ai", "execute_code", "D", code="df.drop(columns=['x'], inplace=True)")
    t.decide("D", r2, approve=False, reason="keep x")  # rejected: never takes effect
    r3 = t.request("R", "edit_result", "D", text="Final")
    t.decide("D", r3, approve=True, reason="ok")       # applied as R's: R +1
    t.request("ai", "execute_code", "D", code="df['y'] = 1")  # expires: 0
    t.end()
    result = work(t.events, t.team)
    # by hand: ai 1 + 1 = 2, D 1, R 1 + 1 = 2 -> W_total = 5, W_human = D 1 + R 2 = 3
    assert result.by_member == {"ai": 2, "D": 1, "R": 2}
    assert result.w_total == 5
    assert result.w_human == 3
    assert result.flags == ()


def test_single_agent_has_no_human_work_to_count():
    t = Trajectory(("ai",))
    t.run("ai", "x = 1")
    t.edit("ai", "H")
    result = work(t.events, t.team)
    assert result.w_total == 2
    assert result.w_human is None


def test_an_actor_outside_the_team_is_flagged():
    t = Trajectory(("ai", "D"))
    t.run("R", "x = 1")
    result = work(t.events, t.team)
    assert result.flags == ("work:actor_not_in_team(R)",)
