"""S_hyp on constructed evidence, computed by hand."""

import pytest

from colabkit.evaluation.metrics.process import successful_cells
from colabkit.evaluation.metrics.support import (
    CLAIMS_PROMPT,
    SUPPORT_PROMPT,
    ClaimVerdict,
    claim_item,
    hypothesis_support,
    support_fields,
)
from tests.helpers.trajectories import Trajectory

CLAIMS = ["Axes are most frequent in the 36th century BCE.", "The value is a z-score of 2.1.",
          "Daggers decline at the same time."]


def evidence():
    t = Trajectory()
    t.run("ai", "s.idxmax()", "-3550")                       # cell 0
    t.run("ai", "s.max()", "", status="error")               # cell 1 (failed: not evidence)
    t.run("D", "s.loc[-3550]", "2.1")                        # cell 2
    return successful_cells(t.snapshot())  # the scorer's own filter (the code under test)


def v(supported, cell):
    return ClaimVerdict(reason="r", supported=supported, cell=cell)


def test_hand_computed_support():
    ok = evidence()
    verdicts = {claim_item(0): v(True, 0), claim_item(1): v(True, 2), claim_item(2): v(False, None)}
    result = hypothesis_support(True, CLAIMS, verdicts, ok)
    # 2 of 3 claims supported: S_hyp = 2/3 = 0.666667, not all supported
    assert result.s_hyp == pytest.approx(2 / 3)
    assert result.s_hyp_all is False
    assert (result.n_claims, result.n_supported) == (3, 2)
    verdicts[claim_item(2)] = v(True, 0)
    result = hypothesis_support(True, CLAIMS, verdicts, ok)
    assert result.s_hyp == 1.0 and result.s_hyp_all is True


def test_undelivered_and_unsupported_by_any_cell_are_zero():
    assert hypothesis_support(False, None, {}, evidence()).s_hyp == 0.0
    assert hypothesis_support(False, None, {}, evidence()).s_hyp_all is False
    result = hypothesis_support(True, None, {}, [])  # delivered, but no cell ran successfully
    assert (result.s_hyp, result.s_hyp_all) == (0.0, False)


def test_judge_failures_leave_support_missing_never_zero_or_one():
    ok = evidence()
    result = hypothesis_support(True, None, {}, ok)
    assert result.s_hyp is None and result.s_hyp_all is None and result.flags == ("s_hyp:claims_missing",)
    result = hypothesis_support(True, [], {}, ok)
    assert result.s_hyp is None and result.flags == ("s_hyp:no_claims_extracted",)
    result = hypothesis_support(True, CLAIMS, {claim_item(0): v(True, 0), claim_item(1): None}, ok)
    assert result.s_hyp is None and result.flags == ("s_hyp:judge_missing(2)",)
    # "supported by cell 1" names a failed cell: garbage, so missing
    verdicts = {claim_item(0): v(True, 1), claim_item(1): v(False, None), claim_item(2): v(False, None)}
    result = hypothesis_support(True, CLAIMS, verdicts, ok)
    assert result.s_hyp is None and result.flags == ("s_hyp:judge_named_no_successful_cell(1)",)


def test_fields_carry_only_successful_cells():
    assert [c.index for c in evidence()] == [0, 2]  # the failed cell 1 is not evidence
    fields = support_fields(CLAIMS[0], " ".join(CLAIMS), evidence())
    assert [c.split("]")[0] for c in fields["cells"]] == ["[cell 0 by ai", "[cell 2 by D"]
    assert CLAIMS_PROMPT.id == "hypothesis_claims" and SUPPORT_PROMPT.id == "claim_support"
