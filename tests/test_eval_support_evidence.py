"""S_hyp's evidence links: each claim with the cell the judge named and the event that ran it.

Fail closed: a claim without a usable verdict, or whose verdict names a cell that is not
evidence (a failed cell, a cell that does not exist), is `supported=None`, never True.
"""

from helpers.trajectories import Trajectory

from colabkit.evaluation.metrics.process import successful_cells
from colabkit.evaluation.metrics.support import ClaimVerdict, claim_evidence, claim_item


def test_claims_link_to_the_cell_and_the_event_that_ran_it():
    t = Trajectory(("ai", "D"))
    t.start()
    t.run("ai", "s.idxmax()", "2300")
    t.run("ai", "s.max()", "41", status="error")
    request = t.request("D", "execute_code", "ai", code="len(s)")
    t.decide("ai", request, approve=True, output="7")  # an approved cell: the application event ran it
    claims = ["peak at 2300", "count 41", "seven rows", "no verdict", "not supported"]
    verdicts = {claim_item(0): ClaimVerdict(reason="cell 0", supported=True, cell=0),
                claim_item(1): ClaimVerdict(reason="cell 1", supported=True, cell=1),  # a failed cell
                claim_item(2): ClaimVerdict(reason="cell 2", supported=True, cell=2),
                claim_item(3): None,
                claim_item(4): ClaimVerdict(reason="nothing shows it", supported=False, cell=None)}
    evidence = claim_evidence(claims, verdicts, successful_cells(t.snapshot()), t.events)
    ran_cell_2 = next(e.event_id for e in t.events if e.cell_index == 2)
    assert [(e.supported, e.cell, e.event_ids) for e in evidence] == [
        (True, 0, ("s1-00001",)), (None, None, ()), (True, 2, (ran_cell_2,)), (None, None, ()), (False, None, ())]
    assert ran_cell_2 != next(e.event_id for e in t.events if e.status == "pending")
