"""The explorer marks, per private note, where it first appeared (scripted session, truth known)."""

from colabkit.analysis.explorer import TrajectoryExplorer
from colabkit.analysis.private_notes import first_appearances, note_fates, render_private_notes
from colabkit.analysis.trajectory import load_trajectory
from colabkit.evaluation import score_results
from colabkit.evaluation.judge import judge_config
from tests.helpers.judges import perfect_answer, use_judge_double
from tests.helpers.trajectories import Trajectory
from tests.test_analysis_pooling import stored
from tests.test_eval_metrics_pooling import IN_CHAT, IN_MEMORY, NEVER, session, truthful


def test_each_note_shows_where_it_first_appeared_by_both_deciders(tmp_path):
    folder = stored(tmp_path, "memory-dr", session())
    fates = note_fates(load_trajectory(tmp_path, folder.name))
    by_id = {f.item_id: f for f in fates.lexical}
    assert (by_id[IN_CHAT].channel, by_id[IN_CHAT].first_seq) == ("chat", 2)
    assert (by_id[IN_MEMORY].channel, by_id[IN_MEMORY].first_seq) == ("memory", 1)
    assert by_id[NEVER].pooled is False and fates.judged == {}
    html = render_private_notes(fates)
    assert "never shared" in html and "not scored" in html and "event #2" in html
    assert first_appearances(fates) == {1: [f"{IN_MEMORY} (lexical)"], 2: [f"{IN_CHAT} (lexical)"]}

    use_judge_double({}, fallback=lambda prompt_id, payload: truthful(payload) if prompt_id == "pooling_conveys"
                     else perfect_answer(prompt_id, payload))
    score_results(tmp_path, metrics=["pooling"], judge=judge_config("judgedouble/scripted"))
    scored = note_fates(load_trajectory(tmp_path, folder.name))
    assert scored.judged[IN_CHAT]["channel"] == "chat"
    assert f"{IN_CHAT} (judge)" in first_appearances(scored)[2]

    explorer = TrajectoryExplorer(tmp_path)
    explorer.show(tmp_path, folder.name)
    assert "Private notes: where each first reached" in explorer.private.value
    explorer.step.value = 3  # session_start, memory_frozen, then D's message: the quirk's first appearance
    assert "first appearance of private note(s)" in explorer.view.value and IN_CHAT in explorer.view.value
    explorer.step.value = 4  # the AI's cell: first shares nothing
    assert "first appearance" not in explorer.view.value
    assert "Private notes" in explorer.static_html()


def test_a_single_agent_session_has_no_private_notes_and_says_so(tmp_path):
    t = Trajectory(("ai",))
    t.edit("ai", "H")
    folder = stored(tmp_path, "single", t)
    html = render_private_notes(note_fates(load_trajectory(tmp_path, folder.name)))
    assert "no private notes" in html
