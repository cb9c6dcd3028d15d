"""`colabkit score` end to end on a session `colabkit run` made with the embedded model,
judged by the embedded model too. The session is the run's shared Default-DR one
(helpers.shared_sessions), whose trajectory tests/test_e2e_real_model.py checks; it is scored
in a copy of its own.

The 135M judge cannot judge; these tests check the scoring pipe holds against its actual
answers and reports them as they are: every metric column present, each value a number in
range or missing with a flag, the judge marked plumbing grade with a loud warning, the
sanity check's verdict consistent with its stored cases (whatever they are), and a rerun
that reuses everything.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from helpers.shared_sessions import stored_session

from colabkit.cli import main
from colabkit.evaluation import available_metrics, load_judgements, load_scores
from colabkit.evaluation.reliability import SanityCheck
from colabkit.evaluation.tables import SCORE_COLUMNS
from colabkit.llm import DEFAULT_MODEL

pytestmark = pytest.mark.slow
FRACTIONS = ("performance", "hms", "h_init_norm", "h_init_zero_rule", "a_profile", "c_wf", "s_hyp",
             "approval_rate", "rejection_rate")


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    out = tmp_path_factory.mktemp("scored")
    stored_session(tmp_path_factory, out, "default-dr", budget=3, rounds=2)
    return out, *_score(out)


def expected_verdict(kind: str, recall: float | None, hms: float | None) -> bool:
    """The sanity check's rule, written out here (not the production function as its own
    oracle): gold vs itself scores at least 0.9 on both, vs another task's gold at most 0.1,
    an empty hypothesis exactly 0; a missing score fails."""
    if recall is None or hms is None:
        return False
    if kind == "self":
        return recall >= 0.9 and hms >= 0.9
    if kind == "other":
        return recall <= 0.1 and hms <= 0.1
    assert kind == "empty"
    return recall == 0 and hms == 0


def _score(out: Path) -> tuple[str, str]:
    import contextlib
    import io

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        assert main(["score", str(out), "--sanity-tasks", "1"]) == 0
    return stdout.getvalue(), stderr.getvalue()


def test_score_runs_on_a_real_session_and_reports_the_embedded_judge_as_it_is(scored):
    out, stdout, stderr = scored
    assert "!!! JUDGE WARNING" in stderr and "judge_grade='plumbing'" in stderr
    [record] = [json.loads(p.read_text()) for p in out.glob("*/session.json")]
    scores = load_scores(out)
    assert len(scores) == 1 and list(scores.columns[:len(SCORE_COLUMNS)]) == list(SCORE_COLUMNS)
    row = scores.iloc[0]
    assert row["session_id"] == record["session_id"] and row["variant"] == "default-dr"
    assert (row["structure"], row["composition"]) == ("default", "dr")
    assert row["judge_model"] == DEFAULT_MODEL and row["judge_grade"] == "plumbing"
    assert bool(row["delivered"]) == bool(record["final_hypothesis"].strip())
    for column in FRACTIONS:  # in range, or missing with a flag saying why; out of range never
        value = row[column]
        assert pd.isna(value) or 0.0 <= value <= 1.0, (column, value)
        undefined = column in ("approval_rate", "rejection_rate") and row["n_gated"] == 0  # shares of no request
        assert not pd.isna(value) or row["flags"] or undefined, (column, "missing without a flag")
    for column in ("w_total", "w_human", "n_gated"):  # counts need no judge: never missing
        assert not math.isnan(row[column]) and row[column] >= 0

    [check_file] = (out / "judge-checks").glob("*.json")
    check = SanityCheck.model_validate_json(check_file.read_bytes())
    assert {c.kind for c in check.cases} == {"self", "other", "empty"}
    for case in check.cases:  # each verdict is what its own numbers say, nothing softened
        assert case.passed == expected_verdict(case.kind, case.recall_context, case.hms), case
    assert check.passed == all(c.passed for c in check.cases)
    assert bool(row["judge_reliable"]) == check.passed
    assert f"judge sanity check: {'reliable' if check.passed else 'UNRELIABLE'}" in stdout

    # Every verdict, of the sessions' metrics and of the sanity check: a raw answer where the
    # judge answered, and no label or score where it failed.
    judgements = load_judgements(out)
    assert (judgements["judge_model"] == DEFAULT_MODEL).all()
    verdicts = [*judgements.to_dict("records"), *(j.model_dump() for c in check.cases for j in c.judgements)]
    # at least the decompositions of the three sanity cases (the empty case's empty prediction
    # has no sub-hypotheses by rule: only its gold is asked)
    assert len(verdicts) >= 5
    for verdict in verdicts:
        if verdict["flag"] is None or pd.isna(verdict["flag"]):
            assert isinstance(verdict["raw"], str)
        else:
            assert pd.isna(verdict["label"]) and pd.isna(verdict["score"])


def test_a_rerun_reuses_every_complete_score_and_redoes_only_the_rest(scored):
    out, stdout, _ = scored
    n_scorers = len(available_metrics())
    first = counts(stdout)
    assert (first["sessions"], first["scored"], first["reused"]) == (1, n_scorers, 0)
    complete = {p: p.read_bytes() for p in out.glob("*/scores/*.json")
                if json.loads(p.read_bytes())["result"]["complete"]}
    again, _ = _score(out)
    # an embedded-model call can time out on a busy machine: those scores are incomplete and redone
    assert counts(again)["scored"] == first["incomplete"] == n_scorers - len(complete)
    assert counts(again)["reused"] == len(complete)
    assert {p: p.read_bytes() for p in complete} == complete


def counts(stdout: str) -> dict[str, int]:
    line = next(line for line in stdout.splitlines() if line.startswith("sessions:"))
    return {key.strip(): int(value) for key, value in (part.split(":") for part in line.split(","))}
