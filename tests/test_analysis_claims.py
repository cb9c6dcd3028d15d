"""The explorer's claim panel: the submitted hypothesis claim by claim, each linked to the cell
(and the event that ran it) S_hyp's judge found supports it, read from the stored score."""

from helpers.scored_results import SUPPORTED, UNSUPPORTED, scored_results
from helpers.stored import store_session
from helpers.stored_session import TASK_ID

from colabkit.analysis.trajectory import load_trajectory, render_claims, render_session


def test_claims_link_to_their_cells_and_an_unscored_session_says_so(tmp_path):
    scaffolded, single = scored_results(tmp_path / "demo")
    html = render_session(load_trajectory(scaffolded.parent, scaffolded.name))
    supported = html[html.index(SUPPORTED):]
    assert supported.index("✔ supported by cell 0") < supported.index(f"{scaffolded.name}-00008") \
        < supported.index("print(6 * 7)")
    assert "✘ unsupported" in html[html.index(UNSUPPORTED):html.index(SUPPORTED)]
    assert "<i>no claims</i>" in render_claims(load_trajectory(single.parent, single.name))  # no cell, no judge asked
    unscored = store_session(tmp_path / "other", TASK_ID, "Axes peak.")
    assert "no S_hyp score with claim links" in render_claims(load_trajectory(unscored.parent, unscored.name))
